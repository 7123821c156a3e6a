/**
 * `paid: false` spends nothing: the computed cost is 0, and so is the spend that counts
 * towards `quota_cost_month` (and the aggregates, and /metrics), even when the backend
 * reports a cost of its own — which is still stored, in `upstream_cost_usd`.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { effectiveCost } from '../src/stats/cost.ts';
import { startFake } from './fakes/index.ts';
import { startGateway } from './helpers/gateway.ts';

const MASTER = 'master-key-0123456789';
const admin = { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' };
const monthStart = () => Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1);

async function setup(t: { after: (fn: () => Promise<void>) => void }, paid: boolean) {
  const cloud = await startFake('openrouter', { models: ['acme/chat-large'] });
  const gw = await startGateway([{ name: 'or', url: cloud.url, paid }], { api_key: MASTER });
  t.after(async () => {
    await gw.close();
    await cloud.close();
  });
  const res = await fetch(`${gw.url}/admin/api/users`, {
    method: 'POST',
    headers: admin,
    body: JSON.stringify({ name: 'u', quota_cost_month: 0.0001 }),
  });
  assert.equal(res.status, 201);
  const user = (await res.json()) as { id: number; key: string };
  const chat = async () => {
    const r = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'or/acme/chat-large', messages: [{ role: 'user', content: 'word '.repeat(50) }] }),
    });
    const body = (await r.json()) as { usage?: { cost?: number } };
    return { status: r.status, reportedCost: body.usage?.cost };
  };
  return { gw, user, chat };
}

describe('free backends', () => {
  test('effectiveCost: a free backend spends nothing whatever it reports; rows from before count as paid', () => {
    assert.equal(effectiveCost({ cost_usd: 0, upstream_cost_usd: 0.42, paid: false }), 0);
    assert.equal(effectiveCost({ cost_usd: 0.5, upstream_cost_usd: null, paid: false }), 0);
    assert.equal(effectiveCost({ cost_usd: 0, upstream_cost_usd: 0.42, paid: true }), 0.42);
    assert.equal(effectiveCost({ cost_usd: 0.5, upstream_cost_usd: null }), 0.5);
  });

  test('paid: false reporting a cost: never over a cost quota; the reported cost is kept in its own column', async (t) => {
    const { gw, user, chat } = await setup(t, false);
    const first = await chat();
    assert.equal(first.status, 200);
    assert.ok((first.reportedCost ?? 0) > 0.0001, 'the fake reports more than the whole budget');
    for (let i = 2; i <= 4; i++) assert.equal((await chat()).status, 200, `call ${i} is still within the budget`);
    assert.equal(gw.gateway.callLog.quotas.costSince(user.id, monthStart()), 0);

    const rows = (
      (await (await fetch(`${gw.url}/admin/api/calls?backend=or`, { headers: admin })).json()) as {
        data: { cost_usd: number; upstream_cost_usd: number | null; paid: boolean }[];
      }
    ).data;
    assert.equal(rows.length, 4);
    for (const r of rows) {
      assert.equal(r.cost_usd, 0, 'computed cost');
      assert.equal(r.upstream_cost_usd, first.reportedCost, 'the reported cost is stored');
      assert.equal(r.paid, false);
    }
    await gw.gateway.callLog.flush(); // aggregates read what is on disk
    const stats = (
      (await (await fetch(`${gw.url}/admin/api/stats?group=backend`, { headers: admin })).json()) as {
        data: { key: string; cost_usd: number }[];
      }
    ).data;
    assert.equal(stats.find((s) => s.key === 'or')!.cost_usd, 0, 'nothing spent in the aggregates either');
    const metrics = await (await fetch(`${gw.url}/metrics`, { headers: admin })).text();
    assert.doesNotMatch(metrics, /^llm_gateway_cost_usd_total\{backend="or"\} [1-9]/m);
  });

  test('the same backend with paid: true is refused once the reported cost spent the budget', async (t) => {
    const { gw, user, chat } = await setup(t, true);
    const first = await chat();
    assert.equal(first.status, 200);
    assert.equal(gw.gateway.callLog.quotas.costSince(user.id, monthStart()), first.reportedCost);
    assert.equal((await chat()).status, 429);
  });
});
