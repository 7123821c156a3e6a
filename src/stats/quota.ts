/**
 * Per-user quotas: the counters they are checked against, and the admission of calls.
 *
 * What counts:
 * - `quota_req_day`: calls per UTC calendar day that got past the gate. A call counts once it
 *   reached the scheduler, however it ended: answered, failed upstream, parked until its time
 *   ran out, no backend, the client leaving. A call refused at the gate does NOT count (see
 *   `countsTowardQuota`), so a typo costs nothing and hammering a locked-out key never extends
 *   the lockout.
 * - `quota_cost_month`: USD per UTC calendar month, the upstream-reported cost where the
 *   backend gave one, else the computed cost; a free backend (`paid: false`) spends nothing
 *   whatever it reports (`effectiveCost`; its reported cost is still in `upstream_cost_usd`).
 *   It gates paid backends, not calls: once it is spent the user's calls still run on unpaid
 *   backends (they park for them: stats/paid-budget.ts `PaidGate`); only a call that has no
 *   unpaid candidate is refused here.
 * - `null` or a value <= 0 means no limit ("0 = unlimited"; disable a user to block it).
 * - The counters do not depend on the call log: with `call_log: false` the calls still feed
 *   the per-user counters (`quota_usage`), only no call rows are written.
 *
 * A call is allowed while usage is strictly below the limit: with a day limit of N the N-th
 * call of the day passes and the N+1-th is refused. Spend is checked before the call, so the
 * call that crosses the monthly budget completes and the next one goes unpaid or is refused. Calls admitted
 * and still running count towards the day limit too, so concurrent calls cannot all slip past.
 *
 * The counters (`QuotaGate`) are in memory, per user and UTC day — a month is the sum of its
 * days — seeded from `quota_usage` when the call log opens and added to by every `record()`:
 * the request path never waits for the database, and a limit holds exactly at its boundary.
 */
import type { DayUsage } from '../store/calls-repo.ts';
import { effectiveCost } from './cost.ts';
import { DAY_MS, startOfNextUtcMonth, startOfUtcDay, startOfUtcMonth, utcDayNumber } from './period.ts';
import { callCount, RefusalReason, REFUSED_BACKEND, STATUS_CLIENT_CLOSED, type CallRecord } from './record.ts';

export interface QuotaUser {
  id: number;
  quota_req_day: number | null;
  quota_cost_month: number | null;
}

export type QuotaVerdict = { ok: true } | { ok: false; kind: 'day' | 'month'; retryAfterSec: number; message: string };

/** An admitted call's `done()` (idempotent) ends its count as running once it is on record. */
export type Admission = { ok: true; done: () => void } | Extract<QuotaVerdict, { ok: false }>;

/**
 * Whether a call counts towards its user's quotas: every call that got past the gate. Refused
 * at the gate means before the scheduler saw it: no backend was chosen and the status is a
 * 4xx — bad or missing key (401), forbidden or unknown model (403/404), malformed body (400),
 * quota (429). A call that reached the scheduler and got no backend ends in a 5xx (no backend,
 * park timeout, upstream failures) or in 499 (the client left while it was parked).
 */
export function countsTowardQuota(rec: Pick<CallRecord, 'backend' | 'status' | 'reason'>): boolean {
  return !(
    rec.backend === REFUSED_BACKEND &&
    ((rec.status >= 400 && rec.status < 500 && rec.status !== STATUS_CLIENT_CLOSED) ||
      rec.reason === RefusalReason.quotaDay ||
      rec.reason === RefusalReason.quotaMonth ||
      rec.reason === RefusalReason.paidBudget)
  );
}

/**
 * What a record adds to its user's quota counter of the UTC day it arrived on; null when it
 * counts towards no quota (no user, or refused at the gate).
 */
export function dayUsageOf(rec: CallRecord): DayUsage | null {
  if (!Number.isInteger(rec.user_id) || !Number.isFinite(rec.ts) || !countsTowardQuota(rec)) return null;
  return {
    user_id: rec.user_id!,
    day: utcDayNumber(Math.max(0, Math.round(rec.ts))),
    requests: callCount(rec),
    cost: effectiveCost(rec),
  };
}

/** Float sums of many small costs drift; a spend within this of the budget counts as reaching it. */
export const COST_EPSILON_USD = 1e-9;

/**
 * Checks both quotas of `user` at `now` (unix ms), the day quota first. `running`: calls of
 * the user admitted and not on record yet; without them N concurrent calls at usage N-1 all pass.
 * `hasUnpaid`: the call has an unpaid candidate, so a spent cost quota does not refuse it (it
 * only keeps it off the paid ones).
 */
