import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import type { ModelPricing } from '../src/backends/types.ts';
import { BODY_CAP_BYTES, truncationMarker } from '../src/stats/bodies.ts';
import { CallLog, type CallLogOptions, type CallRecord } from '../src/stats/call-log.ts';
import { computeCost } from '../src/stats/cost.ts';
import { DAY_MS } from '../src/stats/period.ts';
import { REFUSED_BACKEND, RefusalReason, STATUS_CLIENT_CLOSED } from '../src/stats/record.ts';
import { storedCall } from '../src/store/calls-repo.ts';
import { usageFromAnthropic, usageFromOpenAI, type Usage } from '../src/wire/usage.ts';
import { waitFor } from './helpers/wait.ts';
import { tempDirs } from './helpers/temp-dirs.ts';

/** The call-log columns of a usage read by the request path. */
function usageColumns(u: Usage) {
  return {
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    cached_tokens: u.cached_tokens ?? 0,
    cache_write_tokens: u.cache_write_tokens ?? 0,
    upstream_cost_usd: u.cost ?? null,
  };
}

const NOW = Date.UTC(2026, 2, 15, 12, 0, 0); // 2026-03-15T12:00:00Z
const SONNET: ModelPricing = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 };

const tempStore = tempDirs('llmgw-stats-');

/** The timers never fire during a test: writes happen when the test says so. */
const QUIET: CallLogOptions = { flushMs: 60_000, retentionDays: 0, captureBodies: false, bodyRetentionDays: 14 };

function openLog(t: { after: (fn: () => void) => void }, opts: Partial<CallLogOptions> = {}, dir = tempStore()) {
  const log = CallLog.open(dir, { ...QUIET, ...opts });
  t.after(() => log.close());
  return { log, dir, file: join(dir, 'stats.db') };
}

let seq = 0;
function call(over: Partial<CallRecord> = {}): CallRecord {
  return {
    ts: NOW,
    request_id: `req-${++seq}`,
    duration_ms: 120,
    ttft_ms: 40,
    endpoint: '/v1/chat/completions',
    source: 'alice',
    user_id: 1,
    requested_model: 'fast',
    model: 'qwen3-8b',
    backend: 'gpu1',
    status: 200,
    reason: null,
    prompt_tokens: 100,
    completion_tokens: 20,
    cached_tokens: 0,
    cache_write_tokens: 0,
    reasoning: null,
    cost_usd: 0,
    upstream_cost_usd: null,
    ...over,
  };
}

/** What stats.db holds, through a connection of its own (what a crash would leave). */
function onDisk(file: string): { rows: number; ids: number } {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db.prepare('SELECT COUNT(*) AS rows, COUNT(DISTINCT request_id) AS ids FROM calls').get() as {
      rows: number;
      ids: number;
    };
  } finally {
    db.close();
  }
}

const rowsOnDisk = (file: string) => onDisk(file).rows;

const turn = () => new Promise((r) => setImmediate(r));

function fileState(file: string): string {
  return [file, `${file}-wal`]
    .map((f) => (existsSync(f) ? `${statSync(f).size}:${statSync(f).mtimeMs}` : 'absent'))
    .join('|');
}

