/**
 * Usage the gateway estimated (the backend reported none) is marked as such: `usage_estimated`
 * on the call row (GET /admin/api/calls) and a counter of its own on /metrics.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CallOutcome } from '../src/stats/call-outcome.ts';
import { startFake } from './fakes/index.ts';
import { startGateway } from './helpers/gateway.ts';

function outcome(over: Partial<CallOutcome>): CallOutcome {
  return {
    requestId: 'r',
    endpoint: 'chat',
    source: 'tester',
    userId: null,
    requestedModel: 'v/m',
    backend: 'v',
    model: 'm',
    status: 200,
    reason: null,
    startedAt: Date.now(),
    durationMs: 50,
    ttftMs: 10,
    usage: { prompt_tokens: 30, completion_tokens: 7, total_tokens: 37 },
    ...over,
  };
}

function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^(\w+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...m[2].matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (
      Object.entries(labels).every(([k, v]) => got[k] === v) &&
      Object.keys(got).length === Object.keys(labels).length
    )
      return Number(m[3]);
  }
  return undefined;
}

describe('estimated usage', () => {
  test('is flagged on the row and in the admin API, and counted apart on /metrics', async (t) => {
    const fake = await startFake('vllm', { models: ['m'] });
    const gw = await startGateway([{ name: 'v', url: fake.url }]);
    t.after(async () => {
      await gw.close();
      await fake.close();
    });

    gw.gateway.recordOutcome(outcome({ requestId: 'reported' }));
    gw.gateway.recordOutcome(
      outcome({
        requestId: 'estimated',
        usageEstimated: true,
        usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
      }),
    );
    gw.gateway.recordOutcome(
      outcome({ requestId: 'no-usage', usageEstimated: true, usage: undefined, status: 502, reason: 'upstream_error' }),
    );

    const res = await fetch(`${gw.url}/admin/api/calls?limit=10`);
    assert.equal(res.status, 200);
    const rows = (
      (await res.json()) as { data: { request_id: string; usage_estimated: boolean; prompt_tokens: number }[] }
    ).data;
    const byId = new Map(rows.map((r) => [r.request_id, r]));
    assert.equal(byId.get('reported')!.usage_estimated, false);
    assert.equal(byId.get('estimated')!.usage_estimated, true);
    assert.equal(byId.get('estimated')!.prompt_tokens, 12);
    assert.equal(byId.get('no-usage')!.usage_estimated, false, 'no usage at all is nothing estimated');

    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.equal(
      sample(metrics, 'llm_gateway_tokens_total', { backend: 'v', direction: 'in' }),
      42,
      'every token, estimated ones included',
    );
    assert.equal(sample(metrics, 'llm_gateway_tokens_total', { backend: 'v', direction: 'out' }), 12);
    assert.equal(sample(metrics, 'llm_gateway_estimated_tokens_total', { backend: 'v', direction: 'in' }), 12);
    assert.equal(sample(metrics, 'llm_gateway_estimated_tokens_total', { backend: 'v', direction: 'out' }), 5);
    assert.match(metrics, /# TYPE llm_gateway_estimated_tokens_total counter/);
  });
});
