import type { Usage } from './usage.ts';

/** What one proxied call came to: the call log, metrics and speed estimate learn from it. */
export interface CallOutcome {
  requestId: string;
  endpoint: string;
  /** Who called (user name, X-Source or IP alias) and their user id, for the call log. */
  source: string;
  userId: number | null;
  requestedModel: string | null;
  alias: string | null;
  backend: string | null;
  model: string | null;
  status: number;
  /** Why a call was refused or broke (null for a clean answer). */
  reason: string | null;
  startedAt: number;
  durationMs: number;
  ttftMs: number | null;
  usage?: Usage;
  /** True when usage was estimated rather than reported by the backend. */
  usageEstimated?: boolean;
  streamed: boolean;
  requestBody?: Buffer | string;
  responseBody?: Buffer | string;
}