describe('batching', () => {
  test('1,000 records touch no file until flush, which writes them in one transaction', async (t) => {
    const { log, file } = openLog(t);
    const before = fileState(file);
    for (let i = 0; i < 1000; i++) log.record(call({ ts: NOW + i }));

    assert.equal(fileState(file), before, 'record() must not write the database or its WAL');
    assert.equal(rowsOnDisk(file), 0);
    assert.equal(log.pending, 1000);
    assert.equal(log.flushes, 0);

    await log.flush();
    assert.equal(log.flushes, 1, 'one flush = one transaction');
    assert.equal(log.pending, 0);
    assert.equal(rowsOnDisk(file), 1000);
    assert.notEqual(fileState(file), before);

    await log.flush();
    assert.equal(log.flushes, 1, 'an empty queue does not open a transaction');
  });

  test('a long queue is written from the next turn on, a slice per turn, never inside record()', async (t) => {
    const { log, file } = openLog(t); // the timer never fires
    for (let i = 0; i < 5000; i++) log.record(call());
    assert.equal(log.flushes, 0, 'record() never writes');
    assert.equal(log.pending, 5000);
    await turn();
    assert.ok(log.pending > 0 && log.pending < 5000, `a slice per turn (${log.pending} left)`);
    for (let turns = 0; turns < 200 && log.pending > 0; turns++) await turn();
    assert.equal(log.pending, 0);
    assert.ok(log.flushes > 2, `${log.flushes} slices`);
    assert.deepEqual(onDisk(file), { rows: 5000, ids: 5000 });
  });

  test('quota counters stay exact while the queue is written in slices', async (t) => {
    const { log } = openLog(t);
    const since = Date.UTC(2026, 0, 1);
    for (let i = 0; i < 5000; i++) log.record(call({ user_id: 7, ts: since + 1000 + i, cost_usd: 0.001 }));
    const expect = () => {
      assert.equal(log.quotas.requestsSince(7, since), 5000);
      assert.ok(Math.abs(log.quotas.costSince(7, since) - 5) < 1e-6, String(log.quotas.costSince(7, since)));
    };
    expect();
    while (log.pending > 0) {
      await turn();
      expect();
    }
  });

  test('the timer flushes in the background', async (t) => {
    const { log, file } = openLog(t, { flushMs: 20 });
    log.record(call());
    await waitFor(() => rowsOnDisk(file) === 1, 'timer flush');
    assert.equal(log.pending, 0);
  });

  test('close() writes what is queued; the rows are there after reopening', (t) => {
    const dir = tempStore();
    const first = CallLog.open(dir, QUIET);
    first.record(call({ request_id: 'last-words' }));
    first.close();
    first.record(call({ request_id: 'after-close' })); // dropped, must not throw
    assert.equal(first.dropped, 1);
    const { log } = openLog(t, {}, dir);
    assert.deepEqual(
      log.recent().map((r) => r.request_id),
      ['last-words'],
    );
  });

  test('a failed flush keeps the queue; the next one writes it', async (t) => {
    const { log, file } = openLog(t, { onError: () => {} });
    log.record(call({ request_id: 'survivor' }));
    const other = new Database(file);
    t.after(() => other.close());
    other.exec('ALTER TABLE calls RENAME TO calls_away'); // the database "fails"
    await assert.rejects(log.flush());
    assert.equal(log.pending, 1, 'nothing is lost when the transaction fails');
    assert.equal(log.flushes, 0);
    other.exec('ALTER TABLE calls_away RENAME TO calls');
    await log.flush();
    assert.equal(onDisk(file).rows, 1);
    assert.deepEqual(
      log.recent().map((r) => r.request_id),
      ['survivor'],
    );
  });

  test('a malformed record cannot poison the batch', async (t) => {
    const { log, file } = openLog(t);
    const bad = {
      ...call(),
      request_id: undefined,
      endpoint: undefined,
      duration_ms: Number.NaN,
      user_id: undefined,
    } as unknown as CallRecord;
    log.record(bad);
    log.record(call({ request_id: 'fine' }));
    await log.flush();
    assert.equal(rowsOnDisk(file), 2);
    assert.equal(log.recent().length, 2);
  });

  test('a malformed record is normalised, never thrown on', () => {
    const bad = {
      ts: 1.6,
      request_id: undefined,
      duration_ms: -5,
      ttft_ms: Number.NaN,
      user_id: 2.5,
      status: '200',
      reasoning: 3,
    };
    const stored = storedCall(bad as unknown as CallRecord, 9);
    assert.equal(stored.id, 9);
    assert.equal(stored.ts, 2);
    assert.equal(stored.request_id, '');
    assert.equal(stored.duration_ms, 0);
    assert.equal(stored.ttft_ms, 0);
    assert.equal(stored.user_id, null);
    assert.equal(stored.reasoning, '3');
    assert.equal(stored.count, 1);
  });
});

