import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import type { ModelPricing } from '../src/backends/types.ts';
import { BODY_CAP_BYTES, truncationMarker } from '../src/stats/bodies.ts';
import type { Worker } from 'node:worker_threads';
import { CallLog, type CallLogOptions, type CallLogSeams, type CallRecord } from '../src/stats/call-log.ts';
import { computeCost } from '../src/stats/cost.ts';
import { usageFromAnthropic, usageFromOpenAI, type Usage } from '../src/upstream/usage.ts';

/** The call-log columns of a usage read by the request path. */
function usageColumns(u: Usage) {
  return {
    prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, cached_tokens: u.cached_tokens ?? 0,
    cache_write_tokens: u.cache_write_tokens ?? 0, upstream_cost_usd: u.cost ?? null,
  };
}
import { DAY_MS } from '../src/stats/period.ts';
import { REFUSED_BACKEND, RefusalReason, STATUS_CLIENT_CLOSED, STATUS_UPSTREAM_DROPPED } from '../src/stats/record.ts';
import { waitFor } from './helpers/wait.ts';

const NOW = Date.UTC(2026, 2, 15, 12, 0, 0); // 2026-03-15T12:00:00Z
const SONNET: ModelPricing = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 };

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempStore(): string {
  const dir = mkdtempSync(join(tmpdir(), 'llmgw-stats-'));
  dirs.push(dir);
  return dir;
}

const QUIET: CallLogOptions = { flushMs: 60_000, retentionDays: 0, captureBodies: false, bodyRetentionDays: 14 };

