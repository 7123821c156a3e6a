import type { Usage } from '../wire/usage.ts';

/**
 * What one call came to (answered or refused), as the proxy, the media runner and the refusal
 * paths report it: the call log and the metrics learn from it. It is not the logged row
 * (store/call-rows.ts `CallRecord`): it carries the usage unpriced and the timings as measured,
 * in the request path's own words; stats/outcome-record.ts prices it into a `CallRecord`, the one
 * translation between the two.
 */
export interface CallOutcome {
  requestId: string;
  endpoint: string;
  /** Who called (user name, X-Source or IP alias) and their user id, for the call log. */
  source: string;
  userId: number | null;
  requestedModel: string | null;
  backend: string | null;
  model: string | null;
  status: number;
  /** Why a call was refused or broke (null for a clean answer). */
  reason: string | null;
  startedAt: number;
  durationMs: number;
  ttftMs: number | null;
  usage?: Usage;
  /** The reasoning switch as applied (`off:enable_thinking`, `unsupported`…), when one was asked for. */
  reasoning?: string;
  /** The usage is the gateway's estimate (the backend reported none). */
  usageEstimated?: boolean;
  /** Why the scheduler chose this backend, when not simply the best free unpaid one (`Lease.route`). */
  route?: string;
  requestBody?: Buffer | string;
  responseBody?: Buffer | string;
}
