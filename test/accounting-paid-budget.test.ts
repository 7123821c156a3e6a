/**
 * `paid_budget_usd_month`: what paid backends spend this UTC month, every caller together, is
 * counted from each call's effective cost, kept per day in stats.db (also with `call_log:
 * false`) and seeded back at boot. Once spent, a call with an unpaid candidate is admitted and
 * goes to (or parks for) the unpaid backend; a call with only paid candidates is a 429
 * `paid_budget_reached`. The rule, the counters on disk, an upgrade of an old stats.db, and
 * over real sockets with the `openai` client against a fake OpenRouter that reports its cost.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { CallLog, type CallLogOptions, type CallRecord } from '../src/stats/call-log.ts';
import { PaidGate, PaidSpend } from '../src/stats/paid-budget.ts';
import { QuotaGate } from '../src/stats/quota.ts';
import { DAY_MS, startOfNextUtcMonth } from '../src/stats/period.ts';
import { STATS_MIGRATIONS } from '../src/store/calls-migrations.ts';
import { openDatabase } from '../src/store/db.ts';
import { startFake } from './fakes/index.ts';
import { callRecord } from './helpers/call-record.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { tempDirs } from './helpers/temp-dirs.ts';
import { waitFor } from './helpers/wait.ts';

const MASTER = 'master-key-0123456789';
const NOON = Date.UTC(2026, 2, 15, 12);
const OPTS: CallLogOptions = { flushMs: 60_000, retentionDays: 0, captureBodies: false, bodyRetentionDays: 14 };
const MODEL = 'acme/chat-large'; // served by both the local box and the paid cloud below
/** Less than one call of MODEL on the fake OpenRouter costs (~$0.0003): one call spends it. */
const TINY_BUDGET = 0.0001;

const tempStore = tempDirs('llmgw-budget-');
const paidCall = (over: Partial<CallRecord> = {}): CallRecord =>
  callRecord({ ts: NOON, paid: true, cost_usd: 0.25, ...over });

describe('the paid budget: the rule', () => {
  const gateAt = (now: number, budget: number, spend = new PaidSpend(), quotas = new QuotaGate()) =>
    new PaidGate({ spend, quotas, budgetUsd: () => budget, now: () => now });

  test('allows until the month spend reaches the budget; the user cost quota too; 0 is no budget', () => {
    const spend = new PaidSpend();
    const quotas = new QuotaGate();
    const day = Math.floor(NOON / DAY_MS);
    spend.count({ day: day - 30, cost: 50 }); // February: another month
    spend.count({ day, cost: 0.7 });
    const user = { id: 4, quota_req_day: null, quota_cost_month: 0.5 };
    assert.equal(gateAt(NOON, 1, spend, quotas).allows(), true, '$0.70 of $1');
    assert.equal(gateAt(NOON, 1, spend, quotas).allows(user), true, 'the user spent nothing yet');
    quotas.count({ user_id: 4, day, requests: 1, cost: 0.5 });
    assert.equal(gateAt(NOON, 1, spend, quotas).allows(user), false, 'its own quota is spent');
    assert.equal(gateAt(NOON, 1, spend, quotas).allows({ ...user, id: 5 }), true, 'per user');
    spend.count({ day, cost: 0.3 - 1e-12 }); // float drift: $1 reached
    assert.equal(gateAt(NOON, 1, spend, quotas).allows(), false);
    assert.equal(gateAt(NOON, 0, spend, quotas).allows(), true, '0: no budget');
    assert.equal(gateAt(Date.UTC(2026, 3, 1), 1, spend, quotas).allows(), true, 'a new month');
  });

  test('a spent budget refuses until the next UTC month, naming the key', () => {
    const spend = new PaidSpend();
    spend.count({ day: Math.floor(NOON / DAY_MS), cost: 2 });
    const refusal = gateAt(NOON, 2, spend).budgetRefusal()!;
    assert.equal(refusal.retryAfterSec, Math.ceil((Date.UTC(2026, 3, 1) - NOON) / 1000));
    assert.match(refusal.message, /paid_budget_usd_month/);
    assert.match(refusal.message, /2026-04-01T00:00:00Z/);
    assert.deepEqual(gateAt(NOON, 2, spend).status(), { budget_usd: 2, spent_usd: 2, month: '2026-03' });
    assert.equal(gateAt(NOON, 3, spend).budgetRefusal(), undefined);
  });

  test('every caller spends, a free backend does not; queued, on disk, reopened, with and without rows', async () => {
    const dir = tempStore();
    const first = CallLog.open(dir, { ...OPTS, logCalls: false });
    first.record(paidCall()); // a user
    first.record(paidCall({ user_id: null, source: 'master' })); // the master key or an anonymous caller
    first.record(paidCall({ paid: false, upstream_cost_usd: 9 })); // a free backend reporting a cost
    first.record(paidCall({ user_id: null, upstream_cost_usd: 0.5 })); // the upstream's own figure counts
    const month = Date.UTC(2026, 2, 1);
    assert.equal(first.paidSpend.spentSince(month), 1, 'counted at once');
    await first.flush();
    first.reconfigure({ logCalls: true });
    first.record(paidCall({ user_id: null }));
    await first.flush();
    assert.equal(first.recent().length, 1, 'rows only while the call log is on');
    first.close();
    const again = CallLog.open(dir, OPTS);
    try {
      assert.equal(again.paidSpend.spentSince(month), 1.25, 'seeded from paid_spend');
      assert.equal(again.quotas.costSince(1, month), 0.25, 'the user counters are apart');
      await again.prune(NOON + 101 * DAY_MS);
      assert.equal(again.paidSpend.spentSince(0), 0, 'pruned with the quota counters');
    } finally {
      again.close();
    }
  });

  test('a stats.db from before the budget keeps its month: seeded from the call rows and the user counters', () => {
    const dir = tempStore();
    const old = openDatabase(
      join(dir, 'stats.db'),
      STATS_MIGRATIONS.filter((m) => m.version <= 3),
    );
    const insert = old.prepare(
      `INSERT INTO calls (ts, request_id, duration_ms, endpoint, source, user_id, backend, status, cost_usd,
         upstream_cost_usd, paid)
       VALUES (?, ?, 1, '/v1/chat/completions', 's', ?, 'b', 200, ?, ?, ?)`,
    );
    insert.run(NOON, 'a', null, 0.25, null, 1); // the master key
    insert.run(NOON, 'b', 1, 0.1, 0.5, 1); // a user: the upstream's figure
    insert.run(NOON, 'c', null, 3, 3, 0); // a free backend
    const day = Math.floor(NOON / DAY_MS);
    old.prepare('INSERT INTO quota_usage (user_id, day, requests, cost_usd) VALUES (1, ?, 1, 0.5)').run(day);
    // a day of the call log off: only the user counters knew it
    old.prepare('INSERT INTO quota_usage (user_id, day, requests, cost_usd) VALUES (1, ?, 4, 2)').run(day - 1);
    old.close();
    const log = CallLog.open(dir, OPTS);
    try {
      assert.equal(log.paidSpend.spentSince(NOON), 0.75, 'that day: every row that spent');
      assert.equal(log.paidSpend.spentSince(NOON - DAY_MS), 2.75, 'the day before: its users counters');
    } finally {
      log.close();
    }
  });
});

