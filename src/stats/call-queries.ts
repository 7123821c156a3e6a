/**
 * The reads of the call log on the main connection: recent rows for the console, captured
 * bodies, aggregates, and the per-user usage the quota counters start from. SQL only; the
 * call log flushes before it asks (so every recorded call is seen).
 */
import type { Db } from '../store/db.ts';
import { unpackBody } from './bodies.ts';
import { CALL_COLUMNS, type StoredCall } from './call-rows.ts';
import { SPENT_SQL } from './cost.ts';
import { COUNTS_TOWARD_QUOTA_SQL } from './quota-rules.ts';

/** A stored call (bodies are fetched separately with `bodies(id)`). */
export type CallRow = Omit<StoredCall, 'usage_estimated' | 'paid'> & {
  id: number;
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

export type AggregateGroup = 'backend' | 'model' | 'source' | 'day';

export interface AggregateRow {
  /** Backend, model (`(none)` when no model was served), source, or `YYYY-MM-DD` (UTC). */
  key: string;
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
  /** cached_tokens / prompt_tokens (0 when there were no prompt tokens). */
  cache_hit_share: number;
  /** Nearest-rank percentiles of duration_ms (a folded row counts `count` times). */
  p50_ms: number;
  p95_ms: number;
}

export interface CapturedBodies {
  request: Buffer | null;
  response: Buffer | null;
  /** Sizes before the cap (the stored body ends with a marker when it was cut). */
  request_bytes: number | null;
  response_bytes: number | null;
}

export interface DiskUsage {
  requests: number;
  cost: number;
}

const MAX_RECENT = 1_000;

const GROUP_KEY_SQL: Record<AggregateGroup, string> = {
  backend: 'backend',
  model: "COALESCE(model, '(none)')",
  source: 'source',
  day: "strftime('%Y-%m-%d', ts / 1000, 'unixepoch')",
};

export class CallQueries {
  private readonly db: Db;
  private readonly selectBodies;
  private readonly usageFromDayStmt;
  private readonly usageBetweenStmt;

  constructor(db: Db) {
    this.db = db;
    this.selectBodies = db.prepare(
      'SELECT request, response, request_bytes, response_bytes FROM call_bodies WHERE call_id = ?',
    );
    this.usageFromDayStmt = db.prepare(
      `SELECT COALESCE(SUM(requests), 0) AS requests, COALESCE(SUM(cost_usd), 0) AS cost
       FROM quota_usage WHERE user_id = ? AND day >= ?`,
    );
    this.usageBetweenStmt = db.prepare(
      `SELECT COALESCE(SUM(count), 0) AS requests, COALESCE(SUM(${SPENT_SQL}), 0) AS cost
       FROM calls WHERE user_id = ? AND ts >= ? AND ts < ? AND ${COUNTS_TOWARD_QUOTA_SQL}`,
    );
  }

  /** Calls newest first, filtered. */
  recent(filter: CallFilter = {}): CallRow[] {
    const where: string[] = [];
    const params: Record<string, unknown> = {};
    const eq = (column: string, value: unknown) => {
      if (value === undefined) return;
      where.push(`${column} = @${column}`);
      params[column] = value;
    };
    eq('source', filter.source);
    eq('backend', filter.backend);
    eq('status', filter.status);
    eq('user_id', filter.user_id);
    if (filter.model !== undefined) {
      where.push('(model = @model OR requested_model = @model)');
      params.model = filter.model;
    }
    addTimeRange(where, params, filter);
    if (filter.beforeId !== undefined) {
      where.push('id < @beforeId');
      params.beforeId = filter.beforeId;
    }
    params.limit = Math.min(MAX_RECENT, Math.max(1, Math.floor(filter.limit ?? 100)));
    const rows = this.db
      .prepare(
        `SELECT id, ${CALL_COLUMNS.join(', ')},
           EXISTS (SELECT 1 FROM call_bodies b WHERE b.call_id = calls.id) AS has_bodies
         FROM calls ${whereClause(where)}
         ORDER BY ts DESC, id DESC LIMIT @limit`,
      )
      .all(params) as (StoredCall & { id: number; has_bodies: number })[];
    return rows.map((r) => ({ ...r, has_bodies: r.has_bodies === 1, usage_estimated: r.usage_estimated === 1, paid: r.paid === 1 }));
  }

  /** The captured bodies of one call, decompressed; null when none were captured. */
  bodies(callId: number): CapturedBodies | null {
    const row = this.selectBodies.get(callId) as
      | { request: Buffer | null; response: Buffer | null; request_bytes: number | null; response_bytes: number | null }
      | undefined;
    if (!row) return null;
    return {
      request: unpackBody(row.request),
      response: unpackBody(row.response),
      request_bytes: row.request_bytes,
      response_bytes: row.response_bytes,
    };
  }

  /** Totals per backend, model, source or UTC day over a time range, most calls first (days in order). */
  aggregate(group: AggregateGroup, filter: { since?: number; until?: number } = {}): AggregateRow[] {
    const where: string[] = [];
    const params: Record<string, unknown> = {};
    addTimeRange(where, params, filter);
    const key = GROUP_KEY_SQL[group];
    const totals = this.db
      .prepare(
        `SELECT ${key} AS key, SUM(count) AS calls, SUM(CASE WHEN status >= 400 THEN count ELSE 0 END) AS errors,
           SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens,
           SUM(cached_tokens) AS cached_tokens, SUM(cache_write_tokens) AS cache_write_tokens,
           SUM(${SPENT_SQL}) AS cost_usd
         FROM calls ${whereClause(where)} GROUP BY 1`,
      )
      .all(params) as Omit<AggregateRow, 'cache_hit_share' | 'p50_ms' | 'p95_ms'>[];
    // nearest rank over calls, not rows: the rank-th call is the first row whose running count reaches it
    const percentiles = this.db
      .prepare(
        `WITH ranked AS (
           SELECT ${key} AS key, duration_ms,
             SUM(count) OVER (PARTITION BY ${key} ORDER BY duration_ms ROWS UNBOUNDED PRECEDING) AS reached,
             SUM(count) OVER (PARTITION BY ${key}) AS n
           FROM calls ${whereClause(where)})
         SELECT key,
           MIN(CASE WHEN reached >= (n * 50 + 99) / 100 THEN duration_ms END) AS p50_ms,
           MIN(CASE WHEN reached >= (n * 95 + 99) / 100 THEN duration_ms END) AS p95_ms
         FROM ranked GROUP BY key`,
      )
      .all(params) as { key: string; p50_ms: number; p95_ms: number }[];
    const byKey = new Map(percentiles.map((p) => [p.key, p]));
    const rows = totals.map((t) => ({
      ...t,
      cache_hit_share: t.prompt_tokens > 0 ? t.cached_tokens / t.prompt_tokens : 0,
      p50_ms: byKey.get(t.key)?.p50_ms ?? 0,
      p95_ms: byKey.get(t.key)?.p95_ms ?? 0,
    }));
    return group === 'day'
      ? rows.sort((a, b) => a.key.localeCompare(b.key))
      : rows.sort((a, b) => b.calls - a.calls || a.key.localeCompare(b.key));
  }

  /** A user's quota counters of whole UTC days from `firstDay` (a day number) on. */
  usageFromDay(userId: number, firstDay: number): DiskUsage {
    return this.usageFromDayStmt.get(userId, firstDay) as DiskUsage;
  }

  /** A user's quota usage summed from the call rows in [since, until) (unix ms). */
  usageBetween(userId: number, since: number, until: number): DiskUsage {
    return this.usageBetweenStmt.get(userId, since, until) as DiskUsage;
  }
}

function addTimeRange(where: string[], params: Record<string, unknown>, f: { since?: number; until?: number }): void {
  if (f.since !== undefined) {
    where.push('ts >= @since');
    params.since = f.since;
  }
  if (f.until !== undefined) {
    where.push('ts < @until');
    params.until = f.until;
  }
}

function whereClause(where: string[]): string {
  return where.length ? `WHERE ${where.join(' AND ')}` : '';
}