describe('reads never wait for a write', () => {
  test('recent() shows queued rows before any flush, under the ids they are stored with', async (t) => {
    const { log, file } = openLog(t);
    for (const id of ['a', 'b', 'c']) log.record(call({ request_id: id }));
    assert.equal(rowsOnDisk(file), 0);
    const queued = log.recent();
    assert.deepEqual(
      queued.map((r) => r.request_id),
      ['c', 'b', 'a'],
      'newest first (same ts: the later row first)',
    );
    await log.flush();
    assert.deepEqual(log.recent(), queued, 'the same rows, ids and all, once on disk');
  });

  test('queued and stored rows merge under the same filters and paging', async (t) => {
    const { log } = openLog(t);
    log.record(call({ ts: NOW - 3000, source: 'alice', backend: 'gpu1', model: 'qwen3-8b', requested_model: 'fast' }));
    log.record(
      call({
        ts: NOW,
        source: 'n8n',
        user_id: null,
        backend: 'openrouter',
        model: 'openai/gpt-5',
        requested_model: 'smart',
      }),
    );
    await log.flush(); // two on disk...
    log.record(
      call({
        ts: NOW - 2000,
        source: 'bob',
        user_id: 2,
        backend: 'gpu2',
        model: 'llama-3.1-8b',
        requested_model: 'llama-3.1-8b',
      }),
    );
    log.record(
      call({
        ts: NOW - 1000,
        source: 'bob',
        user_id: 2,
        backend: 'gpu1',
        model: 'qwen3-8b',
        requested_model: 'qwen3-8b',
        status: 500,
      }),
    );
    assert.equal(log.pending, 2, '...two queued');

    const ts = (rows: { ts: number }[]) => rows.map((r) => r.ts - NOW);
    assert.deepEqual(ts(log.recent()), [0, -1000, -2000, -3000], 'newest first');
    assert.deepEqual(ts(log.recent({ source: 'bob' })), [-1000, -2000]);
    assert.deepEqual(ts(log.recent({ backend: 'gpu1' })), [-1000, -3000]);
    assert.deepEqual(ts(log.recent({ model: 'qwen3-8b' })), [-1000, -3000], 'served model');
    assert.deepEqual(ts(log.recent({ model: 'smart' })), [0], 'requested alias');
    assert.deepEqual(ts(log.recent({ status: 500 })), [-1000]);
    assert.deepEqual(ts(log.recent({ user_id: 2 })), [-1000, -2000]);
    assert.deepEqual(
      ts(log.recent({ since: NOW - 2000, until: NOW })),
      [-1000, -2000],
      'since inclusive, until exclusive',
    );
    assert.deepEqual(ts(log.recent({ source: 'bob', backend: 'gpu2' })), [-2000]);
    const page1 = log.recent({ limit: 2 });
    assert.deepEqual(ts(page1), [0, -1000]);
    // ids 1, 2 on disk, 3, 4 queued: below the cursor (id 4) are one queued row and both stored ones
    assert.deepEqual(
      page1.map((r) => r.id),
      [2, 4],
    );
    assert.deepEqual(ts(log.recent({ limit: 3, beforeId: page1[1].id })), [0, -2000, -3000]);
    assert.deepEqual(log.recent({ source: 'nobody' }), []);
  });

  test('while stats.db is locked a write fails at once and is retried; reads and quota counts go on', async (t) => {
    const errors: unknown[] = [];
    const { log, file } = openLog(t, { onError: (err) => errors.push(err) });
    log.record(call({ request_id: 'stored', cost_usd: 0.5 }));
    await log.flush();
    const other = new Database(file);
    t.after(() => other.close());
    other.exec('BEGIN IMMEDIATE'); // another process holds the write lock
    log.record(call({ request_id: 'queued', cost_usd: 0.25 }));

    await assert.rejects(
      log.flush(),
      (err: { code?: string }) => err.code === 'SQLITE_BUSY',
      'no 5 s wait for the lock',
    );
    assert.equal(log.pending, 1);
    assert.deepEqual(
      log.recent().map((r) => r.request_id),
      ['queued', 'stored'],
      'the list reads disk and queue',
    );
    assert.deepEqual(
      log.aggregate('backend').map((r) => [r.key, r.calls]),
      [['gpu1', 1]],
      'aggregates read the disk',
    );
    assert.equal(log.quotas.requestsSince(1, Date.UTC(2026, 2, 15)), 2);
    assert.equal(log.quotas.costSince(1, Date.UTC(2026, 2, 1)), 0.75);

    other.exec('COMMIT');
    await log.flush();
    assert.deepEqual(onDisk(file), { rows: 2, ids: 2 });
    assert.deepEqual(errors, [], 'flush() throws; only background writes report');
  });
});