/** A local box and a paid cloud, both serving MODEL; the local box answers one call at a time. */
async function fleet(t: { after: (fn: () => Promise<void>) => void }, overrides: Record<string, unknown> = {}) {
  const local = await startFake('vllm', { models: [MODEL] });
  const cloud = await startFake('openrouter', { models: [MODEL] });
  const gw = await startGateway(
    [
      { name: 'local', url: local.url, max_concurrent: 1 },
      { name: 'or', url: cloud.url, paid: true },
    ],
    { api_key: MASTER, paid_budget_usd_month: TINY_BUDGET, ...overrides },
  );
  t.after(async () => {
    await gw.close();
    await local.close();
    await cloud.close();
  });
  return { gw, local, cloud };
}

const localInflight = (gw: TestGateway) =>
  gw.gateway.scheduler.snapshot().backends.find((b) => b.name === 'local')?.inflight;

const client = (gw: TestGateway, key = MASTER) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });

/** A chat call and the backend that answered it (`x-gateway-backend`). */
async function ask(gw: TestGateway, model: string, key = MASTER): Promise<string | null> {
  const { response } = await client(gw, key)
    .chat.completions.create({ model, messages: [{ role: 'user', content: 'word '.repeat(50) }] })
    .withResponse();
  return response.headers.get('x-gateway-backend');
}