export function checkQuota(
  user: QuotaUser,
  log: Pick<QuotaGate, 'requestsSince' | 'costSince'>,
  now: number,
  running = 0,
  hasUnpaid = false,
): QuotaVerdict {
  const perDay = user.quota_req_day;
  if (isLimit(perDay)) {
    const used = log.requestsSince(user.id, startOfUtcDay(now)) + running;
    if (used >= perDay) return dayQuotaRefusal(perDay, now);
  }
  return hasUnpaid ? { ok: true } : checkMonthQuota(user, log, now);
}

/** Whether `user`'s `quota_cost_month` still allows paid backends at `now` (unix ms). */
export function checkMonthQuota(user: QuotaUser, log: Pick<QuotaGate, 'costSince'>, now: number): QuotaVerdict {
  const perMonth = user.quota_cost_month;
  if (isLimit(perMonth)) {
    const spent = log.costSince(user.id, startOfUtcMonth(now));
    if (spent >= perMonth - COST_EPSILON_USD) return monthQuotaRefusal(spent, perMonth, now);
  }
  return { ok: true };
}

/** The refusal of a call over its user's day limit at `now`: it resets at the next UTC midnight. */
export function dayQuotaRefusal(perDay: number, now: number): Extract<QuotaVerdict, { ok: false }> {
  const resetAt = startOfUtcDay(now) + DAY_MS;
  return {
    ok: false,
    kind: 'day',
    retryAfterSec: secondsUntil(resetAt, now),
    message: `Daily request quota reached (${perDay} requests per day); it resets at ${iso(resetAt)}.`,
  };
}

/** The refusal of a paid call once its user spent `spent` of `perMonth` USD: it resets next month. */
export function monthQuotaRefusal(spent: number, perMonth: number, now: number): Extract<QuotaVerdict, { ok: false }> {
  const resetAt = startOfNextUtcMonth(now);
  return {
    ok: false,
    kind: 'month',
    retryAfterSec: secondsUntil(resetAt, now),
    message:
      `Monthly cost quota reached ($${spent.toFixed(4)} of $${perMonth.toFixed(2)}); it resets ` +
      `at ${iso(resetAt)}.`,
  };
}

/** The quota counters in memory, and the calls admitted and still running, per user. */
export class QuotaGate {
  /** Per user, per UTC day number. */
  private readonly days = new Map<number, Map<number, { requests: number; cost: number }>>();
  private readonly running = new Map<number, number>();

  /** Adds a call's usage (or a `quota_usage` row) to its user's day. */
  count(u: DayUsage): void {
    let days = this.days.get(u.user_id);
    if (!days) this.days.set(u.user_id, (days = new Map()));
    const day = days.get(u.day) ?? { requests: 0, cost: 0 };
    day.requests += u.requests;
    day.cost += u.cost;
    days.set(u.day, day);
  }

  /** Calls that count, on the UTC days from the one holding `since` (unix ms) on. */
  requestsSince(userId: number, since: number): number {
    return this.sum(userId, since, 'requests');
  }

  /** USD spent on the UTC days from the one holding `since` on. */
  costSince(userId: number, since: number): number {
    return this.sum(userId, since, 'cost');
  }

  /** Forgets the days before `firstDay` (the prune drops them on disk too). */
  forgetBefore(firstDay: number): void {
    for (const [user, days] of this.days) {
      for (const day of days.keys()) if (day < firstDay) days.delete(day);
      if (days.size === 0) this.days.delete(user);
    }
  }

  /** Calls of the user admitted and not done yet. */
  inflight(userId: number): number {
    return this.running.get(userId) ?? 0;
  }

  /**
   * Admits a call of `user` at `now` (unix ms), counting it as running until `done()`, or refuses
   * it. `hasUnpaid`: the call has an unpaid candidate (a spent cost quota does not refuse it).
   */
  admit(user: QuotaUser, now: number, hasUnpaid = false): Admission {
    const running = this.inflight(user.id);
    const verdict = checkQuota(user, this, now, running, hasUnpaid);
    if (!verdict.ok) return verdict;
    this.running.set(user.id, running + 1);
    let finished = false;
    const done = () => {
      if (finished) return;
      finished = true;
      const left = this.inflight(user.id) - 1;
      if (left > 0) this.running.set(user.id, left);
      else this.running.delete(user.id);
    };
    return { ok: true, done };
  }

  private sum(userId: number, since: number, field: 'requests' | 'cost'): number {
    const first = utcDayNumber(since);
    let total = 0;
    for (const [day, usage] of this.days.get(userId) ?? []) if (day >= first) total += usage[field];
    return total;
  }
}

function isLimit(v: number | null): v is number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0;
}

/** Whole seconds until `at`, rounded up, at least 1 (a Retry-After of 0 invites a hot loop). */
export function secondsUntil(at: number, now: number): number {
  return Math.max(1, Math.ceil((at - now) / 1000));
}

export function iso(ms: number): string {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}
