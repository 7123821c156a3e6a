/**
 * The pieces of the call log's writer thread that can be checked without a thread: the row
 * codec, the shared-memory signals, body hand-over and the stepwise prune. (The thread itself
 * is exercised end to end in stats-call-log.test.ts.)
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { MessageChannel } from 'node:worker_threads';
import {
  BodyPacker, bodyTransfers, packCalls, packedTransfers, unpackBodies, unpackCalls, type PackedBodies, type PackedCalls,
} from '../src/stats/call-codec.ts';
import { CALL_COLUMNS, capturedBodyOf, storedCall, type StoredCall } from '../src/stats/call-rows.ts';
import { prepareCallWrites, type PruneCutoffs } from '../src/stats/call-writes.ts';
import { STATS_MIGRATIONS } from '../src/stats/migrations.ts';
import { DAY_MS } from '../src/stats/period.ts';
import type { CallRecord } from '../src/stats/record.ts';
import { RING_SIZE, WriterSignals } from '../src/stats/writer-protocol.ts';
import { openDatabase } from '../src/store/db.ts';

const NOW = Date.UTC(2026, 2, 15, 12);

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function row(over: Partial<StoredCall> = {}): StoredCall {
  return {
    ts: NOW, request_id: 'req-1', duration_ms: 120, ttft_ms: 40, endpoint: '/v1/chat/completions', source: 'alice',
    user_id: 1, requested_model: 'fast', model: 'qwen3-8b', backend: 'gpu1', status: 200, reason: null,
    prompt_tokens: 100, completion_tokens: 20, cached_tokens: 5, cache_write_tokens: 1, reasoning: null,
    cost_usd: 0.00123, upstream_cost_usd: null, usage_estimated: 0, paid: 1, count: 1,
    ...over,
  };
}

/** Posts through a real MessageChannel, as the call log does (numbers transferred, not copied). */
async function throughChannel(p: PackedCalls): Promise<PackedCalls> {
  const { port1, port2 } = new MessageChannel();
  try {
    const got = new Promise<PackedCalls>((resolve) => port2.once('message', resolve));
    port1.postMessage(p, packedTransfers(p));
    assert.equal(p.numbers.byteLength, 0, 'the numbers were transferred');
    return await got;
  } finally {
    port1.close();
  }
}

describe('row codec', () => {
  test('round-trips every column, nulls, empty and non-ASCII strings, through a message port', async () => {
    const rows = [
      row(),
      row({
        request_id: '', ttft_ms: null, user_id: null, requested_model: null, model: null, reason: 'no_backend',
        reasoning: 'thinking:on', upstream_cost_usd: 0.5, cost_usd: 0, source: 'zoë 🚀 \u0000 "x"', status: 503,
        usage_estimated: 1, paid: 0, count: 37,
      }),
      row({ request_id: 'r'.repeat(10_000), ts: 2 ** 52, duration_ms: 0, endpoint: '/v1/embeddings' }),
    ];
    const back = unpackCalls(await throughChannel(packCalls(rows)));
    assert.deepEqual(back, rows);
    for (const col of CALL_COLUMNS) assert.ok(col in back[0], `column ${col} carried`);
    assert.deepEqual(Object.keys(back[0]).sort(), [...CALL_COLUMNS].sort());
  });

  test('no rows', () => {
    assert.deepEqual(unpackCalls(packCalls([])), []);
  });
});

describe('rows from records', () => {
  test('a malformed record is normalised, never thrown on', () => {
    const bad = { ts: 1.6, request_id: undefined, duration_ms: -5, ttft_ms: Number.NaN, user_id: 2.5, status: '200', reasoning: 3 };
    const stored = storedCall(bad as unknown as CallRecord);
    assert.equal(stored.ts, 2);
    assert.equal(stored.request_id, '');
    assert.equal(stored.duration_ms, 0);
    assert.equal(stored.ttft_ms, 0);
    assert.equal(stored.user_id, null);
    assert.equal(stored.reasoning, '3');
    assert.deepEqual(unpackCalls(packCalls([stored])), [stored], 'and packs losslessly');
  });

  test('bodies of a record: strings and bytes; anything else is ignored', () => {
    const bytes = Buffer.from('b');
    assert.deepEqual(capturedBodyOf({ request_body: 'q', response_body: bytes } as CallRecord, 3), { index: 3, request: 'q', response: bytes });
    assert.deepEqual(capturedBodyOf({ request_body: 'text' } as CallRecord, 0), { index: 0, request: 'text', response: undefined });
    assert.equal(capturedBodyOf({ request_body: { not: 'a body' } } as unknown as CallRecord, 0), null);
    assert.equal(capturedBodyOf({} as CallRecord, 0), null);
  });
});

