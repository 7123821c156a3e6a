import type { Usage } from '../wire/usage.ts';

/** What one call came to (answered or refused): the call log and the metrics learn from it. */
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
