/**
 * stats.db's repository on its own: a batch is one transaction, explicit ids are kept, and the
 * prune removes the same whatever its slice size.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { CallsRepo, type CallWrite, type PruneCutoffs, type StoredCall } from '../src/store/calls-repo.ts';
import { DAY_MS } from '../src/stats/period.ts';
import { tempDirs } from './helpers/temp-dirs.ts';

const NOW = Date.UTC(2026, 2, 15, 12);

const tempDir = tempDirs('llmgw-calls-repo-');

function row(over: Partial<StoredCall> = {}): StoredCall {
  return {
    id: 1,
    ts: NOW,
    request_id: 'req-1',
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
    cached_tokens: 5,
    cache_write_tokens: 1,
    reasoning: null,
    cost_usd: 0.00123,
    upstream_cost_usd: null,
    usage_estimated: 0,
    paid: 1,
    count: 1,
    route: null,
    ...over,
  };
}

describe('CallsRepo', () => {
  test('a batch is written whole or not at all; ids and usage as given, usage summed per user and day', (t) => {
    const repo = CallsRepo.open(tempDir());
    t.after(() => repo.close());
    const usage = (user_id: number, requests: number, cost: number) => ({ user_id, day: 20_000, requests, cost });
    repo.write([
      { row: row({ id: 41 }), bodies: null, usage: usage(1, 1, 0.5) },
      { row: null, bodies: null, usage: usage(1, 2, 0.25) }, // counts for quotas only
      { row: row({ id: 42, user_id: 2 }), bodies: null, usage: usage(2, 1, 0) },
    ]);
    assert.equal(repo.maxId(), 42);
    assert.deepEqual(
      repo.quotaUsage().sort((a, b) => a.user_id - b.user_id),
      [usage(1, 3, 0.75), usage(2, 1, 0)],
    );
    assert.throws(() =>
      repo.write([
        { row: row({ id: 43 }), bodies: null, usage: usage(1, 1, 0) },
        { row: row({ id: 42 }), bodies: null, usage: null },
      ]),
    );
    assert.equal(repo.maxId(), 42, 'the failed batch left nothing');
    assert.equal(repo.quotaUsage().find((u) => u.user_id === 1)!.requests, 3);
  });

  test('the prune removes exactly the same in slices of 7 as in one slice', () => {
    const dir = tempDir();
    const cutoffs: PruneCutoffs = { rowCutoff: NOW - 30 * DAY_MS, bodyCutoff: NOW - 7 * DAY_MS, firstUsageDay: 20_000 };
    const results = [7, 1_000_000].map((limit) => {
      const repo = CallsRepo.open(join(dir, `${limit}`));
      try {
        const ages = Array.from({ length: 250 }, (_, i) => i % 50); // days
        const batch: CallWrite[] = ages.map((age, i) => ({
          row: row({ id: i + 1, ts: NOW - age * DAY_MS, request_id: `r${i}` }),
          bodies: { request: Buffer.from('q'), response: Buffer.from('a'), request_bytes: 1, response_bytes: 1 },
          usage: null,
        }));
        batch.push({ row: null, bodies: null, usage: { user_id: 1, day: 19_000, requests: 1, cost: 0 } });
        batch.push({ row: null, bodies: null, usage: { user_id: 1, day: 20_500, requests: 2, cost: 0 } });
        repo.write(batch);
        const pruned = { rows: 0, bodies: 0, steps: 0 };
        for (let done = false; !done; pruned.steps++) {
          assert.ok(pruned.steps < 100);
          const step = repo.pruneStep(cutoffs, limit);
          pruned.rows += step.rows;
          pruned.bodies += step.bodies;
          done = step.done;
        }
        const left = {
          calls: repo.recent({ limit: 1000 }).length,
          bodies: repo.recent({ limit: 1000 }).filter((r) => r.has_bodies).length,
          usage: repo.quotaUsage().length,
        };
        return { rows: pruned.rows, bodies: pruned.bodies, left, sliced: pruned.steps > 3 };
      } finally {
        repo.close();
      }
    });
    assert.equal(results[0].sliced, true, 'several slices');
    assert.deepEqual({ ...results[0], sliced: 0 }, { ...results[1], sliced: 0 });
    assert.deepEqual(results[0].left, { calls: 155, bodies: 40, usage: 1 });
  });
  test('the cache hit share follows writes and prunes: a backend reports once a stored call of it did', (t) => {
    const repo = CallsRepo.open(tempDir());
    t.after(() => repo.close());
    const quiet = { cached_tokens: 0, cache_write_tokens: 0 };
    const write = (...rows: StoredCall[]) => repo.write(rows.map((r) => ({ row: r, bodies: null, usage: null })));
    const share = () => repo.aggregate('backend').map((r) => [r.key, r.cache_hit_share]);
    write(row({ id: 1, ts: NOW - 3 * DAY_MS, ...quiet }));
    assert.deepEqual(share(), [['gpu1', null]]);
    write(row({ id: 2, ts: NOW - 3 * DAY_MS, cached_tokens: 50 }));
    assert.deepEqual(share(), [['gpu1', 50 / 200]]);
    write(row({ id: 3, ...quiet }));
    assert.deepEqual(share(), [['gpu1', 50 / 300]]);
    const cutoffs: PruneCutoffs = { bodyCutoff: -Infinity, rowCutoff: NOW - DAY_MS, firstUsageDay: 0 };
    while (!repo.pruneStep(cutoffs, 10).done);
    assert.deepEqual(share(), [['gpu1', null]], 'its reporting call pruned, the backend tells nothing of its cache');
  });
});