describe('rows', () => {
  test('non-streamed and streamed calls with tokens, cache split and cost', (t) => {
    const { log } = openLog(t);
    const plain = usageColumns(
      usageFromOpenAI({ usage: { prompt_tokens: 1000, completion_tokens: 200, cost: 0.0031 } })!,
    );
    log.record(
      call({
        request_id: 'plain',
        ttft_ms: null,
        backend: 'openrouter',
        model: 'anthropic/claude-sonnet-4.6',
        ...plain,
        cost_usd: computeCost(plain, SONNET, { local: false, shape: 'openai' }),
      }),
    );
    const cached = usageColumns(
      usageFromAnthropic({
        usage: {
          input_tokens: 50,
          cache_read_input_tokens: 30_000,
          cache_creation_input_tokens: 1_000,
          output_tokens: 400,
        },
      })!,
    );
    log.record(
      call({
        request_id: 'stream',
        ts: NOW + 1,
        endpoint: '/v1/messages',
        ttft_ms: 850,
        duration_ms: 4200,
        backend: 'anthropic',
        model: 'claude-sonnet-4-6',
        reasoning: 'thinking:on',
        ...cached,
        cost_usd: computeCost(cached, SONNET, { local: false, shape: 'openai' }),
      }),
    );
    const [stream, plainRow] = log.recent();
    assert.equal(plainRow.request_id, 'plain');
    assert.equal(plainRow.ttft_ms, null);
    assert.equal(plainRow.prompt_tokens, 1000);
    assert.equal(plainRow.upstream_cost_usd, 0.0031);
    assert.ok(Math.abs(plainRow.cost_usd - (1000 * 3 + 200 * 15) / 1e6) < 1e-12);

    assert.equal(stream.request_id, 'stream');
    assert.equal(stream.endpoint, '/v1/messages');
    assert.equal(stream.ttft_ms, 850);
    assert.equal(stream.duration_ms, 4200);
    assert.equal(stream.reasoning, 'thinking:on');
    assert.deepEqual(
      [stream.prompt_tokens, stream.cached_tokens, stream.cache_write_tokens, stream.completion_tokens],
      [31_050, 30_000, 1_000, 400],
    );
    assert.ok(Math.abs(stream.cost_usd - (50 * 3 + 30_000 * 0.3 + 1_000 * 3.75 + 400 * 15) / 1e6) < 1e-12);
    assert.equal(stream.has_bodies, false);
  });

  test('refusals and broken streams are rows too', (t) => {
    let now = NOW;
    const { log } = openLog(t, { now: () => now });
    const refused = (reason: string, status: number, user_id: number | null = 1) =>
      call({
        backend: REFUSED_BACKEND,
        model: null,
        status,
        reason,
        user_id,
        prompt_tokens: 0,
        completion_tokens: 0,
        ttft_ms: null,
      });
    log.record(refused('invalid_api_key', 401, null));
    log.record(refused(RefusalReason.quotaDay, 429));
    log.record(refused(RefusalReason.unknownModel, 404));
    log.record(refused(RefusalReason.parkTimeout, 503));
    log.record(refused(RefusalReason.noBackend, 503));
    log.record(call({ status: STATUS_CLIENT_CLOSED, reason: 'client closed', completion_tokens: 37 }));
    log.record(call({ status: 502, reason: 'upstream dropped', completion_tokens: 12 }));

    assert.equal(log.recent({ status: 401 }).length, 0, 'an unauthenticated 401 waits for its minute to end');
    now += 60_000;
    const refusals = log.recent({ backend: REFUSED_BACKEND });
    assert.deepEqual(refusals.map((r) => r.reason).sort(), [
      'invalid_api_key',
      'no_backend',
      'park_timeout',
      'quota_day',
      'unknown_model',
    ]);
    assert.equal(refusals.find((r) => r.reason === 'invalid_api_key')!.user_id, null);
    const aborted = log.recent({ status: 499 });
    assert.equal(aborted.length, 1);
    assert.equal(aborted[0].completion_tokens, 37, 'what was delivered is kept');
    assert.equal(log.recent({ status: 502 })[0].completion_tokens, 12);
  });
});

