import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CallLog, type CallLogOptions, type CallRecord } from '../src/stats/call-log.ts';
import { checkQuota, QuotaGate, type QuotaUser } from '../src/stats/quota.ts';
import { REFUSED_BACKEND, RefusalReason } from '../src/stats/record.ts';
import { tempDirs } from './helpers/temp-dirs.ts';

const NOON = Date.UTC(2026, 2, 15, 12); // 2026-03-15T12:00:00Z, 12 h before the day rolls over
const OPTS: CallLogOptions = { flushMs: 60_000, retentionDays: 0, captureBodies: false, bodyRetentionDays: 14 };

const tempStore = tempDirs('llmgw-quota-');

function call(user_id: number, ts: number, over: Partial<CallRecord> = {}): CallRecord {
  return {
    ts,
    request_id: `r-${ts}-${Math.random()}`,
    duration_ms: 10,
    ttft_ms: null,
    endpoint: '/v1/chat/completions',
    source: 'u',
    user_id,
    requested_model: 'm',
    model: 'm',
    backend: 'b',
    status: 200,
    reason: null,
    prompt_tokens: 1,
    completion_tokens: 1,
    cached_tokens: 0,
    cache_write_tokens: 0,
    reasoning: null,
    cost_usd: 0,
    upstream_cost_usd: null,
    ...over,
  };
}

/** What the request path does: check, then log the call or the quota refusal. */
function attempt(log: CallLog, user: QuotaUser, now: number, cost = 0) {
  const verdict = checkQuota(user, log.quotas, now);
  if (verdict.ok) log.record(call(user.id, now, { cost_usd: cost }));
  else {
    const reason = verdict.kind === 'day' ? RefusalReason.quotaDay : RefusalReason.quotaMonth;
    log.record(call(user.id, now, { backend: REFUSED_BACKEND, status: 429, reason }));
  }
  return verdict;
}

describe('daily request quota', () => {
  test('the N-th call passes, the N+1-th is refused, refusals do not extend it, and it survives restart', () => {
    const dir = tempStore();
    const user: QuotaUser = { id: 7, quota_req_day: 3, quota_cost_month: null };
    let log = CallLog.open(dir, OPTS);
    try {
      for (let i = 1; i <= 3; i++) assert.deepEqual(attempt(log, user, NOON + i), { ok: true }, `call ${i}`);
      assert.equal(log.pending, 3, 'nothing flushed yet: the queue counts');

      const refused = attempt(log, user, NOON + 4);
      assert.equal(refused.ok, false);
      assert.ok(!refused.ok);
      assert.equal(refused.kind, 'day');
      assert.equal(refused.retryAfterSec, 12 * 3600);
      assert.match(refused.message, /3 requests per day.*2026-03-16T00:00:00Z/);

      for (let i = 0; i < 5; i++) attempt(log, user, NOON + 10 + i); // hammering a locked key
      assert.equal(log.quotas.requestsSince(7, Date.UTC(2026, 2, 15)), 3, 'quota refusals are not counted');

      log.close();
      log = CallLog.open(dir, OPTS);
      assert.equal(checkQuota(user, log.quotas, NOON + 100).ok, false, 'still locked after a restart');
      assert.equal(checkQuota({ ...user, id: 8 }, log.quotas, NOON).ok, true, 'other users are not affected');

      const midnight = Date.UTC(2026, 2, 16);
      assert.equal(checkQuota(user, log.quotas, midnight - 1).ok, false);
      assert.deepEqual(checkQuota(user, log.quotas, midnight), { ok: true }, 'a new UTC day');
    } finally {
      log.close();
    }
  });

  test('failed and otherwise refused calls count; calls in flight count when passed', () => {
    const log = CallLog.open(tempStore(), OPTS);
    try {
      const user: QuotaUser = { id: 1, quota_req_day: 3, quota_cost_month: null };
      log.record(call(1, NOON, { status: 502 }));
      log.record(call(1, NOON, { backend: REFUSED_BACKEND, status: 503, reason: RefusalReason.parkTimeout }));
      assert.equal(checkQuota(user, log.quotas, NOON).ok, true);
      assert.equal(checkQuota(user, log.quotas, NOON, 1).ok, false);
    } finally {
      log.close();
    }
  });

  test('Retry-After counts whole seconds to midnight, at least 1', () => {
    const used = { requestsSince: () => 1, costSince: () => 0 };
    const user: QuotaUser = { id: 1, quota_req_day: 1, quota_cost_month: null };
    const verdict = (now: number) => {
      const v = checkQuota(user, used, now);
      assert.ok(!v.ok);
      return v.retryAfterSec;
    };
    assert.equal(verdict(Date.UTC(2026, 2, 15, 23, 59, 59, 500)), 1);
    assert.equal(verdict(Date.UTC(2026, 2, 15, 23, 59, 58, 999)), 2);
    assert.equal(verdict(Date.UTC(2026, 2, 15)), 86_400);
  });
});