describe('body codec', () => {
  test('round-trips text and byte bodies over several slices, through a message port, in one buffer per slice', async () => {
    const pooled = Buffer.from('small body'); // a view into Buffer's shared 8 KiB pool
    assert.ok(pooled.buffer.byteLength > pooled.length);
    const big = Buffer.alloc(100_000, 7);
    const packer = new BodyPacker();
    packer.add(0, 'request', 'zoë 🚀 {"a":1}');
    packer.add(0, 'response', pooled);
    packer.add(1, 'request', { not: 'a body' });
    packer.add(1, 'response', '');
    packer.endSlice();
    packer.add(2, 'response', big);
    packer.add(2, 'request', 'second slice');
    packer.add(3, 'request', Buffer.alloc(0));
    const packed = packer.finish();
    assert.equal(packed.bytes.length, 2, 'one buffer per slice');
    const firstSlice = Buffer.byteLength('zoë 🚀 {"a":1}') + pooled.length;
    assert.equal(packed.bytes[0].buffer.byteLength, firstSlice, 'the slice\'s bodies, out of the pool, nothing more');

    const { port1, port2 } = new MessageChannel();
    const got = new Promise<PackedBodies>((resolve) => port2.once('message', resolve));
    port1.postMessage(packed, bodyTransfers(packed));
    port1.close();
    const bodies = unpackBodies(await got);

    const byRow = new Map(bodies.map((b) => [b.index, b]));
    assert.deepEqual([...byRow.keys()].sort(), [0, 1, 2, 3]);
    assert.deepEqual(byRow.get(0)!.request, Buffer.from('zoë 🚀 {"a":1}'), 'text as UTF-8, as packBody stores it');
    assert.deepEqual(byRow.get(0)!.response, pooled);
    assert.equal(byRow.get(1)!.request, undefined, 'not a body');
    assert.deepEqual(byRow.get(1)!.response, Buffer.alloc(0));
    assert.deepEqual(byRow.get(2)!.response, big);
    assert.deepEqual(byRow.get(2)!.request, Buffer.from('second slice'));
    assert.deepEqual(byRow.get(3)!.request, Buffer.alloc(0));
    assert.ok(Buffer.isBuffer(byRow.get(2)!.response), 'bytes arrive as Buffers');
  });

  test('no bodies', () => {
    assert.deepEqual(unpackBodies(new BodyPacker().finish()), []);
  });
});

describe('writer signals', () => {
  test('an op is pending until settled, ok or failed, and a reused ring slot is not mistaken', () => {
    const main = new WriterSignals();
    const writer = new WriterSignals(main.buffer); // the writer thread's view of the same memory
    assert.equal(main.ready, false);
    writer.markReady();
    assert.equal(main.ready, true);

    assert.equal(main.status(1), 'pending');
    writer.settle(1, true);
    writer.settle(2, false);
    assert.equal(main.status(1), 'ok');
    assert.equal(main.status(2), 'failed');
    assert.equal(main.status(1 + RING_SIZE), 'pending', 'same slot, later op');
    assert.equal(main.waitSettled([1, 2], 1_000), true);
    const start = performance.now();
    assert.equal(main.waitSettled([3], 20), false, 'times out');
    assert.ok(performance.now() - start >= 15);
  });

  test('the commit epoch is odd only between beginCommit and settle', () => {
    const signals = new WriterSignals();
    const quiet = signals.quietEpoch(0)!;
    assert.equal(quiet % 2, 0);
    signals.beginCommit();
    assert.equal(signals.quietEpoch(10), null, 'a commit is under way');
    signals.settle(1, true);
    assert.equal(signals.quietEpoch(0), quiet + 2);
    signals.settle(2, false); // failed before its commit: the epoch does not move
    assert.equal(signals.epoch, quiet + 2);
  });

  test('op numbers wrap before they overflow the ring words', () => {
    assert.equal(WriterSignals.next(0), 1);
    assert.equal(WriterSignals.next(2 ** 30 - 1), 1);
    const signals = new WriterSignals();
    signals.settle(2 ** 30 - 1, false);
    assert.equal(signals.status(2 ** 30 - 1), 'failed');
  });
});

describe('stepwise prune', () => {
  test('removes exactly what the one-transaction prune removes', () => {
    const dir = mkdtempSync(join(tmpdir(), 'llmgw-prune-'));
    dirs.push(dir);
    const cutoffs: PruneCutoffs = { rowCutoff: NOW - 30 * DAY_MS, bodyCutoff: NOW - 7 * DAY_MS, firstUsageDay: 20_000 };
    const results = ['all', 'steps'].map((mode) => {
      const db = openDatabase(join(dir, `${mode}.db`), STATS_MIGRATIONS);
      try {
        const writes = prepareCallWrites(db);
        const ages = Array.from({ length: 250 }, (_, i) => i % 50); // days
        writes.writeBatch({
          calls: ages.map((age, i) => row({ ts: NOW - age * DAY_MS, request_id: `r${i}` })),
          bodies: ages.map((_, index) => ({ index, request: 'q', response: 'a' })),
          usage: [{ user_id: 1, day: 19_000, requests: 1, cost: 0 }, { user_id: 1, day: 20_500, requests: 2, cost: 0 }],
        });
        let pruned = { rows: 0, bodies: 0 };
        if (mode === 'all') pruned = writes.pruneAll(cutoffs);
        else {
          for (let steps = 0; ; steps++) {
            assert.ok(steps < 100);
            const step = writes.pruneStep(cutoffs, 7);
            pruned = { rows: pruned.rows + step.rows, bodies: pruned.bodies + step.bodies };
            if (step.done) break;
          }
        }
        const left = db
          .prepare('SELECT (SELECT COUNT(*) FROM calls) AS calls, (SELECT COUNT(*) FROM call_bodies) AS bodies, (SELECT COUNT(*) FROM quota_usage) AS usage')
          .get();
        return { pruned, left };
      } finally {
        db.close();
      }
    });
    assert.deepEqual(results[1], results[0]);
    assert.deepEqual(results[0].left, { calls: 155, bodies: 40, usage: 1 });
  });
});