describe('aggregate (what is on disk)', () => {
  test('totals, cache hit share and nearest-rank p50/p95 per backend', async (t) => {
    const { log } = openLog(t);
    const durations = Array.from({ length: 100 }, (_, i) => i + 1).sort(() => Math.random() - 0.5);
    for (const d of durations) {
      log.record(
        call({ backend: 'gpu1', duration_ms: d, prompt_tokens: 1000, cached_tokens: 250, completion_tokens: 10 }),
      );
    }
    for (let i = 1; i <= 20; i++) {
      log.record(
        call({
          backend: 'openrouter',
          duration_ms: i * 10,
          cost_usd: 0.01,
          upstream_cost_usd: i <= 10 ? 0.02 : null,
          status: i === 1 ? 502 : 200,
        }),
      );
    }
    assert.deepEqual(log.aggregate('backend'), [], 'nothing on disk yet');
    await log.flush();
    const rows = log.aggregate('backend');
    assert.deepEqual(
      rows.map((r) => r.key),
      ['gpu1', 'openrouter'],
      'most calls first',
    );
    const [gpu, cloud] = rows;
    assert.equal(gpu.calls, 100);
    assert.equal(gpu.prompt_tokens, 100_000);
    assert.equal(gpu.cached_tokens, 25_000);
    assert.equal(gpu.completion_tokens, 1000);
    assert.equal(gpu.cache_hit_share, 0.25);
    assert.equal(gpu.p50_ms, 50);
    assert.equal(gpu.p95_ms, 95);
    assert.equal(gpu.errors, 0);
    assert.equal(gpu.cost_usd, 0);

    assert.equal(cloud.calls, 20);
    assert.equal(cloud.p50_ms, 100, '10th of 20');
    assert.equal(cloud.p95_ms, 190, '19th of 20');
    assert.equal(cloud.errors, 1);
    assert.ok(Math.abs(cloud.cost_usd - (10 * 0.02 + 10 * 0.01)) < 1e-9, 'upstream cost where reported');
  });

  test('per model, source and UTC day, within a time range', async (t) => {
    const { log } = openLog(t);
    const day1 = Date.UTC(2026, 2, 14, 23, 59, 59);
    const day2 = Date.UTC(2026, 2, 15, 0, 0, 0);
    log.record(call({ ts: day1, source: 'alice', model: 'a' }));
    log.record(call({ ts: day2, source: 'alice', model: 'b' }));
    log.record(call({ ts: day2 + 1, source: 'bob', model: 'b', duration_ms: 7 }));
    log.record(call({ ts: day2 + 2, source: 'bob', model: null, backend: REFUSED_BACKEND, status: 404 }));
    await log.flush();

    assert.deepEqual(
      log.aggregate('day').map((r) => [r.key, r.calls]),
      [
        ['2026-03-14', 1],
        ['2026-03-15', 3],
      ],
    );
    assert.deepEqual(
      log.aggregate('model').map((r) => [r.key, r.calls]),
      [
        ['b', 2],
        ['(none)', 1],
        ['a', 1],
      ],
    );
    assert.deepEqual(
      log.aggregate('source', { since: day2 }).map((r) => [r.key, r.calls]),
      [
        ['bob', 2],
        ['alice', 1],
      ],
    );
    assert.deepEqual(
      log.aggregate('source', { until: day2 }).map((r) => [r.key, r.calls]),
      [['alice', 1]],
    );
    const single = log.aggregate('model', { since: day2 + 1, until: day2 + 2 });
    assert.deepEqual([single[0].p50_ms, single[0].p95_ms], [7, 7]);
    assert.deepEqual(log.aggregate('backend', { since: NOW + DAY_MS }), []);
  });
});

