/**
 * Which calls count towards a user's quotas, once in JavaScript (pending rows, batch tallies)
 * and once in SQL (rows on disk), side by side so the two cannot drift apart. Pure. The rules
 * are explained in quota.ts.
 */
import { effectiveCost } from './cost.ts';
import { RefusalReason, REFUSED_BACKEND, STATUS_CLIENT_CLOSED, type CallRecord } from './record.ts';

type Verdict = Pick<CallRecord, 'backend' | 'status' | 'reason'>;

/**
 * Refused at the gate, before the scheduler saw it: no backend was chosen and the status is a
 * 4xx — bad or missing key (401), forbidden or unknown model (403/404), malformed body (400),
 * quota (429). A call that reached the scheduler and got no backend ends in a 5xx (no backend,
 * park timeout, upstream failures) or in 499 (the client left while it was parked).
 */
export function isGateRefusal(rec: Verdict): boolean {
  return (
    rec.backend === REFUSED_BACKEND &&
    ((rec.status >= 400 && rec.status < 500 && rec.status !== STATUS_CLIENT_CLOSED) ||
      rec.reason === RefusalReason.quotaDay ||
      rec.reason === RefusalReason.quotaMonth)
  );
}

/** Whether a call counts towards its user's quotas: every call that got past the gate. */
export function countsTowardQuota(rec: Verdict): boolean {
  return !isGateRefusal(rec);
}

/** SQL truth of `countsTowardQuota` on a `calls` row (reason may be NULL). */
export const COUNTS_TOWARD_QUOTA_SQL = `NOT (backend = '${REFUSED_BACKEND}' AND (
  (status >= 400 AND status < 500 AND status <> ${STATUS_CLIENT_CLOSED})
  OR COALESCE(reason, '') IN ('${RefusalReason.quotaDay}', '${RefusalReason.quotaMonth}')))`;

/** Calls a record stands for (a folded row of refusals stands for several); at least 1. */
export function callCount(rec: Pick<CallRecord, 'count'>): number {
  const n = rec.count;
  return typeof n === 'number' && Number.isInteger(n) && n > 1 ? n : 1;
}

/** What a record adds to its user's quota counters (nothing when it does not count). */
export function quotaUsageOfRecord(rec: CallRecord): { requests: number; cost: number } {
  if (!countsTowardQuota(rec)) return { requests: 0, cost: 0 };
  return { requests: callCount(rec), cost: effectiveCost(rec) };
}

/**
 * The record to keep for the quota counters alone while the call log is off (no bodies), or
 * null when it counts towards no quota at all (no user, or refused at the gate).
 */
export function quotaOnlyRecord(rec: CallRecord): CallRecord | null {
  if (typeof rec.user_id !== 'number' || !countsTowardQuota(rec)) return null;
  const { request_body: _req, response_body: _res, ...rest } = rec;
  return { ...rest, usage_only: true };
}
