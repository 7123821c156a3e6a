/**
 * Calls refused at the gate (bad key, unknown or forbidden model, malformed body) do not count
 * towards `quota_req_day`; calls that reached the scheduler do, however they ended. Checked on
 * the rule itself, on the quota counters (queued, on disk, reopened), on a
 * stats.db written by the previous rule, and over real sockets.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { CallLog, type CallLogOptions, type CallRecord } from '../src/stats/call-log.ts';
import { STATS_MIGRATIONS } from '../src/store/calls-migrations.ts';
import { DAY_MS, startOfUtcDay } from '../src/stats/period.ts';
import { countsTowardQuota } from '../src/stats/quota.ts';
import { REFUSED_BACKEND, RefusalReason, STATUS_CLIENT_CLOSED } from '../src/stats/record.ts';
import { openDatabase } from '../src/store/db.ts';
import { startFake } from './fakes/index.ts';
import { callRecord } from './helpers/call-record.ts';
import { startGateway } from './helpers/gateway.ts';
import { tempDirs } from './helpers/temp-dirs.ts';

const NOON = Date.UTC(2026, 2, 15, 12);
const DAY = Date.UTC(2026, 2, 15);
const OPTS: CallLogOptions = { flushMs: 60_000, retentionDays: 0, captureBodies: false, bodyRetentionDays: 14 };

const tempStore = tempDirs('llmgw-acct-');

const call = (over: Partial<CallRecord> = {}): CallRecord => callRecord({ ts: NOON, ...over });

const refused = (status: number, reason: string) => call({ backend: REFUSED_BACKEND, model: null, status, reason });

/** Refused at the gate: none of these counts. */
const GATE = [
  refused(400, 'invalid_request'),
  refused(400, 'missing_model'),
  refused(401, 'invalid_api_key'),
  refused(403, 'admin_required'),
  refused(404, RefusalReason.unknownModel),
  refused(413, 'request_too_large'),
  refused(429, RefusalReason.quotaDay),
  refused(429, RefusalReason.quotaMonth),
];
/** Reached the scheduler: every one counts. */
const SCHEDULED = [
  call(),
  call({ status: 502, reason: 'upstream_error' }),
  call({ status: 429, reason: 'upstream_error' }),
  call({ status: STATUS_CLIENT_CLOSED, reason: 'client_closed' }),
  refused(503, RefusalReason.parkTimeout),
  refused(503, RefusalReason.noBackend),
  refused(504, 'upstream_timeout'),
  refused(502, 'upstream_unreachable'),
  refused(STATUS_CLIENT_CLOSED, 'client_closed_while_parked'),
];

describe('gate refusals and quotas', () => {
  test('the rule: refused at the gate does not count, reached the scheduler does', () => {
    for (const rec of GATE) assert.equal(countsTowardQuota(rec), false, `${rec.status} ${rec.reason}`);
    for (const rec of SCHEDULED)
      assert.equal(countsTowardQuota(rec), true, `${rec.backend} ${rec.status} ${rec.reason}`);
  });

  test('the quota counters count the same queued and on disk, and after reopening', async (t) => {
    const dir = tempStore();
    const first = CallLog.open(dir, OPTS);
    for (const rec of [...GATE, ...SCHEDULED]) first.record(rec);
    assert.equal(first.quotas.requestsSince(1, DAY), SCHEDULED.length, 'queued');
    await first.flush();
    assert.equal(first.pending, 0);
    assert.equal(first.quotas.requestsSince(1, DAY), SCHEDULED.length, 'on disk');
    first.close();
    const log = CallLog.open(dir, OPTS);
    t.after(() => log.close());
    assert.equal(log.quotas.requestsSince(1, DAY), SCHEDULED.length, 'seeded from quota_usage');
  });

  test('a stats.db written under the old rule loses its gate refusals from the counters on upgrade', () => {
    const dir = tempStore();
    const file = join(dir, 'stats.db');
    const old = openDatabase(
      file,
      STATS_MIGRATIONS.filter((m) => m.version === 1),
    );
    const insert = old.prepare(
      `INSERT INTO calls (ts, request_id, duration_ms, endpoint, source, user_id, backend, status, reason)
       VALUES (?, ?, 1, '/v1/chat/completions', 'kid', 1, ?, ?, ?)`,
    );
    insert.run(NOON, 'a', 'b', 200, null);
    insert.run(NOON, 'b', REFUSED_BACKEND, 404, 'unknown_model'); // counted by the old rule
    insert.run(NOON, 'c', REFUSED_BACKEND, 503, 'park_timeout');
    insert.run(NOON, 'd', REFUSED_BACKEND, 429, 'quota_day'); // never counted
    insert.run(NOON - DAY_MS, 'e', REFUSED_BACKEND, 400, 'invalid_request'); // the day before
    old
      .prepare('INSERT INTO quota_usage (user_id, day, requests, cost_usd) VALUES (1, ?, ?, 0)')
      .run((NOON / DAY_MS) | 0, 3);
    old
      .prepare('INSERT INTO quota_usage (user_id, day, requests, cost_usd) VALUES (1, ?, ?, 0)')
      .run(((NOON / DAY_MS) | 0) - 1, 1);
    old.close();

    const log = CallLog.open(dir, OPTS);
    try {
      assert.equal(log.quotas.requestsSince(1, DAY), 2, 'the answered call and the park timeout');
      assert.equal(log.quotas.requestsSince(1, DAY - DAY_MS), 2, 'the day before: its refusal is gone too');
    } finally {
      log.close();
    }
  });

  test('over HTTP: a typo, a forbidden model, a bad body and a bad key leave three allowed calls three', async (t) => {
    const fake = await startFake('vllm', { models: ['m', 'secret'] });
    const gw = await startGateway([{ name: 'v', url: fake.url }], { api_key: 'master-key-0123456789' });
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    const admin = { authorization: 'Bearer master-key-0123456789', 'content-type': 'application/json' };
    const created = await fetch(`${gw.url}/admin/api/users`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ name: 'kid', allow: ['v/m'], quota_req_day: 3 }),
    });
    assert.equal(created.status, 201);
    const user = (await created.json()) as { id: number; key: string };
    const send = async (body: unknown, key = user.key) => {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      await res.text();
      return res.status;
    };
    const ok = { model: 'v/m', messages: [{ role: 'user', content: 'x' }] };

    assert.equal(await send({ ...ok, model: 'v/mm' }), 404, 'a typo');
    assert.equal(await send({ ...ok, model: 'v/secret' }), 404, 'outside the allow-list');
    assert.equal(await send([ok]), 400, 'not a JSON object');
    assert.ok([400, 404].includes(await send({ messages: ok.messages })), 'no model'); // either way a gate refusal
    assert.equal(await send(ok, 'sk-wrong-key-000000000000'), 401, 'a bad key');
    for (let i = 1; i <= 3; i++) assert.equal(await send(ok), 200, `allowed call ${i}`);
    assert.equal(await send(ok), 429, 'the fourth allowed call is over the quota');
    assert.equal(gw.gateway.callLog.quotas.requestsSince(user.id, startOfUtcDay(Date.now())), 3);
    const mine = gw.gateway.callLog.recent({ user_id: user.id });
    assert.ok(
      mine.some((r) => r.status === 404) && mine.some((r) => r.status === 400),
      'the refusals are still on record',
    );
  });
});