describe('bodies', () => {
  test('compressed on the thread pool, not in record(): the row lands with gzip bodies', async (t) => {
    const { log, file } = openLog(t, { captureBodies: true });
    const request = '{"messages":[{"role":"user","content":"' + 'hello '.repeat(500) + '"}]}';
    log.record(call({ request_id: 'captured', request_body: request, response_body: Buffer.from('data: [DONE]\n\n') }));
    assert.equal(log.compressing, 1, 'record() returned with the gzip still under way');
    assert.equal(log.recent()[0].has_bodies, true, 'listed with its bodies meanwhile');
    await log.flush();
    assert.equal(log.compressing, 0);

    const db = new Database(file, { readonly: true });
    t.after(() => db.close());
    const stored = db.prepare('SELECT request, response, request_bytes FROM call_bodies').get() as {
      request: Buffer;
      response: Buffer;
      request_bytes: number;
    };
    assert.deepEqual([...stored.request.subarray(0, 2)], [0x1f, 0x8b], 'gzip');
    assert.equal(gunzipSync(stored.request).toString(), request);
    assert.equal(gunzipSync(stored.response).toString(), 'data: [DONE]\n\n');
    assert.equal(stored.request_bytes, request.length);
    assert.ok(stored.request.length < request.length / 10, `stored compressed (${stored.request.length} bytes)`);
  });

  test('captured bodies round-trip; a big one is capped with a marker', async (t) => {
    const { log } = openLog(t, { captureBodies: true });
    const big = '{"messages":[' + 'x'.repeat(300 * 1024) + ']}';
    const response = Buffer.from('data: {"choices":[]}\n\ndata: [DONE]\n\n');
    log.record(call({ request_id: 'big', request_body: big, response_body: response }));
    await log.flush();
    const [row] = log.recent();
    assert.equal(row.has_bodies, true);

    const got = log.bodies(row.id)!;
    assert.deepEqual(got.response, response);
    assert.equal(got.response_bytes, response.length);
    assert.equal(got.request_bytes, Buffer.byteLength(big));
    assert.equal(got.request!.length, BODY_CAP_BYTES, 'kept exactly the cap');
    const text = got.request!.toString('utf8');
    assert.ok(text.startsWith('{"messages":[xxx'));
    assert.ok(text.endsWith(truncationMarker(Buffer.byteLength(big))));
  });

  test('bodies of a queued row are found once compressed', async (t) => {
    const { log, file } = openLog(t, { captureBodies: true });
    log.record(call({ request_body: 'question' }));
    while (log.compressing > 0) await turn();
    assert.equal(rowsOnDisk(file), 0);
    const got = log.bodies(log.recent()[0].id)!;
    assert.equal(got.request!.toString(), 'question');
    assert.equal(got.response, null);
  });

  test('close() writes rows whose bodies were still compressing, compressing them itself', (t) => {
    const dir = tempStore();
    const first = CallLog.open(dir, { ...QUIET, captureBodies: true });
    for (let i = 0; i < 50; i++) first.record(call({ request_id: `r${i}`, response_body: `answer ${i}` }));
    assert.ok(first.compressing > 0);
    first.close();
    const { log } = openLog(t, {}, dir);
    const rows = log.recent({ limit: 100 });
    assert.equal(rows.length, 50);
    for (const row of rows) assert.equal(log.bodies(row.id)!.response!.toString(), `answer ${row.request_id.slice(1)}`);
  });

  test('without capture no bodies are stored', async (t) => {
    const { log } = openLog(t, { captureBodies: false });
    log.record(call({ request_body: 'secret prompt', response_body: 'answer' }));
    assert.equal(log.compressing, 0);
    await log.flush();
    const [row] = log.recent();
    assert.equal(row.has_bodies, false);
    assert.equal(log.bodies(row.id), null);
  });
});

