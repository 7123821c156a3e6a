/**
 * The two paths that add up the call log give one answer: the same calls, summed by the SQL
 * over stats.db (`aggregate()`, `/admin/api/stats`) and by the in-memory rollup (`summary()`,
 * the Statistics tab), agree on every aggregate of every group: calls, errors, tokens, cost,
 * `cache_hit_share` (null with no calls or no cache reporting, 0 for a reporting backend that
 * read nothing), and the nearest-rank percentiles (exact below 128 ms, the histogram's bucket
 * above). docs/decisions.md, "One rule for cache_hit_share".
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CallLog, type AggregateGroup, type AggregateRow, type GroupStats } from '../src/stats/call-log.ts';
import { bucketOf, bucketValue } from '../src/stats/calls-rollup.ts';
import { DAY_MS } from '../src/stats/period.ts';
import type { CallRecord } from '../src/stats/record.ts';
import { callRecord } from './helpers/call-record.ts';
import { tempDirs } from './helpers/temp-dirs.ts';

const NOW = Date.UTC(2026, 2, 15, 12, 30);
const tempStore = tempDirs('llmgw-aggregate-paths-');
const GROUPS: readonly AggregateGroup[] = ['backend', 'model', 'source', 'day'];
const range = { since: NOW - 5 * DAY_MS, until: NOW + DAY_MS };

/** The rollup's group as `/admin/api/stats` shows one, field for field. */
function asAggregate(g: GroupStats): AggregateRow {
  return {
    key: g.key,
    calls: g.calls,
    errors: g.errors,
    prompt_tokens: g.prompt_tokens,
    completion_tokens: g.completion_tokens,
    cached_tokens: g.cached_tokens,
    cache_write_tokens: g.cache_write_tokens,
    cost_usd: g.cost_usd,
    cache_hit_share: g.cache_hit_share,
    p50_ms: g.p50_ms!,
    p95_ms: g.p95_ms!,
  };
}

/** Both paths over the same calls: per group, the SQL's rows and the rollup's, as `/admin/api/stats` rows. */
async function bothPaths(t: { after: (fn: () => void) => void }, calls: CallRecord[]) {
  const log = CallLog.open(tempStore(), {
    flushMs: 60_000,
    retentionDays: 0,
    captureBodies: false,
    bodyRetentionDays: 0,
    now: () => NOW,
  });
  t.after(() => log.close());
  for (const c of calls) log.record(c);
  await log.flush();
  const s = await log.summary({ ...range, step: 'day' });
  const out = {} as Record<AggregateGroup, { sql: AggregateRow[]; rollup: AggregateRow[] }>;
  for (const group of GROUPS) {
    const rollup = group === 'day' ? s.series.filter((p) => p.calls > 0) : s[group];
    out[group] = { sql: log.aggregate(group, range), rollup: rollup.map(asAggregate) };
  }
  return { groups: out, total: s.total };
}

const at = (daysAgo: number, over: Partial<CallRecord>) => callRecord({ ts: NOW - daysAgo * DAY_MS, ...over });

