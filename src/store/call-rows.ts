/**
 * One logged call, in the fewest shapes that really differ (docs/decisions.md, "One type for a
 * logged call"): `StoredCall`, the stats.db row, which every other shape derives from;
 * `CallRecord`, what the request path records; `CallRow`, what the console and
 * `/admin/api/calls` list. The rollup's `SummedCall` (call-aggregates.ts) and the console's
 * lines pick from them. Beside them the filter of the reads and the batch a write takes. Pure;
 * the SQL is in calls-repo.ts. (The proxy's own report, stats/call-outcome.ts `CallOutcome`, is
 * a call before it is priced, in the proxy's words; stats/outcome-record.ts makes it a
 * `CallRecord`.)
 */

/**
 * A call row as stored: one field per column of `calls`, flags as SQLite stores them (0 or 1).
 * It must exist as the columns' own shape: the positional INSERT and the SELECTs read it.
 */
export interface StoredCall {
  id: number;
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
  /** Backend name, or `(refused)` for a call refused before any backend was chosen. */
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
  /** 1: the tokens are the gateway's estimate. */
  usage_estimated: 0 | 1;
  /** 0: a free backend, the call spent nothing. */
  paid: 0 | 1;
  /** Calls the row stands for (folded refusals), at least 1. */
  count: number;
  /**
   * Why the scheduler chose this backend, when not simply the best free unpaid one (the lease's
   * route, e.g. `spill: local eta 41 s > 10 s`); null otherwise and for refusals.
   */
  route: string | null;
}

/**
 * A call as the request path records it (stats/call-log.ts `record()`): no id yet, flags as
 * booleans, the newer fields optional, the captured bodies raw. It must exist beside
 * `StoredCall`: a malformed record is made whole by `storedCall()`, never refused.
 */
export type CallRecord = Omit<StoredCall, 'id' | 'usage_estimated' | 'paid' | 'count' | 'route'> & {
  /** The tokens are the gateway's estimate: the backend reported no usage. */
  usage_estimated?: boolean;
  /**
   * The backend is paid (`paid: true` in its spec). A free backend's calls spend nothing,
   * whatever it reports in `upstream_cost_usd` (still stored). Absent: paid (rows from before).
   */
  paid?: boolean;
  /** Calls this row stands for (unauthenticated 401s are folded per source and minute); default 1. */
  count?: number;
  /** Why the scheduler chose the backend (`CallOutcome.route`); absent: null. */
  route?: string | null;
  /** Captured only when `capture_bodies` is on; the call log caps and gzips them. */
  request_body?: Buffer | string;
  response_body?: Buffer | string;
};

/** A call's captured bodies as stored: the gzip of each capped side, and its size before the cap. */
export interface StoredBodies {
  request: Buffer | null;
  response: Buffer | null;
  request_bytes: number | null;
  response_bytes: number | null;
}

/** A user's quota usage on one UTC day: a `quota_usage` row, or what one call adds to it. */
export interface DayUsage {
  user_id: number;
  /** UTC days since the epoch. */
  day: number;
  requests: number;
  cost: number;
}

/** What paid backends spent on one UTC day, every caller together: a `paid_spend` row, or one call's part of it. */
export interface DaySpend {
  /** UTC days since the epoch. */
  day: number;
  cost: number;
}

/**
 * One entry of a batch: a call row with its bodies, what it adds to its user's quota counters,
 * and what it adds to the day's paid spend (`paid_budget_usd_month`).
 */
export interface CallWrite {
  /** Null for a call that only counts towards quotas and the paid budget (the call log is off). */
  row: StoredCall | null;
  bodies: StoredBodies | null;
  usage: DayUsage | null;
  /** Absent or null: the call spent nothing. */
  spend?: DaySpend | null;
}

/**
 * A call as the console and `/admin/api/calls` list it (bodies are fetched separately): the
 * stored row with its flags as booleans and whether bodies were captured. It must exist as the
 * JSON's own shape.
 */
export type CallRow = Omit<StoredCall, 'usage_estimated' | 'paid'> & {
  has_bodies: boolean;
  /** The tokens are the gateway's estimate (the backend reported no usage). */
  usage_estimated: boolean;
  /** False for a free backend: the call spent nothing, whatever `upstream_cost_usd` says. */
  paid: boolean;
};

export interface CallFilter {
  /** Rows to return, newest first; default 100, at most 1,000. */
  limit?: number;
  source?: string;
  backend?: string;
  /** Matches the served model or the requested model/alias. */
  model?: string;
  status?: number;
  user_id?: number;
  /** Unix ms, inclusive. */
  since?: number;
  /** Unix ms, exclusive. */
  until?: number;
  /** Paging cursor: only rows with a smaller id. */
  beforeId?: number;
}

/** What a prune removes: call rows older than `rowCutoff`, bodies older than `bodyCutoff` (unix ms). */
export interface PruneCutoffs {
  /** -Infinity keeps every row. */
  rowCutoff: number;
  /** Never earlier than `rowCutoff`; -Infinity keeps every body. */
  bodyCutoff: number;
  /** Quota counters (and the paid spend) of UTC days before this one go. */
  firstUsageDay: number;
}

export interface Pruned {
  rows: number;
  bodies: number;
}

/**
 * An input as row `id`: counts made whole and non-negative, missing fields filled. A malformed
 * input must never fail its batch (a poison row would wedge every write after it).
 */
export function storedCall(rec: CallRecord, id: number): StoredCall {
  const upstream = rec.upstream_cost_usd;
  return {
    id,
    ts: whole(rec.ts),
    request_id: String(rec.request_id ?? ''),
    duration_ms: whole(rec.duration_ms),
    ttft_ms: rec.ttft_ms === null || rec.ttft_ms === undefined ? null : whole(rec.ttft_ms),
    endpoint: String(rec.endpoint ?? ''),
    source: String(rec.source ?? ''),
    user_id: Number.isInteger(rec.user_id) ? rec.user_id : null,
    requested_model: nullableString(rec.requested_model),
    model: nullableString(rec.model),
    backend: String(rec.backend ?? ''),
    status: whole(rec.status),
    reason: nullableString(rec.reason),
    prompt_tokens: whole(rec.prompt_tokens),
    completion_tokens: whole(rec.completion_tokens),
    cached_tokens: whole(rec.cached_tokens),
    cache_write_tokens: whole(rec.cache_write_tokens),
    reasoning: nullableString(rec.reasoning),
    cost_usd: Number.isFinite(rec.cost_usd) && rec.cost_usd > 0 ? rec.cost_usd : 0,
    upstream_cost_usd: typeof upstream === 'number' && Number.isFinite(upstream) && upstream >= 0 ? upstream : null,
    usage_estimated: rec.usage_estimated === true ? 1 : 0,
    paid: rec.paid === false ? 0 : 1,
    count: Number.isInteger(rec.count) && rec.count! > 1 ? rec.count! : 1,
    route: nullableString(rec.route),
  };
}

function whole(n: number): number {
  return Number.isFinite(n) && n > 0 ? Math.round(n) : 0;
}

function nullableString(v: unknown): string | null {
  return v === null || v === undefined ? null : String(v);
}