describe('retention', () => {
  test('prune() drops old rows, and bodies sooner than their rows', async (t) => {
    let now = NOW;
    const { log } = openLog(t, { captureBodies: true, retentionDays: 30, bodyRetentionDays: 7, now: () => now });
    for (const age of [40, 10, 1])
      log.record(call({ ts: NOW - age * DAY_MS, request_id: `age-${age}`, request_body: 'q', response_body: 'a' }));
    await log.flush();

    assert.deepEqual(await log.prune(), { rows: 1, bodies: 2 });
    const rows = log.recent();
    assert.deepEqual(
      rows.map((r) => r.request_id),
      ['age-1', 'age-10'],
    );
    assert.equal(log.bodies(rows.find((r) => r.request_id === 'age-10')!.id), null);
    assert.equal(log.bodies(rows.find((r) => r.request_id === 'age-1')!.id)!.request!.toString(), 'q');
    assert.deepEqual(await log.prune(), { rows: 0, bodies: 0 }, 'idempotent');

    now = NOW + 30 * DAY_MS; // age-1 is now 31 days old: row and body go together
    assert.deepEqual(await log.prune(), { rows: 2, bodies: 1 });
    assert.deepEqual(log.recent(), []);
  });

  test('a prune runs in slices, one short transaction per event-loop turn', async (t) => {
    const { log, file } = openLog(t, { retentionDays: 30, now: () => NOW });
    for (let i = 0; i < 1_200; i++) log.record(call({ ts: NOW - 40 * DAY_MS }));
    log.record(call({ request_id: 'young' }));
    await log.flush();
    const pruning = log.prune();
    assert.equal(rowsOnDisk(file), 701, 'the first slice (500 rows) before prune() even returned');
    await turn();
    assert.equal(rowsOnDisk(file), 201, 'the next one a turn later');
    assert.deepEqual(await pruning, { rows: 1_200, bodies: 0 });
    assert.deepEqual(
      log.recent().map((r) => r.request_id),
      ['young'],
    );
  });

  test('retention 0 keeps rows forever', async (t) => {
    const { log } = openLog(t, { retentionDays: 0, captureBodies: true, bodyRetentionDays: 14 });
    log.record(call({ ts: NOW - 3650 * DAY_MS, request_body: 'old' }));
    await log.flush();
    assert.deepEqual(await log.prune(NOW), { rows: 0, bodies: 1 });
    assert.equal(log.recent().length, 1);
  });

  test('quota counters outlive pruned rows', async (t) => {
    const { log } = openLog(t, { retentionDays: 1 });
    const monthStart = Date.UTC(2026, 2, 1);
    log.record(call({ ts: monthStart + DAY_MS, cost_usd: 0.5 }));
    await log.flush();
    assert.equal((await log.prune(NOW)).rows, 1);
    assert.equal(log.quotas.costSince(1, monthStart), 0.5);
    assert.equal(log.quotas.requestsSince(1, monthStart), 1);
  });
});

