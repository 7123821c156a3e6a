/** One call as the request path records it: the call log, the quotas and the metrics read it. Pure. */
import type { CallRecord } from '../store/calls-repo.ts';

export type { CallRecord } from '../store/calls-repo.ts';

/** `backend` of a call the gateway refused before any backend was chosen. */
export const REFUSED_BACKEND = '(refused)';

/** `reason` values of refused calls (the request path may add its own; these are known). */
export const RefusalReason = Object.freeze({
  quotaDay: 'quota_day',
  quotaMonth: 'quota_month',
  /** `paid_budget_usd_month` is spent and the call had no unpaid candidate. */
  paidBudget: 'paid_budget_reached',
  unknownModel: 'unknown_model',
  parkTimeout: 'park_timeout',
  noBackend: 'no_backend',
} as const);

/** Status of a stream the client aborted (nginx's convention), logged with what was delivered. */
export const STATUS_CLIENT_CLOSED = 499;

/** Calls a record stands for (a folded row of refusals stands for several); at least 1. */
export function callCount(rec: Pick<CallRecord, 'count'>): number {
  const n = rec.count;
  return typeof n === 'number' && Number.isInteger(n) && n > 1 ? n : 1;
}
