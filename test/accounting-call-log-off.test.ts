/**
 * `call_log: false` writes no call rows, yet both quotas keep working: the calls still feed
 * the per-user counters (quota_usage), which survive a restart.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { CallLog, type CallRecord } from '../src/stats/call-log.ts';
import { REFUSED_BACKEND, RefusalReason } from '../src/stats/record.ts';
import { startFake } from './fakes/index.ts';
import { callRecord } from './helpers/call-record.ts';
import { startGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const MASTER = 'master-key-0123456789';
const admin = { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' };

async function createUser(url: string, body: object): Promise<{ id: number; key: string }> {
  const res = await fetch(`${url}/admin/api/users`, { method: 'POST', headers: admin, body: JSON.stringify(body) });
  assert.equal(res.status, 201);
  return (await res.json()) as { id: number; key: string };
}

async function chat(url: string, key: string, model: string): Promise<number> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'word '.repeat(50) }] }),
  });
  await res.text();
  return res.status;
}

function callRowsOnDisk(storeDir: string): number {
  return onDisk(storeDir).rows;
}

/** What stats.db holds, through a connection of its own. */
function onDisk(storeDir: string): { rows: number; requests: number; cost: number } {
  const db = new Database(join(storeDir, 'stats.db'), { readonly: true });
  try {
    const rows = (db.prepare('SELECT COUNT(*) AS n FROM calls').get() as { n: number }).n;
    const usage = db
      .prepare('SELECT COALESCE(SUM(requests), 0) AS requests, COALESCE(SUM(cost_usd), 0) AS cost FROM quota_usage')
      .get() as { requests: number; cost: number };
    return { rows, ...usage };
  } finally {
    db.close();
  }
}

const NOON = Date.UTC(2026, 2, 15, 12);
const call = (over: Partial<CallRecord> = {}): CallRecord =>
  callRecord({ ts: NOON, cost_usd: 0.25, paid: true, request_body: 'q', response_body: 'a', ...over });

describe('call_log: false', () => {
  test('the call log keeps only the quota counters, written in the background, and switches at once', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'llmgw-nolog-'));
    const log = CallLog.open(dir, {
      flushMs: 10,
      retentionDays: 0,
      captureBodies: true,
      bodyRetentionDays: 0,
      logCalls: false,
    });
    t.after(() => {
      log.close();
      rmSync(dir, { recursive: true, force: true });
    });
    log.record(call());
    log.record(call({ user_id: null })); // no user: nothing to keep
    log.record(call({ backend: REFUSED_BACKEND, status: 404, reason: RefusalReason.unknownModel })); // refused at the gate
    log.record(call({ backend: REFUSED_BACKEND, status: 401, reason: 'invalid_api_key', user_id: null }));
    log.record(call({ status: 502, reason: 'upstream_error', cost_usd: 0 }));
    assert.equal(log.compressing, 0, 'no bodies to compress: there are no rows');
    assert.equal(log.quotas.requestsSince(1, Date.UTC(2026, 2, 15)), 2, 'counted at once');
    assert.equal(log.quotas.costSince(1, Date.UTC(2026, 2, 1)), 0.25);
    await waitFor(() => log.pending === 0, 'written in the background');
    assert.deepEqual(onDisk(dir), { rows: 0, requests: 2, cost: 0.25 });
    assert.equal(log.quotas.requestsSince(1, Date.UTC(2026, 2, 15)), 2, 'and still after the write');

    log.reconfigure({ logCalls: true });
    log.record(call());
    await log.flush();
    assert.deepEqual(onDisk(dir), { rows: 1, requests: 3, cost: 0.5 }, 'back on: rows again');
    assert.equal(log.bodies(log.recent()[0].id)!.request!.toString(), 'q');
  });

  test('the day quota still counts: the third call of a two-a-day user is 429, also after a restart', async (t) => {
    const fake = await startFake('vllm', { models: ['m'] });
    const first = await startGateway([{ name: 'v', url: fake.url }], { api_key: MASTER, call_log: false });
    const user = await createUser(first.url, { name: 'kid', quota_req_day: 2 });
    assert.equal(await chat(first.url, user.key, 'v/mm'), 404, 'a typo costs nothing');
    assert.equal(await chat(first.url, user.key, 'v/m'), 200);
    assert.equal(await chat(first.url, user.key, 'v/m'), 200);
    assert.equal(await chat(first.url, user.key, 'v/m'), 429);
    assert.deepEqual(first.gateway.callLog.recent(), [], 'no call rows');
    await first.app.close();
    assert.equal(callRowsOnDisk(first.storeDir), 0, 'nothing written to calls');

    const again = await startGateway(
      [{ name: 'v', url: fake.url }],
      { api_key: MASTER, call_log: false },
      { storeDir: first.storeDir },
    );
    t.after(async () => {
      await again.close();
      await fake.close();
    });
    assert.equal(await chat(again.url, user.key, 'v/m'), 429, 'the count survived the restart');
  });

  test('the month cost quota still counts: a paid, priced backend is refused once the budget is spent', async (t) => {
    const cloud = await startFake('openrouter', { models: ['acme/chat-large'] });
    const gw = await startGateway([{ name: 'or', url: cloud.url, paid: true }], { api_key: MASTER, call_log: false });
    t.after(async () => {
      await gw.close();
      await cloud.close();
    });
    const user = await createUser(gw.url, { name: 'spender', quota_cost_month: 0.0001 });
    assert.equal(await chat(gw.url, user.key, 'or/acme/chat-large'), 200, 'the call that crosses the budget completes');
    const spent = gw.gateway.callLog.quotas.costSince(
      user.id,
      Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1),
    );
    assert.ok(spent >= 0.0001, `spent ${spent}`);
    assert.equal(await chat(gw.url, user.key, 'or/acme/chat-large'), 429, 'the next one is refused');
    assert.deepEqual(gw.gateway.callLog.recent(), [], 'no call rows');
  });
});
