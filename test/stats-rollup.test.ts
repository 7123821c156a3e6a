/**
 * The statistics rollup (stats/calls-rollup.ts) against what stats.db holds: the same totals
 * as `aggregate()` per backend, model, source and day, percentiles within the histogram's 1 %,
 * hours for a recent range, the cache split with "no cache reporting" kept apart from misses,
 * built from disk after a restart the same as fed live, and pruned with retention.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CallLog, type CallLogOptions, type GroupStats } from '../src/stats/call-log.ts';
import { bucketOf, bucketValue, CallsRollup, HOUR_MS } from '../src/stats/calls-rollup.ts';
import { DAY_MS } from '../src/stats/period.ts';
import { callRecord } from './helpers/call-record.ts';
import { seededCalls } from './helpers/calls-seed.ts';
import { tempDirs } from './helpers/temp-dirs.ts';

const QUIET: CallLogOptions = { flushMs: 60_000, retentionDays: 0, captureBodies: false, bodyRetentionDays: 0 };
const NOW = Date.UTC(2026, 2, 15, 12, 30);
const tempStore = tempDirs('llmgw-rollup-');

function openLog(t: { after: (fn: () => void) => void }, dir = tempStore(), opts: Partial<CallLogOptions> = {}) {
  const log = CallLog.open(dir, { ...QUIET, now: () => NOW, ...opts });
  t.after(() => log.close());
  return log;
}

const everything = { since: NOW - 40 * DAY_MS, until: NOW + DAY_MS, step: 'day' as const };

describe('calls rollup', () => {
  test('totals as aggregate() has them, percentiles within 1 %, per backend, model, source and day', async (t) => {
    const log = openLog(t);
    for (const c of seededCalls({ count: 3_000, now: NOW, days: 20, seed: 3 })) log.record(c);
    await log.flush();
    const s = await log.summary(everything);
    for (const group of ['backend', 'model', 'source', 'day'] as const) {
      const exact = log.aggregate(group);
      const mine: GroupStats[] = group === 'day' ? s.series.filter((p) => p.calls > 0) : s[group];
      assert.deepEqual(
        mine.map((r) => [r.key, r.calls]),
        exact.map((r) => [r.key, r.calls]),
        `${group}: keys, calls, order`,
      );
      for (const [i, r] of mine.entries()) {
        const e = exact[i];
        for (const k of [
          'errors',
          'prompt_tokens',
          'completion_tokens',
          'cached_tokens',
          'cache_write_tokens',
        ] as const)
          assert.equal(r[k], e[k], `${group} ${r.key} ${k}`);
        assert.ok(Math.abs(r.cost_usd - e.cost_usd) < 1e-9, `${group} ${r.key} cost`);
        for (const p of ['p50_ms', 'p95_ms'] as const) {
          const tolerance = e[p] < 128 ? 0 : e[p] * 0.0101;
          assert.ok(Math.abs(r[p]! - e[p]) <= tolerance, `${group} ${r.key} ${p}: ${r[p]} vs ${e[p]}`);
        }
      }
    }
    assert.equal(s.total.calls, 3_000);
  });

  test('histogram buckets: exact below 128 ms, 2 % wide above, the value within 1 %', () => {
    for (let ms = 0; ms < 128; ms++) assert.equal(bucketValue(bucketOf(ms)), ms);
    for (const ms of [128, 129, 500, 1_234, 9_999, 65_432, 3_600_000]) {
      const v = bucketValue(bucketOf(ms));
      assert.ok(Math.abs(v - ms) / ms <= 0.0101, `${ms} → ${v}`);
    }
  });

  test('ttft percentiles skip calls without one; folded rows weigh their count', async (t) => {
    const log = openLog(t);
    log.record(callRecord({ ts: NOW - 1000, ttft_ms: 30, duration_ms: 40 }));
    log.record(callRecord({ ts: NOW - 900, ttft_ms: null, duration_ms: 2 }));
    log.record(callRecord({ ts: NOW - 800, ttft_ms: 90, duration_ms: 100 }));
    await log.flush();
    const { total } = await log.summary(everything);
    assert.deepEqual([total.ttft_p50_ms, total.ttft_p95_ms], [30, 90]);
    assert.deepEqual([total.p50_ms, total.p95_ms], [40, 100]);

    const rollup = new CallsRollup({ now: () => NOW });
    rollup.add({
      id: 1,
      ts: NOW,
      backend: 'b',
      model: 'm',
      source: 's',
      status: 401,
      duration_ms: 2,
      ttft_ms: null,
      prompt_tokens: 0,
      completion_tokens: 0,
      cached_tokens: 0,
      cache_write_tokens: 0,
      cost_usd: 0,
      count: 9,
    });
    rollup.add({
      id: 2,
      ts: NOW,
      backend: 'b',
      model: 'm',
      source: 's',
      status: 200,
      duration_ms: 50,
      ttft_ms: 5,
      prompt_tokens: 0,
      completion_tokens: 0,
      cached_tokens: 0,
      cache_write_tokens: 0,
      cost_usd: 0,
      count: 1,
    });
    const folded = rollup.summary(everything).total;
    assert.deepEqual([folded.calls, folded.errors, folded.p50_ms, folded.p95_ms], [10, 9, 2, 50]);
  });

  test('the last 24 hours per hour, every period listed, empty ones too', async (t) => {
    const log = openLog(t);
    const hour = Math.floor(NOW / HOUR_MS) * HOUR_MS;
    log.record(callRecord({ ts: hour - 30 * HOUR_MS })); // outside
    log.record(callRecord({ ts: hour - 23 * HOUR_MS }));
    log.record(callRecord({ ts: hour + 5 }));
    log.record(callRecord({ ts: hour + 6, status: 502 }));
    await log.flush();
    const s = await log.summary({ since: hour - 23 * HOUR_MS, until: hour + HOUR_MS, step: 'hour' });
    assert.equal(s.step, 'hour');
    assert.equal(s.series.length, 24);
    assert.equal(s.series[0].calls, 1);
    assert.equal(s.series[0].key, new Date(hour - 23 * HOUR_MS).toISOString().slice(0, 16).replace('T', ' '));
    assert.deepEqual([s.series[23].calls, s.series[23].errors], [2, 1]);
    assert.equal(
      s.series.slice(1, 23).every((p) => p.calls === 0 && p.p50_ms === null && p.cache_hit_share === null),
      true,
    );
    assert.equal(s.total.calls, 3);
    // hours older than the hourly tier are answered per day
    const old = await log.summary({ since: NOW - 30 * DAY_MS, until: NOW, step: 'hour' });
    assert.equal(old.step, 'day');
  });

  test('cache split: a backend that never reported cache use is "no cache reporting", not misses', async (t) => {
    const log = openLog(t);
    log.record(
      callRecord({
        ts: NOW - 5000,
        backend: 'cloud',
        model: 'shared',
        prompt_tokens: 1000,
        cached_tokens: 600,
        cache_write_tokens: 100,
      }),
    );
    log.record(callRecord({ ts: NOW - 4000, backend: 'cloud', model: 'shared', prompt_tokens: 1000 }));
    log.record(callRecord({ ts: NOW - 3000, backend: 'llama', model: 'shared', prompt_tokens: 2000 }));
    await log.flush();
    const s = await log.summary(everything);
    assert.deepEqual(s.silentBackends, ['llama']);
    const t0 = s.total;
    assert.deepEqual(
      [
        t0.prompt_tokens,
        t0.cached_tokens,
        t0.cache_write_tokens,
        t0.reporting_prompt_tokens,
        t0.unreported_prompt_tokens,
      ],
      [4000, 600, 100, 2000, 2000],
    );
    assert.equal(t0.cache_hit_share, 0.3, 'cached over the prompt tokens of backends that report');
    const llama = s.backend.find((b) => b.key === 'llama')!;
    assert.equal(llama.cache_hit_share, null);
    assert.equal(llama.unreported_prompt_tokens, 2000);
    assert.equal(s.model[0].cache_hit_share, 0.3, 'a model served by both counts only the reporting one');
  });

  test('built from stats.db after a restart as it was fed live; rows written meanwhile counted once', async (t) => {
    const dir = tempStore();
    const first = CallLog.open(dir, { ...QUIET, now: () => NOW });
    for (const c of seededCalls({ count: 5_000, now: NOW, days: 10, seed: 5 })) first.record(c);
    await first.flush();
    const live = await first.summary(everything);
    first.close();

    const log = openLog(t, dir);
    log.record(callRecord({ ts: NOW - 10, backend: 'late' }));
    await log.flush(); // written while the rollup may still be reading the disk
    const rebuilt = await log.summary(everything);
    assert.equal(rebuilt.total.calls, live.total.calls + 1);
    assert.deepEqual(
      rebuilt.backend.filter((b) => b.key !== 'late'),
      live.backend,
    );
    assert.deepEqual(
      rebuilt.model.filter((m) => m.key !== 'm'),
      live.model,
      'every model as before; the new row under its own',
    );
    const today = Math.floor(NOW / DAY_MS) * DAY_MS;
    assert.deepEqual(
      rebuilt.series.filter((p) => p.t !== today),
      live.series.filter((p) => p.t !== today),
    );
  });

  test('retention: pruned days leave the rollup', async (t) => {
    const log = openLog(t, tempStore(), { retentionDays: 3 });
    log.record(callRecord({ ts: NOW - 10 * DAY_MS }));
    log.record(callRecord({ ts: NOW - DAY_MS }));
    await log.flush();
    assert.equal((await log.summary(everything)).total.calls, 2);
    await log.prune(NOW);
    assert.equal((await log.summary(everything)).total.calls, 1);
    assert.equal(log.aggregate('backend')[0].calls, 1);
  });
});