async function refusal(gw: TestGateway, model: string, key = MASTER): Promise<InstanceType<typeof OpenAI.APIError>> {
  const err = await ask(gw, model, key).then(
    () => assert.fail('expected a refusal'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof OpenAI.APIError, String(err));
  return err;
}

/** Spends the month's budget with one paid call (it completes: spend is checked before a call). */
async function spendBudget(gw: TestGateway, key = MASTER): Promise<void> {
  assert.equal(await ask(gw, `or/${MODEL}`, key), 'or', 'the call that crosses the budget completes');
  assert.ok(gw.gateway.paidGate.status().spent_usd >= TINY_BUDGET);
}

describe('the paid budget over HTTP', () => {
  test('spent: a paid-only model is 429 paid_budget_reached; one with a local box is answered there', async (t) => {
    const { gw } = await fleet(t);
    assert.equal(gw.gateway.paidGate.allows(), true);
    await spendBudget(gw);
    assert.equal(gw.gateway.paidGate.allows(), false, 'the gate closed for every caller');

    const err = await refusal(gw, `or/${MODEL}`);
    assert.equal(err.status, 429);
    assert.equal(err.code, 'paid_budget_reached');
    assert.equal(err.type, 'insufficient_quota');
    assert.match(err.message, /paid_budget_usd_month/);
    const retryAfter = Number(err.headers?.get('retry-after'));
    const untilNextMonth = (startOfNextUtcMonth(Date.now()) - Date.now()) / 1000;
    assert.ok(retryAfter >= untilNextMonth - 5 && retryAfter <= untilNextMonth + 5, `Retry-After ${retryAfter}`);

    assert.equal(await ask(gw, MODEL), 'local', 'served by the unpaid box, not refused');
    const rows = gw.gateway.callLog.recent();
    assert.equal(rows[1].reason, 'paid_budget_reached', 'the refusal is on record');
    const shown = await fetch(`${gw.url}/admin/api/paid-budget`, { headers: { authorization: `Bearer ${MASTER}` } });
    const status = (await shown.json()) as { budget_usd: number; spent_usd: number; month: string };
    assert.equal(status.budget_usd, TINY_BUDGET);
    assert.equal(status.month, new Date().toISOString().slice(0, 7));
  });

  test('no budget (0): paid calls go on however much was spent', async (t) => {
    const { gw } = await fleet(t, { paid_budget_usd_month: 0 });
    for (let i = 0; i < 3; i++) assert.equal(await ask(gw, `or/${MODEL}`), 'or');
  });

  test('call_log: false: the spend survives a restart', async (t) => {
    const { gw, local, cloud } = await fleet(t, { call_log: false });
    await spendBudget(gw);
    await gw.app.close();
    const again = await startGateway(
      [
        { name: 'local', url: local.url, max_concurrent: 1 },
        { name: 'or', url: cloud.url, paid: true },
      ],
      { api_key: MASTER, paid_budget_usd_month: TINY_BUDGET, call_log: false },
      { storeDir: gw.storeDir },
    );
    t.after(() => again.app.close());
    assert.equal((await refusal(again, `or/${MODEL}`)).code, 'paid_budget_reached');
    assert.deepEqual(again.gateway.callLog.recent(), [], 'no call rows');
  });

  test('spent while the local box is busy: the call parks for it instead of going paid', async (t) => {
    const { gw, local } = await fleet(t);
    await spendBudget(gw);
    local.setKnobs({ latencyMs: 400 });
    const busy = ask(gw, `local/${MODEL}`);
    await waitFor(() => localInflight(gw) === 1, 'local busy');
    const [served, first] = await Promise.all([ask(gw, MODEL), busy]);
    assert.equal(first, 'local');
    assert.equal(served, 'local', 'parked for the unpaid box');
  });
});

describe("a user's cost quota over HTTP", () => {
  async function spender(gw: TestGateway): Promise<string> {
    const res = await fetch(`${gw.url}/admin/api/users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'spender', quota_cost_month: TINY_BUDGET }),
    });
    assert.equal(res.status, 201);
    return ((await res.json()) as { key: string }).key;
  }

  test('spent: a paid-only model is refused as before; one with a local box is answered there', async (t) => {
    const { gw } = await fleet(t, { paid_budget_usd_month: 0 });
    const key = await spender(gw);
    await spendBudget(gw, key);
    const user = gw.gateway.users.list()[0];
    assert.equal(gw.gateway.paidGate.allows(user), false, 'closed for this user');
    assert.equal(gw.gateway.paidGate.allows(), true, 'open for others');

    const err = await refusal(gw, `or/${MODEL}`, key);
    assert.equal(err.status, 429);
    assert.equal(err.code, 'insufficient_quota');
    assert.match(err.message, /Monthly cost quota reached/);
    assert.ok(Number(err.headers?.get('retry-after')) > 0);

    assert.equal(await ask(gw, MODEL, key), 'local', 'served by the unpaid box, not refused');
    assert.equal(await ask(gw, `or/${MODEL}`), 'or', 'the master key still goes paid');
  });

  test("spent while the local box is busy: the user's call parks for it instead of going paid", async (t) => {
    const { gw, local } = await fleet(t, { paid_budget_usd_month: 0 });
    const key = await spender(gw);
    await spendBudget(gw, key);
    local.setKnobs({ latencyMs: 400 });
    const busy = ask(gw, `local/${MODEL}`);
    await waitFor(() => localInflight(gw) === 1, 'local busy');
    const [served, first] = await Promise.all([ask(gw, MODEL, key), busy]);
    assert.equal(first, 'local');
    assert.equal(served, 'local', 'parked for the unpaid box');
  });
});
