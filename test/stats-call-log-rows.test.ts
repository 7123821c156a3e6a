/** The call log's rows (tokens, cache split, cost, refusals) and its aggregates over what is on disk. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { computeCost } from '../src/stats/cost.ts';
import { DAY_MS } from '../src/stats/period.ts';
import { REFUSED_BACKEND, RefusalReason, STATUS_CLIENT_CLOSED } from '../src/stats/record.ts';
import { usageFromAnthropic, usageFromOpenAI } from '../src/wire/usage.ts';
import { call, NOW, openLog, SONNET, usageColumns } from './helpers/call-log-rig.ts';

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
