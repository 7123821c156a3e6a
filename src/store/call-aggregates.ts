/**
 * What a group of logged calls adds up to, defined once for both paths that add them up: the
 * SQL over stats.db (`CallsRepo.aggregate()`, `/admin/api/stats`) and the in-memory rollup
 * (stats/calls-rollup.ts, the Statistics tab). Each sum has a JavaScript rule here and its SQL
 * twin beside it; the shares and percentiles are one function each. Pure.
 * test/stats-aggregate-paths.test.ts feeds the same calls to both paths and compares.
 */
import type { StoredCall } from './call-rows.ts';

export type AggregateGroup = 'backend' | 'model' | 'source' | 'day';

/** A stored row as the sums read it: `cost_usd` is what it spent (`SPENT_SQL`), `model` never null. */
export type SummedCall = Pick<
  StoredCall,
  | 'id'
  | 'ts'
  | 'backend'
  | 'source'
  | 'status'
  | 'duration_ms'
  | 'ttft_ms'
  | 'prompt_tokens'
  | 'completion_tokens'
  | 'cached_tokens'
  | 'cache_write_tokens'
  | 'cost_usd'
  | 'count'
> & {
  /** `NO_MODEL` when no model was served. */
  model: string;
};

/** The group key of a call that served no model. */
export const NO_MODEL = '(none)';

/** A stored row as the sums read it: the JavaScript twin of `CallsRepo.rollupRows()`'s SELECT. */
export function summedCall(r: StoredCall): SummedCall {
  return {
    id: r.id,
    ts: r.ts,
    backend: r.backend,
    model: r.model ?? NO_MODEL,
    source: r.source,
    status: r.status,
    duration_ms: r.duration_ms,
    ttft_ms: r.ttft_ms,
    prompt_tokens: r.prompt_tokens,
    completion_tokens: r.completion_tokens,
    cached_tokens: r.cached_tokens,
    cache_write_tokens: r.cache_write_tokens,
    cost_usd: r.paid === 0 ? 0 : (r.upstream_cost_usd ?? r.cost_usd), // SPENT_SQL
    count: r.count,
  };
}

/** The sums of a group of calls. */
export interface CallTotals {
  /** Calls, each row weighing its `count` (folded refusals). */
  calls: number;
  /** Calls with status >= 400 (refusals included). */
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  /** Spent: the upstream-reported cost where there is one, else the computed cost; 0 on free backends. */
  cost_usd: number;
}

export function emptyTotals(): CallTotals {
  return {
    calls: 0,
    errors: 0,
    prompt_tokens: 0,
    completion_tokens: 0,
    cached_tokens: 0,
    cache_write_tokens: 0,
    cost_usd: 0,
  };
}

/** Adds one row to `t`: the rule `TOTALS_SQL` is the twin of. */
export function addCall(t: CallTotals, c: SummedCall): void {
  const n = c.count > 1 ? c.count : 1;
  t.calls += n;
  if (c.status >= 400) t.errors += n;
  t.prompt_tokens += c.prompt_tokens;
  t.completion_tokens += c.completion_tokens;
  t.cached_tokens += c.cached_tokens;
  t.cache_write_tokens += c.cache_write_tokens;
  t.cost_usd += c.cost_usd;
}

export function addTotals(t: CallTotals, more: CallTotals): void {
  t.calls += more.calls;
  t.errors += more.errors;
  t.prompt_tokens += more.prompt_tokens;
  t.completion_tokens += more.completion_tokens;
  t.cached_tokens += more.cached_tokens;
  t.cache_write_tokens += more.cache_write_tokens;
  t.cost_usd += more.cost_usd;
}

/** What a stored call spent: the SQL twin of stats/cost.ts `effectiveCost` (stored costs are normalised). */
export const SPENT_SQL = 'CASE WHEN paid = 0 THEN 0 ELSE COALESCE(upstream_cost_usd, cost_usd) END';

/** `addCall` in SQL, over a GROUP BY. */
export const TOTALS_SQL = `SUM(count) AS calls, SUM(CASE WHEN status >= 400 THEN count ELSE 0 END) AS errors,
  SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens,
  SUM(cached_tokens) AS cached_tokens, SUM(cache_write_tokens) AS cache_write_tokens,
  SUM(${SPENT_SQL}) AS cost_usd`;

/**
 * Whether a call shows that its backend reports prompt-cache use (a read or a write). A backend
 * that reports is one with such a call among those on record: its calls' prompt tokens are the
 * whole the hit share is taken of; a backend that never did tells nothing about its cache.
 */
export function reportsCache(c: Pick<StoredCall, 'cached_tokens' | 'cache_write_tokens'>): boolean {
  return c.cached_tokens > 0 || c.cache_write_tokens > 0;
}

/** `reportsCache` in SQL: the backends that report, over every stored call. */
export const REPORTING_BACKENDS_SQL =
  'SELECT DISTINCT backend FROM calls WHERE cached_tokens > 0 OR cache_write_tokens > 0';

/**
 * The prompt-cache hit share: cached tokens over the prompt tokens of calls to backends that
 * report cache use. Null when there are none (no calls, or only calls to backends that never
 * reported): the share is not known, which is not 0 (known to be zero: a reporting backend
 * that read nothing from its cache). docs/decisions.md, "One rule for cache_hit_share".
 */
export function cacheHitShare(cachedTokens: number, reportingPromptTokens: number): number | null {
  return reportingPromptTokens > 0 ? cachedTokens / reportingPromptTokens : null;
}

/** The rank of the nearest-rank `p`-th percentile of `n` calls: the ceil(n·p/100)-th, at least the first. */
export function nearestRank(n: number, p: number): number {
  return Math.max(1, Math.ceil((n * p) / 100));
}

/** `nearestRank` in SQL, for integer `n` and `p`. */
export function nearestRankSql(n: string, p: number): string {
  return `(${n} * ${p} + 99) / 100`;
}

/** One group of `/admin/api/stats` (its JSON, field for field). */
export interface AggregateRow extends CallTotals {
  /** Backend, model (`(none)` when no model was served), source, or `YYYY-MM-DD` (UTC). */
  key: string;
  /** `cacheHitShare`: null when no backend that reports cache use had prompt tokens. */
  cache_hit_share: number | null;
  /** Nearest-rank percentiles of duration_ms (a folded row counts `count` times). */
  p50_ms: number;
  p95_ms: number;
}