describe('the quota gate', () => {
  test('admitted calls count as running until done (idempotent); a refusal admits nothing', () => {
    const gate = new QuotaGate();
    const user: QuotaUser = { id: 5, quota_req_day: 2, quota_cost_month: null };
    const first = gate.admit(user, NOON);
    const second = gate.admit(user, NOON);
    assert.ok(first.ok && second.ok);
    assert.equal(gate.inflight(5), 2);
    const third = gate.admit(user, NOON);
    assert.ok(!third.ok, 'two running reach a limit of two');
    assert.equal(gate.inflight(5), 2);
    first.done();
    first.done();
    assert.equal(gate.inflight(5), 1, 'done() twice ends one call');
    gate.count({ user_id: 5, day: (NOON / 86_400_000) | 0, requests: 1, cost: 0 }); // the first call, on record
    assert.equal(gate.admit(user, NOON).ok, false, 'one on record + one running');
    second.done();
    assert.equal(gate.inflight(5), 0);
    assert.equal(gate.admit({ ...user, id: 6 }, NOON).ok, true, 'per user');
  });
});

describe('monthly cost quota', () => {
  test('refused once spend reaches the budget; upstream cost counts; other months do not', async () => {
    const log = CallLog.open(tempStore(), OPTS);
    try {
      const user: QuotaUser = { id: 3, quota_req_day: null, quota_cost_month: 1 };
      log.record(call(3, Date.UTC(2026, 1, 28, 23, 59, 59), { cost_usd: 50 })); // February
      log.record(call(3, Date.UTC(2026, 2, 1), { cost_usd: 0.25 }));
      await log.flush();
      log.record(call(3, Date.UTC(2026, 2, 2), { cost_usd: 0.1, upstream_cost_usd: 0.25 }));
      log.record(call(3, Date.UTC(2026, 2, 3), { cost_usd: 0.2 }));
      assert.deepEqual(checkQuota(user, log.quotas, NOON), { ok: true }, '$0.70 of $1');

      log.record(call(3, NOON, { cost_usd: 0.3 }));
      const v = checkQuota(user, log.quotas, NOON + 1);
      assert.ok(!v.ok);
      assert.equal(v.kind, 'month');
      assert.equal(v.retryAfterSec, Math.ceil((Date.UTC(2026, 3, 1) - (NOON + 1)) / 1000));
      assert.match(v.message, /2026-04-01T00:00:00Z/);
    } finally {
      log.close();
    }
  });

  test('ten calls of $0.10 reach a $1 budget despite float drift', () => {
    const spent = Array.from({ length: 10 }, () => 0.1).reduce((a, b) => a + b, 0);
    assert.notEqual(spent, 1, 'the drift this guards against');
    const v = checkQuota(
      { id: 1, quota_req_day: null, quota_cost_month: 1 },
      { requestsSince: () => 0, costSince: () => spent },
      NOON,
    );
    assert.equal(v.ok, false);
  });

  test('December rolls over into January', () => {
    const now = Date.UTC(2026, 11, 31, 23, 59, 30);
    const v = checkQuota(
      { id: 1, quota_req_day: null, quota_cost_month: 5 },
      { requestsSince: () => 0, costSince: () => 5 },
      now,
    );
    assert.ok(!v.ok);
    assert.equal(v.retryAfterSec, 30);
    assert.match(v.message, /2027-01-01T00:00:00Z/);
  });

  test('costSince is asked from the start of the UTC month', () => {
    const asked: number[] = [];
    const log = { requestsSince: () => 0, costSince: (_id: number, since: number) => (asked.push(since), 0) };
    checkQuota({ id: 1, quota_req_day: null, quota_cost_month: 5 }, log, NOON);
    assert.deepEqual(asked, [Date.UTC(2026, 2, 1)]);
  });
});

test('null or non-positive quotas are unlimited and not even counted', () => {
  const log = {
    requestsSince: () => assert.fail('no day quota: must not count'),
    costSince: () => assert.fail('no month quota: must not count'),
  };
  for (const [d, m] of [
    [null, null],
    [0, 0],
    [-1, -5],
  ] as const) {
    assert.deepEqual(checkQuota({ id: 1, quota_req_day: d, quota_cost_month: m }, log, NOON), { ok: true });
  }
});
