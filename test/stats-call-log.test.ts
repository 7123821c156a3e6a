/** The call log's writes: batched off the request path, and reads that never wait for them. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { CallLog, type CallRecord } from '../src/stats/call-log.ts';
import { storedCall } from '../src/store/calls-repo.ts';
import { waitFor } from './helpers/wait.ts';
import { call, fileState, NOW, onDisk, openLog, QUIET, rowsOnDisk, tempStore, turn } from './helpers/call-log-rig.ts';

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