describe('aggregate() and the rollup: one answer for the same calls', () => {
  test('no calls: no groups on either path; the total knows no hit share', async (t) => {
    const { groups, total } = await bothPaths(t, []);
    for (const group of GROUPS) assert.deepEqual(groups[group], { sql: [], rollup: [] }, group);
    assert.equal(total.calls, 0);
    assert.equal(total.cache_hit_share, null, 'no calls: not known');
  });

  test('calls without cache data: every group the same, cache_hit_share null (not known), never 0', async (t) => {
    const { groups } = await bothPaths(t, [
      at(0, { backend: 'llama', prompt_tokens: 500, duration_ms: 40 }),
      at(1, { backend: 'llama', prompt_tokens: 700, duration_ms: 90, status: 502 }),
      at(1, { backend: 'vllm', model: null, prompt_tokens: 0, duration_ms: 7 }),
    ]);
    for (const group of GROUPS) {
      assert.deepEqual(groups[group].rollup, groups[group].sql, group);
      assert.ok(groups[group].sql.length > 0, group);
      for (const row of groups[group].sql) assert.equal(row.cache_hit_share, null, `${group} ${row.key}`);
    }
  });

  test('calls with some cache data: every aggregate of every group the same', async (t) => {
    const calls = [
      // a backend that reports: reads, writes, and a call that read nothing (a known 0)
      at(0, { backend: 'cloud', model: 'shared', prompt_tokens: 1000, cached_tokens: 600, cache_write_tokens: 100 }),
      at(0, { backend: 'cloud', model: 'shared', prompt_tokens: 1000, duration_ms: 120, cost_usd: 0.25 }),
      at(2, { backend: 'cloud', model: 'solo', prompt_tokens: 400, duration_ms: 3, upstream_cost_usd: 0.5 }),
      // one that never reports, serving the same model: its prompt tokens are no misses
      at(0, { backend: 'llama', model: 'shared', prompt_tokens: 2000, duration_ms: 55, source: 'desk' }),
      at(2, { backend: 'llama', model: 'shared', prompt_tokens: 800, duration_ms: 66, source: 'desk' }),
      // a free backend reporting a cost spends nothing; a folded row of refusals weighs its count
      at(3, { backend: 'free', prompt_tokens: 10, upstream_cost_usd: 1, paid: false, duration_ms: 1 }),
      at(3, { backend: '(refused)', model: null, status: 429, prompt_tokens: 0, count: 5, duration_ms: 0 }),
      ...Array.from({ length: 40 }, (_, i) =>
        at(i % 4, {
          backend: 'gpu',
          model: 'big',
          prompt_tokens: 100,
          cached_tokens: i % 3 === 0 ? 25 : 0,
          duration_ms: 5 + i * 3,
        }),
      ),
    ];
    const { groups } = await bothPaths(t, calls);
    for (const group of GROUPS) {
      const { sql, rollup } = groups[group];
      assert.deepEqual(
        rollup.map((r) => r.key),
        sql.map((r) => r.key),
        `${group}: keys and order`,
      );
      for (const [i, e] of sql.entries()) {
        const { p50_ms, p95_ms, ...sums } = rollup[i];
        const { p50_ms: e50, p95_ms: e95, ...exact } = e;
        assert.deepEqual(sums, exact, `${group} ${e.key}`);
        // exact below 128 ms; above, the middle of the histogram bucket the exact value falls in
        assert.equal(p50_ms, e50 < 128 ? e50 : bucketValue(bucketOf(e50)), `${group} ${e.key} p50`);
        assert.equal(p95_ms, e95 < 128 ? e95 : bucketValue(bucketOf(e95)), `${group} ${e.key} p95`);
      }
    }
    const backend = Object.fromEntries(groups.backend.sql.map((r) => [r.key, r]));
    assert.equal(backend.cloud.cache_hit_share, 600 / 2400, 'cached over the reporting prompt tokens');
    assert.equal(backend.llama.cache_hit_share, null, 'never reported: not known');
    assert.equal(backend.free.cache_hit_share, null);
    assert.equal(backend.free.cost_usd, 0, 'a free backend spends nothing');
    assert.equal(backend['(refused)'].calls, 5);
    assert.equal(backend['(refused)'].errors, 5);
    const model = Object.fromEntries(groups.model.sql.map((r) => [r.key, r]));
    assert.equal(model.shared.cache_hit_share, 600 / 2000, 'a model both serve counts only the reporting one');
    const solo = groups.day.sql.find((r) => r.key === new Date(NOW - 2 * DAY_MS).toISOString().slice(0, 10))!;
    assert.ok(solo.cache_hit_share !== null && solo.cache_hit_share > 0);
  });

  test('a reporting backend that read nothing: 0 (known to be zero) on both paths', async (t) => {
    const { groups } = await bothPaths(t, [
      at(0, { backend: 'cloud', prompt_tokens: 1000, cache_write_tokens: 300 }),
      at(1, { backend: 'cloud', prompt_tokens: 1000 }),
    ]);
    for (const group of GROUPS) {
      assert.deepEqual(groups[group].rollup, groups[group].sql, group);
      for (const row of groups[group].sql) assert.equal(row.cache_hit_share, 0, `${group} ${row.key}`);
    }
  });
});
