/**
 * One call, as the call log, the quota check and the metrics see it. Pure types (what counts
 * towards quotas is in quota-rules.ts).
 */

/** `backend` of a call the gateway refused before any backend was chosen. */
export const REFUSED_BACKEND = '(refused)';

/** `reason` values of refused calls (the request path may add its own; these are known). */
export const RefusalReason = Object.freeze({
  badKey: 'bad_key',
  quotaDay: 'quota_day',
  quotaMonth: 'quota_month',
  unknownModel: 'unknown_model',
  parkTimeout: 'park_timeout',
  noBackend: 'no_backend',
} as const);

/** Status of a stream the client aborted (nginx's convention), logged with what was delivered. */
export const STATUS_CLIENT_CLOSED = 499;
/** Status of a stream the backend dropped after the first byte. */
export const STATUS_UPSTREAM_DROPPED = 502;

export interface CallRecord {
  /** Unix ms when the call arrived. */
  ts: number;
  request_id: string;
  duration_ms: number;
  /** Time to first byte of the response body; null when nothing was streamed. */
  ttft_ms: number | null;
  /** Route template (`/v1/chat/completions`), never a raw URL: it becomes a metric label. */
  endpoint: string;
  /** Who called, for display: user name, IP alias or IP. */
  source: string;
  user_id: number | null;
  /** Model or alias the client asked for. */
  requested_model: string | null;
  /** Model id the backend served. */
  model: string | null;
  /** Backend name, or `REFUSED_BACKEND`. */
  backend: string;
  status: number;
  /** Why the call was refused or failed, when it was. */
  reason: string | null;
  /** Every input token, cached reads and cache writes included (OpenAI convention). */
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  /** Reasoning control applied (the `x-reasoning-control` value), if any. */
  reasoning: string | null;
  /** Cost computed from the backend's pricing. */
  cost_usd: number;
  /** Cost the upstream reported itself (OpenRouter `usage.cost`). */
  upstream_cost_usd: number | null;
  /** The tokens are the gateway's estimate: the backend reported no usage. */
  usage_estimated?: boolean;
  /**
   * The backend is paid (`paid: true` in its spec). A free backend's calls spend nothing,
   * whatever it reports in `upstream_cost_usd` (still stored). Absent: paid (rows from before).
   */
  paid?: boolean;
  /** Calls this row stands for (unauthenticated 401s are folded per source and minute); default 1. */
  count?: number;
  /** Counts towards its user's quotas but is not stored as a call row (the call log is off). */
  usage_only?: boolean;
  /** Captured only when `capture_bodies` is on. */
  request_body?: Buffer | string;
  response_body?: Buffer | string;
}