function openLog(
  t: { after: (fn: () => void) => void },
  opts: Partial<CallLogOptions> = {},
  dir = tempStore(),
  seams: CallLogSeams = {},
) {
  const log = CallLog.open(dir, { ...QUIET, ...opts }, seams);
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

/** Rows on disk, seen through a second connection (what a crash would leave). */
function rowsOnDisk(file: string): number {
  return onDisk(file).rows;
}

/** Rows and distinct request ids on disk (equal when no row was written twice). */
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

/** A log whose writer thread is up. */
async function openWithWriter(
  t: { after: (fn: () => void) => void },
  opts: Partial<CallLogOptions> = {},
  seams: CallLogSeams = {},
) {
  const opened = openLog(t, opts, tempStore(), seams);
  opened.log.startWriter();
  await waitFor(() => opened.log.writerReady, 'writer thread ready', 10_000);
  return opened;
}

const turn = () => new Promise((r) => setImmediate(r));

/** A writer module that does not exist: the writer thread cannot start. */
const NO_WRITER = new URL('./no-such-writer.ts', import.meta.url);

function fileState(file: string): string {
  return [file, `${file}-wal`]
    .map((f) => (existsSync(f) ? `${statSync(f).size}:${statSync(f).mtimeMs}` : 'absent'))
    .join('|');
}

describe('batching', () => {
  test('1,000 records touch no file until flush, which writes them in one transaction', (t) => {
    const { log, file } = openLog(t);
    const before = fileState(file);
    for (let i = 0; i < 1000; i++) log.record(call({ ts: NOW + i }));

    assert.equal(fileState(file), before, 'record() must not write the database or its WAL');
    assert.equal(rowsOnDisk(file), 0);
    assert.equal(log.pending, 1000);
    assert.equal(log.flushes, 0);

    log.flush();
    assert.equal(log.flushes, 1, 'one flush = one transaction');
    assert.equal(log.pending, 0);
    assert.equal(rowsOnDisk(file), 1000);
    assert.notEqual(fileState(file), before);

    log.flush();
    assert.equal(log.flushes, 1, 'an empty queue does not open a transaction');
  });

  test('without a writer thread, a long queue is written from the next turn on, in short slices, never inside record()', async (t) => {
    const errors: string[] = [];
    const { log } = openLog(
      t,
      { flushMs: 20, onError: (err) => errors.push(String(err)) },
      tempStore(),
      { writerModule: NO_WRITER },
    );
    log.record(call());
    await waitFor(() => errors.length > 0 && log.pending === 0, 'fallback to main-thread writes', 10_000);
    const before = log.mainThreadWrites;
    for (let i = 0; i < 5000; i++) log.record(call());
    assert.equal(log.mainThreadWrites, before, 'record() never writes');
    await turn();
    assert.ok(log.pending > 0 && log.pending < 5000, `a slice per turn (${log.pending} left)`);
    for (let turns = 0; turns < 20 && log.pending > 0; turns++) await turn();
    assert.equal(log.pending, 0);
    assert.ok(log.mainThreadWrites - before > 2, `${log.mainThreadWrites - before} slices`);
  });

  test('quota counters stay exact while the queue is written in slices', async (t) => {
    const { log } = openLog(t, { onError: () => {} }, tempStore(), { writerModule: NO_WRITER });
    const since = Date.UTC(2026, 0, 1);
    for (let i = 0; i < 5000; i++) log.record(call({ user_id: 7, ts: since + 1000 + i, cost_usd: 0.001 }));
    const expect = () => {
      assert.equal(log.requestsSince(7, since), 5000);
      assert.ok(Math.abs(log.costSince(7, since) - 5) < 1e-6, String(log.costSince(7, since)));
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
    const start = Date.now();
    while (rowsOnDisk(file) === 0) {
      assert.ok(Date.now() - start < 2000, 'timer flush did not happen');
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(log.pending, 0);
  });

  test('close() flushes what is queued; the rows are there after reopening', (t) => {
    const dir = tempStore();
    const first = CallLog.open(dir, QUIET);
    first.record(call({ request_id: 'last-words' }));
    first.close();
    first.record(call({ request_id: 'after-close' })); // dropped, must not throw
    assert.equal(first.dropped, 1);
    const { log } = openLog(t, {}, dir);
    assert.deepEqual(log.recent().map((r) => r.request_id), ['last-words']);
  });

  test('a failed flush keeps the queue; the next one writes it', (t) => {
    const errors: string[] = [];
    const { log, file } = openLog(t, { onError: (err, during) => errors.push(`${during}: ${String(err)}`) });
    log.record(call({ request_id: 'survivor' }));
    const other = new Database(file);
    t.after(() => other.close());
    other.exec('ALTER TABLE calls RENAME TO calls_away'); // the database "fails"
    assert.throws(() => log.flush());
    assert.equal(log.pending, 1, 'nothing is lost when the transaction fails');
    assert.equal(log.flushes, 0);
    other.exec('ALTER TABLE calls_away RENAME TO calls');
    log.flush();
    assert.deepEqual(log.recent().map((r) => r.request_id), ['survivor']);
  });

  test('a malformed record cannot poison the batch', (t) => {
    const { log } = openLog(t);
    const bad = { ...call(), request_id: undefined, endpoint: undefined, duration_ms: Number.NaN, user_id: undefined } as unknown as CallRecord;
    log.record(bad);
    log.record(call({ request_id: 'fine' }));
    log.flush();
    assert.equal(log.recent().length, 2);
  });
});

describe('writer thread', () => {
  test('background writes happen in the writer thread: rows reach disk, this thread writes nothing', async (t) => {
    const { log, file } = await openWithWriter(t, { flushMs: 20 });
    const before = fileState(file);
    for (let i = 0; i < 6000; i++) log.record(call({ ts: NOW + i }));
    assert.equal(fileState(file), before, 'record() only queues');
    assert.equal(log.pending, 6000);
    await waitFor(() => log.pending === 0, 'background write', 10_000);
    assert.equal(log.mainThreadWrites, 0, 'no INSERT on the main connection');
    assert.deepEqual(onDisk(file), { rows: 6000, ids: 6000 });
    assert.ok(log.flushes >= 2, `the writer thread committed ${log.flushes} batches (at most 5,000 rows each)`);
  });

  test('a long queue goes to the writer thread without waiting for the timer, never inside record()', async (t) => {
    const { log, file } = await openWithWriter(t); // the timer never fires
    for (let i = 0; i < 5000; i++) log.record(call());
    assert.equal(log.pending, 5000);
    assert.equal(log.flushes, 0);
    await waitFor(() => log.pending === 0, 'eager background write', 10_000);
    assert.equal(rowsOnDisk(file), 5000);
    assert.equal(log.flushes, 1);
    assert.equal(log.mainThreadWrites, 0);
  });

  test('quota counters stay exact while batches are in flight, on every turn and between commits', async (t) => {
    const { log } = await openWithWriter(t, { flushMs: 20, captureBodies: true });
    const dayStart = Date.UTC(2026, 2, 15);
    const body = 'x'.repeat(2_000); // gzip in the writer makes each batch take a while
    const total = 12_000;
    for (let i = 0; i < total; i++) {
      log.record(call({ user_id: 7, ts: dayStart + 1000 + i, cost_usd: 0.001, request_body: body }));
    }
    const flushesBefore = log.flushes;
    let since = dayStart + 1; // a new `since` each time: a fresh read of the disk, never the cache
    const expectExact = () => {
      assert.equal(log.requestsSince(7, dayStart), total);
      assert.ok(Math.abs(log.costSince(7, dayStart) - total * 0.001) < 1e-6, String(log.costSince(7, dayStart)));
      since = since >= dayStart + 1000 ? dayStart + 1 : since + 1;
      assert.equal(log.requestsSince(7, since), total);
    };
    while (log.pending > 0) {
      expectExact();
      // spin a few ms: a batch committed meanwhile is on disk before its message arrives
      const until = performance.now() + 3;
      while (performance.now() < until) expectExact();
      await turn();
    }
    expectExact();
    assert.ok(log.flushes - flushesBefore >= 3, `${log.flushes - flushesBefore} batches`);
    assert.equal(log.mainThreadWrites, 0);
  });

  test('flush() right after a batch was posted returns with every row on disk, written once', async (t) => {
    const { log, file } = await openWithWriter(t, { captureBodies: true });
    const body = 'y'.repeat(100); // 1 MB in all: packed in ~10 turns, gzip'd by the writer in far longer
    for (let i = 0; i < 5000; i++) log.record(call({ request_body: body, response_body: body }));
    for (let i = 0; i < 20; i++) await turn(); // packed (500 rows a turn) and posted
    log.record(call({ request_id: 'queued-after' }));
    log.flush();
    assert.equal(log.pending, 0);
    assert.deepEqual(onDisk(file), { rows: 5001, ids: 5001 });
    assert.equal(log.flushes, 2, 'the batch (writer thread) and the row queued after it');
    assert.equal(log.mainThreadWrites, 1, 'only the row queued after the post is written here');
  });

  test('a writer thread that cannot start: reported once, this thread writes, nothing lost', async (t) => {
    const errors: string[] = [];
    const { log, file } = openLog(
      t,
      { flushMs: 20, onError: (err, during) => errors.push(`${during}: ${String(err)}`) },
      tempStore(),
      { writerModule: NO_WRITER },
    );
    for (let i = 0; i < 300; i++) log.record(call());
    await waitFor(() => log.pending === 0, 'fallback write', 10_000);
    for (let i = 0; i < 300; i++) log.record(call());
    await waitFor(() => log.pending === 0, 'second fallback write', 10_000);
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.match(errors[0], /^flush: .*writer thread unavailable/);
    assert.equal(log.writerReady, false);
    assert.ok(log.mainThreadWrites >= 2);
    assert.deepEqual(onDisk(file), { rows: 600, ids: 600 });
  });

  test('a writer thread that dies with a batch in flight: the batch is written here, once', async (t) => {
    const errors: string[] = [];
    let worker: Worker | undefined;
    const { log, file } = await openWithWriter(
      t,
      { captureBodies: true, onError: (err) => errors.push(String(err)) },
      { onWriterStarted: (w) => (worker = w) },
    );
    const body = 'z'.repeat(100);
    for (let i = 0; i < 5000; i++) log.record(call({ request_body: body }));
    for (let i = 0; i < 20; i++) await turn(); // posted
    await worker!.terminate(); // "crash"
    await waitFor(() => errors.length > 0 && log.pending === 0, 'fallback after the crash', 10_000);
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.match(errors[0], /writer thread unavailable/);
    assert.ok(log.mainThreadWrites > 0, 'written here');
    log.record(call({ request_id: 'after-crash' }));
    log.flush();
    assert.deepEqual(onDisk(file), { rows: 5001, ids: 5001 });
  });

  test('the background prune runs in the writer thread', async (t) => {
    const errors: unknown[] = [];
    const { log, file } = openLog(
      t,
      { retentionDays: 30, captureBodies: true, bodyRetentionDays: 7, now: () => NOW, onError: (err) => errors.push(err) },
      tempStore(),
      { firstPruneDelayMs: 50 },
    );
    for (const age of [40, 10, 1]) log.record(call({ ts: NOW - age * DAY_MS, request_id: `age-${age}`, request_body: 'q' }));
    log.flush();
    log.startWriter(); // the prune comes due while the thread starts, and runs once it is ready
    await waitFor(() => rowsOnDisk(file) === 2, 'background prune', 10_000);
    assert.equal(log.writerReady, true);
    assert.deepEqual(log.recent().map((r) => r.request_id), ['age-1', 'age-10']);
    assert.equal(log.bodies(log.recent({ limit: 1, until: NOW - 5 * DAY_MS })[0].id), null, 'the old body went first');
    assert.deepEqual(errors, []);
  });

  test('close() waits for the batch in flight; every row is there after reopening', async (t) => {
    const dir = tempStore();
    const first = CallLog.open(dir, { ...QUIET, captureBodies: true });
    first.startWriter();
    await waitFor(() => first.writerReady, 'writer thread ready', 10_000);
    for (let i = 0; i < 5000; i++) first.record(call({ response_body: 'w'.repeat(100) }));
    for (let i = 0; i < 20; i++) await turn(); // posted
    first.record(call({ request_id: 'last-words' }));
    first.close();
    assert.equal(first.pending, 0);
    const { log, file } = openLog(t, {}, dir);
    assert.deepEqual(onDisk(file), { rows: 5001, ids: 5001 });
    assert.equal(log.recent({ limit: 1 })[0].request_id, 'last-words');
  });
});

describe('rows', () => {
  test('non-streamed and streamed calls with tokens, cache split and cost', (t) => {
    const { log } = openLog(t);
    const plain = usageColumns(usageFromOpenAI({ usage: { prompt_tokens: 1000, completion_tokens: 200, cost: 0.0031 } })!);
    log.record(
      call({
        request_id: 'plain', ttft_ms: null, backend: 'openrouter', model: 'anthropic/claude-sonnet-4.6',
        ...plain, cost_usd: computeCost(plain, SONNET, { local: false, shape: 'openai' }),
      }),
    );
    const cached = usageColumns(usageFromAnthropic({ usage: { input_tokens: 50, cache_read_input_tokens: 30_000, cache_creation_input_tokens: 1_000, output_tokens: 400 } })!);
    log.record(
      call({
        request_id: 'stream', ts: NOW + 1, endpoint: '/v1/messages', ttft_ms: 850, duration_ms: 4200, backend: 'anthropic',
        model: 'claude-sonnet-4-6', reasoning: 'thinking:on',
        ...cached, cost_usd: computeCost(cached, SONNET, { local: false, shape: 'openai' }),
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
      call({ backend: REFUSED_BACKEND, model: null, status, reason, user_id, prompt_tokens: 0, completion_tokens: 0, ttft_ms: null });
    log.record(refused(RefusalReason.badKey, 401, null));
    log.record(refused(RefusalReason.quotaDay, 429));
    log.record(refused(RefusalReason.unknownModel, 404));
    log.record(refused(RefusalReason.parkTimeout, 503));
    log.record(refused(RefusalReason.noBackend, 503));
    log.record(call({ status: STATUS_CLIENT_CLOSED, reason: 'client closed', completion_tokens: 37 }));
    log.record(call({ status: STATUS_UPSTREAM_DROPPED, reason: 'upstream dropped', completion_tokens: 12 }));

    assert.equal(log.recent({ status: 401 }).length, 0, 'an unauthenticated 401 waits for its minute to end');
    now += 60_000;
    const refusals = log.recent({ backend: REFUSED_BACKEND });
    assert.deepEqual(
      refusals.map((r) => r.reason).sort(),
      ['bad_key', 'no_backend', 'park_timeout', 'quota_day', 'unknown_model'],
    );
    assert.equal(refusals.find((r) => r.reason === 'bad_key')!.user_id, null);
    const aborted = log.recent({ status: 499 });
    assert.equal(aborted.length, 1);
    assert.equal(aborted[0].completion_tokens, 37, 'what was delivered is kept');
    assert.equal(log.recent({ status: 502 })[0].completion_tokens, 12);
  });

  test('recent() filters and pages', (t) => {
    const { log } = openLog(t);
    log.record(call({ ts: NOW - 3000, source: 'alice', backend: 'gpu1', model: 'qwen3-8b', requested_model: 'fast' }));
    log.record(call({ ts: NOW - 2000, source: 'bob', user_id: 2, backend: 'gpu2', model: 'llama-3.1-8b', requested_model: 'llama-3.1-8b' }));
    log.record(call({ ts: NOW - 1000, source: 'bob', user_id: 2, backend: 'gpu1', model: 'qwen3-8b', requested_model: 'qwen3-8b', status: 500 }));
    log.record(call({ ts: NOW, source: 'n8n', user_id: null, backend: 'openrouter', model: 'openai/gpt-5', requested_model: 'smart' }));

    const ts = (rows: { ts: number }[]) => rows.map((r) => r.ts - NOW);
    assert.deepEqual(ts(log.recent()), [0, -1000, -2000, -3000], 'newest first');
    assert.deepEqual(ts(log.recent({ source: 'bob' })), [-1000, -2000]);
    assert.deepEqual(ts(log.recent({ backend: 'gpu1' })), [-1000, -3000]);
    assert.deepEqual(ts(log.recent({ model: 'qwen3-8b' })), [-1000, -3000], 'served model');
    assert.deepEqual(ts(log.recent({ model: 'smart' })), [0], 'requested alias');
    assert.deepEqual(ts(log.recent({ status: 500 })), [-1000]);
    assert.deepEqual(ts(log.recent({ user_id: 2 })), [-1000, -2000]);
    assert.deepEqual(ts(log.recent({ since: NOW - 2000, until: NOW })), [-1000, -2000], 'since inclusive, until exclusive');
    assert.deepEqual(ts(log.recent({ source: 'bob', backend: 'gpu2' })), [-2000]);
    const page1 = log.recent({ limit: 2 });
    assert.deepEqual(ts(page1), [0, -1000]);
    assert.deepEqual(ts(log.recent({ limit: 2, beforeId: page1[1].id })), [-2000, -3000]);
    assert.deepEqual(log.recent({ source: 'nobody' }), []);
  });

  test('recent() sees rows recorded since the last flush', (t) => {
    const { log } = openLog(t);
    log.record(call({ request_id: 'fresh' }));
    assert.equal(log.recent()[0].request_id, 'fresh');
  });
});

describe('aggregate', () => {
  test('totals, cache hit share and nearest-rank p50/p95 per backend', (t) => {
    const { log } = openLog(t);
    const durations = Array.from({ length: 100 }, (_, i) => i + 1).sort(() => Math.random() - 0.5);
    for (const d of durations) {
      log.record(call({ backend: 'gpu1', duration_ms: d, prompt_tokens: 1000, cached_tokens: 250, completion_tokens: 10 }));
    }
    for (let i = 1; i <= 20; i++) {
      log.record(
        call({ backend: 'openrouter', duration_ms: i * 10, cost_usd: 0.01, upstream_cost_usd: i <= 10 ? 0.02 : null, status: i === 1 ? 502 : 200 }),
      );
    }
    const rows = log.aggregate('backend');
    assert.deepEqual(rows.map((r) => r.key), ['gpu1', 'openrouter'], 'most calls first');
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

  test('per model, source and UTC day, within a time range', (t) => {
    const { log } = openLog(t);
    const day1 = Date.UTC(2026, 2, 14, 23, 59, 59);
    const day2 = Date.UTC(2026, 2, 15, 0, 0, 0);
    log.record(call({ ts: day1, source: 'alice', model: 'a' }));
    log.record(call({ ts: day2, source: 'alice', model: 'b' }));
    log.record(call({ ts: day2 + 1, source: 'bob', model: 'b', duration_ms: 7 }));
    log.record(call({ ts: day2 + 2, source: 'bob', model: null, backend: REFUSED_BACKEND, status: 404 }));

    assert.deepEqual(log.aggregate('day').map((r) => [r.key, r.calls]), [['2026-03-14', 1], ['2026-03-15', 3]]);
    assert.deepEqual(log.aggregate('model').map((r) => [r.key, r.calls]), [['b', 2], ['(none)', 1], ['a', 1]]);
    assert.deepEqual(log.aggregate('source', { since: day2 }).map((r) => [r.key, r.calls]), [['bob', 2], ['alice', 1]]);
    assert.deepEqual(log.aggregate('source', { until: day2 }).map((r) => [r.key, r.calls]), [['alice', 1]]);
    const single = log.aggregate('model', { since: day2 + 1, until: day2 + 2 });
    assert.deepEqual([single[0].p50_ms, single[0].p95_ms], [7, 7]);
    assert.deepEqual(log.aggregate('backend', { since: NOW + DAY_MS }), []);
  });
});

describe('bodies', () => {
  test('captured bodies round-trip through gzip; a big one is capped with a marker', (t) => {
    const { log, file } = openLog(t, { captureBodies: true });
    const big = '{"messages":[' + 'x'.repeat(300 * 1024) + ']}';
    const response = Buffer.from('data: {"choices":[]}\n\ndata: [DONE]\n\n');
    log.record(call({ request_id: 'big', request_body: big, response_body: response }));
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

    const db = new Database(file, { readonly: true });
    const stored = db.prepare('SELECT length(request) AS n FROM call_bodies').get() as { n: number };
    db.close();
    assert.ok(stored.n < 10_000, `stored gzip'd (${stored.n} bytes)`);
  });

  test('without capture no bodies are stored', (t) => {
    const { log } = openLog(t, { captureBodies: false });
    log.record(call({ request_body: 'secret prompt', response_body: 'answer' }));
    const [row] = log.recent();
    assert.equal(row.has_bodies, false);
    assert.equal(log.bodies(row.id), null);
  });
});

describe('retention', () => {
  test('prune() drops old rows, and bodies sooner than their rows', (t) => {
    let now = NOW;
    const { log } = openLog(t, { captureBodies: true, retentionDays: 30, bodyRetentionDays: 7, now: () => now });
    for (const age of [40, 10, 1]) log.record(call({ ts: NOW - age * DAY_MS, request_id: `age-${age}`, request_body: 'q', response_body: 'a' }));
    log.flush();

    assert.deepEqual(log.prune(), { rows: 1, bodies: 2 });
    const rows = log.recent();
    assert.deepEqual(rows.map((r) => r.request_id), ['age-1', 'age-10']);
    assert.equal(log.bodies(rows.find((r) => r.request_id === 'age-10')!.id), null);
    assert.equal(log.bodies(rows.find((r) => r.request_id === 'age-1')!.id)!.request!.toString(), 'q');
    assert.deepEqual(log.prune(), { rows: 0, bodies: 0 }, 'idempotent');

    now = NOW + 30 * DAY_MS; // age-1 is now 31 days old: row and body go together
    assert.deepEqual(log.prune(), { rows: 2, bodies: 1 });
    assert.deepEqual(log.recent(), []);
  });

  test('retention 0 keeps rows forever', (t) => {
    const { log } = openLog(t, { retentionDays: 0, captureBodies: true, bodyRetentionDays: 14 });
    log.record(call({ ts: NOW - 3650 * DAY_MS, request_body: 'old' }));
    log.flush();
    assert.deepEqual(log.prune(NOW), { rows: 0, bodies: 1 });
    assert.equal(log.recent().length, 1);
  });

  test('quota counters outlive pruned rows', (t) => {
    const { log } = openLog(t, { retentionDays: 1 });
    const monthStart = Date.UTC(2026, 2, 1);
    log.record(call({ ts: monthStart + DAY_MS, cost_usd: 0.5 }));
    log.flush();
    assert.equal(log.prune(NOW).rows, 1);
    assert.equal(log.costSince(1, monthStart), 0.5);
    assert.equal(log.requestsSince(1, monthStart), 1);
  });
});

describe('quota counters', () => {
  test('count queued and flushed rows, per user, and survive reopening', (t) => {
    const dir = tempStore();
    const dayStart = Date.UTC(2026, 2, 15);
    const first = CallLog.open(dir, QUIET);
    first.record(call({ ts: dayStart - 1, cost_usd: 100 })); // yesterday
    first.record(call({ ts: dayStart, cost_usd: 0.25 }));
    first.flush();
    first.record(call({ ts: NOW, cost_usd: 0.5, upstream_cost_usd: 0.75 }));
    first.record(call({ ts: NOW, user_id: 2, cost_usd: 9 }));
    first.record(call({ ts: NOW, backend: REFUSED_BACKEND, status: 429, reason: RefusalReason.quotaDay }));
    first.record(call({ ts: NOW, backend: REFUSED_BACKEND, status: 503, reason: RefusalReason.parkTimeout }));

    assert.equal(first.pending, 4);
    assert.equal(first.requestsSince(1, dayStart), 3, 'flushed + queued, minus the quota refusal');
    assert.equal(first.costSince(1, dayStart), 1);
    assert.equal(first.requestsSince(2, dayStart), 1);
    first.close();

    const { log } = openLog(t, {}, dir);
    assert.equal(log.requestsSince(1, dayStart), 3);
    assert.equal(log.costSince(1, dayStart), 1);
    assert.equal(log.requestsSince(1, dayStart - DAY_MS), 4);
    assert.equal(log.requestsSince(3, dayStart), 0);
  });

  test('a `since` inside a day counts that day exactly', (t) => {
    const { log } = openLog(t);
    const dayStart = Date.UTC(2026, 2, 15);
    for (const h of [1, 5, 9, 13]) log.record(call({ ts: dayStart + h * 3_600_000, cost_usd: h }));
    log.record(call({ ts: dayStart + DAY_MS + 1, cost_usd: 100 }));
    log.record(call({ ts: dayStart + 6 * 3_600_000, backend: REFUSED_BACKEND, reason: RefusalReason.quotaMonth, status: 429 }));
    log.flush();
    const since = dayStart + 5 * 3_600_000;
    assert.equal(log.requestsSince(1, since), 4, '05:00, 09:00, 13:00 and the next day');
    assert.equal(log.costSince(1, since), 5 + 9 + 13 + 100);
  });
});
