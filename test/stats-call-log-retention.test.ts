/** What the call log keeps and for how long: pruning of rows and bodies, and the quota counters that outlive them. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { CallLog } from '../src/stats/call-log.ts';
import { DAY_MS } from '../src/stats/period.ts';
import { REFUSED_BACKEND, RefusalReason } from '../src/stats/record.ts';
import { call, NOW, openLog, QUIET, rowsOnDisk, tempStore, turn } from './helpers/call-log-rig.ts';

describe('retention', () => {
  test('prune() drops old rows, and bodies sooner than their rows', async (t) => {
    let now = NOW;
    const { log } = openLog(t, { captureBodies: true, retentionDays: 30, bodyRetentionDays: 7, now: () => now });
    for (const age of [40, 10, 1])
      log.record(call({ ts: NOW - age * DAY_MS, request_id: `age-${age}`, request_body: 'q', response_body: 'a' }));
    await log.flush();

    assert.deepEqual(await log.prune(), { rows: 1, bodies: 2 });
    const rows = log.recent();
    assert.deepEqual(
      rows.map((r) => r.request_id),
      ['age-1', 'age-10'],
    );
    assert.equal(log.bodies(rows.find((r) => r.request_id === 'age-10')!.id), null);
    assert.equal(log.bodies(rows.find((r) => r.request_id === 'age-1')!.id)!.request!.toString(), 'q');
    assert.deepEqual(await log.prune(), { rows: 0, bodies: 0 }, 'idempotent');

    now = NOW + 30 * DAY_MS; // age-1 is now 31 days old: row and body go together
    assert.deepEqual(await log.prune(), { rows: 2, bodies: 1 });
    assert.deepEqual(log.recent(), []);
  });

  test('a prune runs in slices, one short transaction per event-loop turn', async (t) => {
    const { log, file } = openLog(t, { retentionDays: 30, now: () => NOW });
    for (let i = 0; i < 1_200; i++) log.record(call({ ts: NOW - 40 * DAY_MS }));
    log.record(call({ request_id: 'young' }));
    await log.flush();
    const pruning = log.prune();
    assert.equal(rowsOnDisk(file), 701, 'the first slice (500 rows) before prune() even returned');
    await turn();
    assert.equal(rowsOnDisk(file), 201, 'the next one a turn later');
    assert.deepEqual(await pruning, { rows: 1_200, bodies: 0 });
    assert.deepEqual(
      log.recent().map((r) => r.request_id),
      ['young'],
    );
  });

  test('retention 0 keeps rows forever', async (t) => {
    const { log } = openLog(t, { retentionDays: 0, captureBodies: true, bodyRetentionDays: 14 });
    log.record(call({ ts: NOW - 3650 * DAY_MS, request_body: 'old' }));
    await log.flush();
    assert.deepEqual(await log.prune(NOW), { rows: 0, bodies: 1 });
    assert.equal(log.recent().length, 1);
  });

  test('quota counters outlive pruned rows', async (t) => {
    const { log } = openLog(t, { retentionDays: 1 });
    const monthStart = Date.UTC(2026, 2, 1);
    log.record(call({ ts: monthStart + DAY_MS, cost_usd: 0.5 }));
    await log.flush();
    assert.equal((await log.prune(NOW)).rows, 1);
    assert.equal(log.quotas.costSince(1, monthStart), 0.5);
    assert.equal(log.quotas.requestsSince(1, monthStart), 1);
  });
});

describe('quota counters', () => {
  test('count queued and written calls, per user, and survive reopening', async (t) => {
    const dir = tempStore();
    const dayStart = Date.UTC(2026, 2, 15);
    const first = CallLog.open(dir, QUIET);
    first.record(call({ ts: dayStart - 1, cost_usd: 100 })); // yesterday
    first.record(call({ ts: dayStart, cost_usd: 0.25 }));
    await first.flush();
    first.record(call({ ts: NOW, cost_usd: 0.5, upstream_cost_usd: 0.75 }));
    first.record(call({ ts: NOW, user_id: 2, cost_usd: 9 }));
    first.record(call({ ts: NOW, backend: REFUSED_BACKEND, status: 429, reason: RefusalReason.quotaDay }));
    first.record(call({ ts: NOW, backend: REFUSED_BACKEND, status: 503, reason: RefusalReason.parkTimeout }));

    assert.equal(first.pending, 4);
    assert.equal(first.quotas.requestsSince(1, dayStart), 3, 'written + queued, minus the quota refusal');
    assert.equal(first.quotas.costSince(1, dayStart), 1);
    assert.equal(first.quotas.requestsSince(2, dayStart), 1);
    first.close();

    const { log } = openLog(t, {}, dir);
    assert.equal(log.quotas.requestsSince(1, dayStart), 3);
    assert.equal(log.quotas.costSince(1, dayStart), 1);
    assert.equal(log.quotas.requestsSince(1, dayStart - DAY_MS), 4);
    assert.equal(log.quotas.requestsSince(3, dayStart), 0);
  });

  test('are seeded from quota_usage when the log opens (not from the call rows)', (t) => {
    const dir = tempStore();
    CallLog.open(dir, QUIET).close(); // creates stats.db
    const day = Date.UTC(2026, 2, 15) / DAY_MS;
    const db = new Database(join(dir, 'stats.db'));
    const insert = db.prepare('INSERT INTO quota_usage (user_id, day, requests, cost_usd) VALUES (?, ?, ?, ?)');
    insert.run(4, day, 17, 1.5);
    insert.run(4, day - 20, 3, 0.25); // February 23
    insert.run(5, day, 2, 0);
    db.close();

    const { log } = openLog(t, {}, dir);
    assert.equal(log.quotas.requestsSince(4, Date.UTC(2026, 2, 15)), 17);
    assert.equal(log.quotas.costSince(4, Date.UTC(2026, 2, 1)), 1.5, 'February is not March');
    assert.equal(log.quotas.costSince(4, Date.UTC(2026, 1, 1)), 1.75);
    assert.equal(log.quotas.requestsSince(5, Date.UTC(2026, 2, 15)), 2);
    assert.deepEqual(log.recent(), [], 'no call rows at all');
  });

  test('roll over at UTC midnight and at the month, by the injected clock', async (t) => {
    let now = Date.UTC(2026, 11, 31, 23, 59, 59); // the last second of the year
    const { log } = openLog(t, { now: () => now });
    const user = { id: 3, quota_req_day: 2, quota_cost_month: 0.8 };
    const admitted = () => {
      const a = log.quotas.admit(user, now);
      if (a.ok) {
        log.record(call({ ts: now, user_id: 3, cost_usd: 0.3 }));
        a.done();
      }
      return a;
    };
    assert.equal(admitted().ok, true);
    assert.equal(admitted().ok, true);
    const refused = admitted();
    assert.ok(!refused.ok);
    assert.equal(refused.kind, 'day');
    assert.equal(refused.retryAfterSec, 1);

    now += 1_000; // 2027-01-01T00:00:00Z: a new day and a new month
    assert.equal(log.quotas.requestsSince(3, Date.UTC(2027, 0, 1)), 0);
    assert.equal(admitted().ok, true);
    assert.equal(admitted().ok, true);
    assert.equal(log.quotas.costSince(3, Date.UTC(2027, 0, 1)), 0.6);
    now += DAY_MS; // January 2nd: the day limit is free again, the month's spend carries on
    assert.equal(admitted().ok, true);
    const broke = admitted();
    assert.ok(!broke.ok);
    assert.equal(broke.kind, 'month', 'January spent $0.90 of $0.80');

    now += 101 * DAY_MS; // past the 100 days of counters kept: the prune forgets them, in memory and on disk
    await log.flush();
    await log.prune();
    assert.equal(log.quotas.requestsSince(3, Date.UTC(2026, 11, 1)), 0);
  });
});
