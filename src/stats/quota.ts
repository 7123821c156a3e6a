/**
 * Per-user quotas, checked on the request path against the call log's quota counters.
 *
 * What counts (quota-rules.ts holds the rule, in JavaScript and in SQL):
 * - `quota_req_day`: calls per UTC calendar day that got past the gate. A call counts once it
 *   reached the scheduler, however it ended: answered, failed upstream (5xx, timeouts, a 429
 *   from the upstream), parked until its time ran out, no backend (503), the client leaving
 *   (499). A call refused at the gate does NOT count: no backend was chosen and it was
 *   answered with a 4xx — unknown or forbidden model (404/403), malformed body (400), bad or
 *   missing key (401), and the quota refusals themselves (429), so a typo costs nothing and
 *   hammering a locked-out key never extends the lockout. See `countsTowardQuota`.
 * - `quota_cost_month`: USD per UTC calendar month, the upstream-reported cost where the
 *   backend gave one, else the computed cost; a free backend (`paid: false`) spends nothing
 *   whatever it reports (`effectiveCost`; its reported cost is still in `upstream_cost_usd`).
 * - `null` or a value <= 0 means no limit (the gateway's "0 = unlimited" convention; disable
 *   a user to block it).
 * - The counters do not depend on the call log: with `call_log: false` the calls still feed
 *   the per-user counters (`quota_usage`), only no call rows are written.
 *
 * A call is allowed while usage is strictly below the limit: with a day limit of N the N-th
 * call of the day passes and the N+1-th is refused. Spend is checked before the call, so the
 * call that crosses the monthly budget completes and the next one is refused.
 */
import type { CallLog } from './call-log.ts';
import { startOfNextUtcDay, startOfNextUtcMonth, startOfUtcDay, startOfUtcMonth } from './period.ts';

export interface QuotaUser {
  id: number;
  quota_req_day: number | null;
  quota_cost_month: number | null;
}

export type QuotaVerdict =
  | { ok: true }
  | { ok: false; kind: 'day' | 'month'; retryAfterSec: number; message: string };

export interface QuotaCheckOptions {
  /**
   * Calls of this user admitted but not yet recorded (still running). Pass it to make the
   * daily request limit exact under concurrency; without it, N concurrent calls admitted at
   * usage N-1 all pass.
   */
  inflightRequests?: number;
}

/** Float sums of many small costs drift; a spend within this of the budget counts as reaching it. */
const COST_EPSILON_USD = 1e-9;

/** Checks both quotas of `user` at `now` (unix ms). The day quota is checked first. */
export function checkQuota(
  user: QuotaUser,
  log: Pick<CallLog, 'requestsSince' | 'costSince'>,
  now: number,
  opts: QuotaCheckOptions = {},
): QuotaVerdict {
  const perDay = user.quota_req_day;
  if (isLimit(perDay)) {
    const used = log.requestsSince(user.id, startOfUtcDay(now)) + (opts.inflightRequests ?? 0);
    if (used >= perDay) {
      const resetAt = startOfNextUtcDay(now);
      return {
        ok: false,
        kind: 'day',
        retryAfterSec: secondsUntil(resetAt, now),
        message: `Daily request quota reached (${perDay} requests per day); it resets at ${iso(resetAt)}.`,
      };
    }
  }
  const perMonth = user.quota_cost_month;
  if (isLimit(perMonth)) {
    const spent = log.costSince(user.id, startOfUtcMonth(now));
    if (spent >= perMonth - COST_EPSILON_USD) {
      const resetAt = startOfNextUtcMonth(now);
      return {
        ok: false,
        kind: 'month',
        retryAfterSec: secondsUntil(resetAt, now),
        message: `Monthly cost quota reached ($${spent.toFixed(4)} of $${perMonth.toFixed(2)}); it resets at ${iso(resetAt)}.`,
      };
    }
  }
  return { ok: true };
}

function isLimit(v: number | null): v is number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0;
}

/** Whole seconds until `at`, rounded up, at least 1 (a Retry-After of 0 invites a hot loop). */
function secondsUntil(at: number, now: number): number {
  return Math.max(1, Math.ceil((at - now) / 1000));
}

function iso(ms: number): string {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}