describe('quota counters', () => {
  test('count queued and written calls, per user, and survive reopening', async (t) => {
    const dir = tempStore();
    const dayStart = Date.UTC(2026, 2, 15);
    const first = CallLog.open(dir, QUIET);
    first.record(call({ ts: dayStart - 1, cost_usd: 100 })); // yesterday
    first.record(call({ ts: dayStart, cost_usd: 0.25 }));
    await first.flush();
    first.record(call({ ts: NOW, cost_usd: 0.5, upstream_cost_usd: 0.75 }));
    first.record(call({ ts: NOW, user_id: 2, cost_usd: 9 }));
    first.record(call({ ts: NOW, backend: REFUSED_BACKEND, status: 429, reason: RefusalReason.quotaDay }));
    first.record(call({ ts: NOW, backend: REFUSED_BACKEND, status: 503, reason: RefusalReason.parkTimeout }));

    assert.equal(first.pending, 4);
    assert.equal(first.quotas.requestsSince(1, dayStart), 3, 'written + queued, minus the quota refusal');
    assert.equal(first.quotas.costSince(1, dayStart), 1);
    assert.equal(first.quotas.requestsSince(2, dayStart), 1);
    first.close();

    const { log } = openLog(t, {}, dir);
    assert.equal(log.quotas.requestsSince(1, dayStart), 3);
    assert.equal(log.quotas.costSince(1, dayStart), 1);
    assert.equal(log.quotas.requestsSince(1, dayStart - DAY_MS), 4);
    assert.equal(log.quotas.requestsSince(3, dayStart), 0);
  });

  test('are seeded from quota_usage when the log opens (not from the call rows)', (t) => {
    const dir = tempStore();
    CallLog.open(dir, QUIET).close(); // creates stats.db
    const day = Date.UTC(2026, 2, 15) / DAY_MS;
    const db = new Database(join(dir, 'stats.db'));
    const insert = db.prepare('INSERT INTO quota_usage (user_id, day, requests, cost_usd) VALUES (?, ?, ?, ?)');
    insert.run(4, day, 17, 1.5);
    insert.run(4, day - 20, 3, 0.25); // February 23
    insert.run(5, day, 2, 0);
    db.close();

    const { log } = openLog(t, {}, dir);
    assert.equal(log.quotas.requestsSince(4, Date.UTC(2026, 2, 15)), 17);
    assert.equal(log.quotas.costSince(4, Date.UTC(2026, 2, 1)), 1.5, 'February is not March');
    assert.equal(log.quotas.costSince(4, Date.UTC(2026, 1, 1)), 1.75);
    assert.equal(log.quotas.requestsSince(5, Date.UTC(2026, 2, 15)), 2);
    assert.deepEqual(log.recent(), [], 'no call rows at all');
  });

  test('roll over at UTC midnight and at the month, by the injected clock', async (t) => {
    let now = Date.UTC(2026, 11, 31, 23, 59, 59); // the last second of the year
    const { log } = openLog(t, { now: () => now });
    const user = { id: 3, quota_req_day: 2, quota_cost_month: 0.8 };
    const admitted = () => {
      const a = log.quotas.admit(user, now);
      if (a.ok) {
        log.record(call({ ts: now, user_id: 3, cost_usd: 0.3 }));
        a.done();
      }
      return a;
    };
    assert.equal(admitted().ok, true);
    assert.equal(admitted().ok, true);
    const refused = admitted();
    assert.ok(!refused.ok);
    assert.equal(refused.kind, 'day');
    assert.equal(refused.retryAfterSec, 1);

    now += 1_000; // 2027-01-01T00:00:00Z: a new day and a new month
    assert.equal(log.quotas.requestsSince(3, Date.UTC(2027, 0, 1)), 0);
    assert.equal(admitted().ok, true);
    assert.equal(admitted().ok, true);
    assert.equal(log.quotas.costSince(3, Date.UTC(2027, 0, 1)), 0.6);
    now += DAY_MS; // January 2nd: the day limit is free again, the month's spend carries on
    assert.equal(admitted().ok, true);
    const broke = admitted();
    assert.ok(!broke.ok);
    assert.equal(broke.kind, 'month', 'January spent $0.90 of $0.80');

    now += 101 * DAY_MS; // past the 100 days of counters kept: the prune forgets them, in memory and on disk
    await log.flush();
    await log.prune();
    assert.equal(log.quotas.requestsSince(3, Date.UTC(2026, 11, 1)), 0);
  });
});
