/**
 * stats.db, the call log's database: the batched write (call rows, their gzip'd bodies, the
 * per-user daily quota counters and the daily paid spend, in one transaction), the console's
 * reads, the counters' seed, and pruning a slice at a time; beside the reads, the JavaScript
 * twins of their filter and order, for the rows the call log (stats/call-log.ts) has not written yet.
 *
 * One connection, used by the thread that owns the call log. Its busy timeout is 0: a write
 * that finds stats.db locked by another process fails at once (and is retried by the next
 * flush) instead of holding up the event loop for the 5 s other connections wait.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  cacheHitShare,
  NO_MODEL,
  nearestRankSql,
  REPORTING_BACKENDS_SQL,
  reportsCache,
  SPENT_SQL,
  TOTALS_SQL,
  type AggregateGroup,
  type AggregateRow,
  type CallTotals,
  type SummedCall,
} from './call-aggregates.ts';
import type {
  CallRow,
  CallWrite,
  DaySpend,
  DayUsage,
  PruneCutoffs,
  Pruned,
  StoredBodies,
  StoredCall,
} from './call-rows.ts';
import { callRow, recentLimit, type CallQuery } from './call-filter.ts';
import { STATS_DB } from './backup/files.ts';
import { STATS_MIGRATIONS } from './calls-migrations.ts';
import { openDatabase, type Db } from './db.ts';

export type * from './call-rows.ts';
export type * from './call-aggregates.ts';
export { storedCall } from './call-rows.ts';
export { callRow, matchesFilter, newestFirst, recentLimit, type CallQuery } from './call-filter.ts';

/**
 * Rows a filtered `recent()` first looks at through the ts index (newest first) before it
 * scans the whole range: a common filter fills its page from them, a rare one would otherwise
 * walk the index and look up every row, ~10x slower than one pass over the table.
 */
const INDEXED_SCAN_ROWS = 2_000;

/**
 * WAL pages after which a commit checkpoints (SQLite's default is 1,000). The checkpoint runs
 * inside that commit, on the caller's thread, and costs about 2.5 ms per MB it copies: small
 * ones keep every write short (bench-calllog.ts).
 */
const CHECKPOINT_PAGES = 200;

const CALL_COLUMNS = [
  'id',
  'ts',
  'request_id',
  'duration_ms',
  'ttft_ms',
  'endpoint',
  'source',
  'user_id',
  'requested_model',
  'model',
  'backend',
  'status',
  'reason',
  'prompt_tokens',
  'completion_tokens',
  'cached_tokens',
  'cache_write_tokens',
  'reasoning',
  'cost_usd',
  'upstream_cost_usd',
  'usage_estimated',
  'paid',
  'count',
  'route',
] as const satisfies readonly (keyof StoredCall)[];

const GROUP_KEY_SQL: Record<AggregateGroup, string> = {
  backend: 'backend',
  model: `COALESCE(model, '${NO_MODEL}')`,
  source: 'source',
  day: "strftime('%Y-%m-%d', ts / 1000, 'unixepoch')",
};

export class CallsRepo {
  readonly #db: Db;
  readonly #write: (batch: readonly CallWrite[]) => void;
  readonly #pruneStep: (c: PruneCutoffs, limit: number) => Pruned & { done: boolean };
  readonly #selectBodies;
  /**
   * The backends that report cache use (`REPORTING_BACKENDS_SQL`, a scan of every stored call),
   * read once and then kept: a write adds its reporting backends, a prune that deletes calls
   * drops the set so the next `aggregate()` reads it again. Undefined until first needed.
   */
  #cacheReporting: Set<string> | undefined;

  /** Opens (creating and migrating if needed) `<storeDir>/stats.db`. */
  static open(storeDir: string): CallsRepo {
    mkdirSync(storeDir, { recursive: true });
    return new CallsRepo(openDatabase(join(storeDir, STATS_DB), STATS_MIGRATIONS));
  }

  constructor(db: Db) {
    this.#db = db;
    db.pragma('busy_timeout = 0');
    db.pragma(`wal_autocheckpoint = ${CHECKPOINT_PAGES}`);
    const insertCall = db.prepare(
      `INSERT INTO calls (${CALL_COLUMNS.join(', ')}) VALUES (${CALL_COLUMNS.map(() => '?').join(', ')})`,
    );
    const insertBodies = db.prepare(
      `INSERT INTO call_bodies (call_id, ts, request, response, request_bytes, response_bytes) ` +
        `VALUES (?, ?, ?, ?, ?, ?)`,
    );
    const addUsage = db.prepare(
      `INSERT INTO quota_usage (user_id, day, requests, cost_usd) VALUES (?, ?, ?, ?)
       ON CONFLICT (user_id, day) DO UPDATE SET
         requests = requests + excluded.requests, cost_usd = cost_usd + excluded.cost_usd`,
    );
    const addSpend = db.prepare(
      `INSERT INTO paid_spend (day, cost_usd) VALUES (?, ?)
       ON CONFLICT (day) DO UPDATE SET cost_usd = cost_usd + excluded.cost_usd`,
    );
    this.#write = db.transaction((batch: readonly CallWrite[]) => {
      const usage = new Map<string, DayUsage>();
      const spend = new Map<number, number>();
      for (const { row: r, bodies: b, usage: u, spend: paid } of batch) {
        if (r) {
          // positional binding, one explicit argument per column: markedly cheaper than named parameters
          insertCall.run(
            r.id,
            r.ts,
            r.request_id,
            r.duration_ms,
            r.ttft_ms,
            r.endpoint,
            r.source,
            r.user_id,
            r.requested_model,
            r.model,
            r.backend,
            r.status,
            r.reason,
            r.prompt_tokens,
            r.completion_tokens,
            r.cached_tokens,
            r.cache_write_tokens,
            r.reasoning,
            r.cost_usd,
            r.upstream_cost_usd,
            r.usage_estimated,
            r.paid,
            r.count,
            r.route,
          );
          if (b) insertBodies.run(r.id, r.ts, b.request, b.response, b.request_bytes, b.response_bytes);
        }
        if (paid) spend.set(paid.day, (spend.get(paid.day) ?? 0) + paid.cost);
        if (!u) continue;
        const key = `${u.user_id}:${u.day}`;
        const sum = usage.get(key);
        if (sum) {
          sum.requests += u.requests;
          sum.cost += u.cost;
        } else usage.set(key, { ...u });
      }
      for (const u of usage.values()) addUsage.run(u.user_id, u.day, u.requests, u.cost);
      for (const [day, cost] of spend) addSpend.run(day, cost);
    });
    const deleteBodies = db.prepare(
      'DELETE FROM call_bodies WHERE call_id IN (SELECT call_id FROM call_bodies WHERE ts < ? LIMIT ?)',
    );
    const deleteCalls = db.prepare('DELETE FROM calls WHERE id IN (SELECT id FROM calls WHERE ts < ? LIMIT ?)');
    const deleteUsage = db.prepare('DELETE FROM quota_usage WHERE day < ?');
    const deleteSpend = db.prepare('DELETE FROM paid_spend WHERE day < ?');
    this.#pruneStep = db.transaction((c: PruneCutoffs, limit: number) => {
      if (Number.isFinite(c.bodyCutoff)) {
        const bodies = deleteBodies.run(c.bodyCutoff, limit).changes;
        if (bodies > 0) return { rows: 0, bodies, done: false };
      }
      if (Number.isFinite(c.rowCutoff)) {
        const rows = deleteCalls.run(c.rowCutoff, limit).changes;
        if (rows > 0) return { rows, bodies: 0, done: false };
      }
      deleteUsage.run(c.firstUsageDay);
      deleteSpend.run(c.firstUsageDay);
      return { rows: 0, bodies: 0, done: true };
    });
    this.#selectBodies = db.prepare(
      'SELECT request, response, request_bytes, response_bytes FROM call_bodies WHERE call_id = ?',
    );
  }

  /** The largest call id on disk, 0 when there is none (the call log numbers new rows after it). */
  maxId(): number {
    return (this.#db.prepare('SELECT COALESCE(MAX(id), 0) AS id FROM calls').get() as { id: number }).id;
  }

  /** Every per-user daily quota counter on disk. */
  quotaUsage(): DayUsage[] {
    return this.#db.prepare('SELECT user_id, day, requests, cost_usd AS cost FROM quota_usage').all() as DayUsage[];
  }

  /** Every day's paid spend on disk (all callers together). */
  paidSpend(): DaySpend[] {
    return this.#db.prepare('SELECT day, cost_usd AS cost FROM paid_spend').all() as DaySpend[];
  }

  /** Writes a batch in one transaction: all of it, or (throwing) none of it. */
  write(batch: readonly CallWrite[]): void {
    this.#write(batch);
    if (!this.#cacheReporting) return;
    for (const { row } of batch) if (row && reportsCache(row)) this.#cacheReporting.add(row.backend);
  }

  /**
   * Stored calls newest first (by arrival, then id), filtered. Without a column filter the ts
   * index answers at once; with one, the newest `INDEXED_SCAN_ROWS` of the range are tried
   * first, then (too few matched) one pass over the range keeps the top rows.
   */
  recent(filter: CallQuery = {}): CallRow[] {
    const range: string[] = [];
    const columns: string[] = [];
    const params: Record<string, unknown> = { limit: recentLimit(filter) };
    const eq = (column: string, value: unknown) => {
      if (value === undefined) return;
      columns.push(`${column} = @${column}`);
      params[column] = value;
    };
    eq('source', filter.source);
    eq('backend', filter.backend);
    eq('status', filter.status);
    eq('user_id', filter.user_id);
    if (filter.status === undefined && filter.statusClass !== undefined) {
      columns.push('status >= @statusFrom AND status < @statusTo');
      params.statusFrom = filter.statusClass * 100;
      params.statusTo = filter.statusClass * 100 + 100;
    }
    if (filter.model !== undefined) {
      columns.push('(model = @model OR requested_model = @model)');
      params.model = filter.model;
    }
    addTimeRange(range, params, filter);
    if (filter.beforeId !== undefined && filter.beforeTs !== undefined) {
      range.push('ts <= @beforeTs AND (ts < @beforeTs OR id < @beforeId)');
      params.beforeTs = filter.beforeTs;
      params.beforeId = filter.beforeId;
    } else if (filter.beforeId !== undefined) {
      range.push('id < @beforeId');
      params.beforeId = filter.beforeId;
    }
    const listed =
      `${CALL_COLUMNS.join(', ')}, ` + `EXISTS (SELECT 1 FROM call_bodies b WHERE b.call_id = calls.id) AS has_bodies`;
    const order = 'ORDER BY ts DESC, id DESC LIMIT @limit';
    const prepare = (sql: string) => this.#db.prepare(sql);
    let rows: (StoredCall & { has_bodies: number })[];
    if (columns.length === 0) {
      rows = prepare(`SELECT ${listed} FROM calls ${whereClause(range)} ${order}`).all(params) as typeof rows;
    } else {
      rows = prepare(
        `SELECT ${listed} FROM (SELECT ${CALL_COLUMNS.join(', ')} FROM calls ${whereClause(range)}
           ORDER BY ts DESC, id DESC LIMIT ${INDEXED_SCAN_ROWS}) AS calls
         ${whereClause(columns)} ${order}`,
      ).all(params) as typeof rows;
      if (rows.length < (params.limit as number)) {
        // without a lower time bound, one pass over the table beats the index (a lookup per row)
        const table = filter.since === undefined ? 'calls NOT INDEXED' : 'calls';
        rows = prepare(`SELECT ${listed} FROM ${table} ${whereClause([...range, ...columns])} ${order}`).all(
          params,
        ) as typeof rows;
      }
    }
    return rows.map(({ has_bodies, ...r }) => callRow(r, has_bodies === 1));
  }

  /** One stored call by id, or undefined. */
  get(id: number): CallRow | undefined {
    const row = this.#db
      .prepare(
        `SELECT ${CALL_COLUMNS.join(', ')}, ` +
          `EXISTS (SELECT 1 FROM call_bodies b WHERE b.call_id = calls.id) AS has_bodies\n` +
          `        FROM calls WHERE id = ?`,
      )
      .get(id) as (StoredCall & { has_bodies: number }) | undefined;
    if (!row) return undefined;
    const { has_bodies, ...r } = row;
    return callRow(r, has_bodies === 1);
  }

  /** Stored calls with `afterId` < id <= `upToId`, by id, at most `limit`, as the rollup sums them (`summedCall`). */
  rollupRows(afterId: number, upToId: number, limit: number): SummedCall[] {
    return this.#db
      .prepare(
        `SELECT id, ts, backend, COALESCE(model, '${NO_MODEL}') AS model, source, status, duration_ms, ttft_ms,
           prompt_tokens, completion_tokens, cached_tokens, cache_write_tokens, ${SPENT_SQL} AS cost_usd, count
         FROM calls WHERE id > ? AND id <= ? ORDER BY id LIMIT ?`,
      )
      .all(afterId, upToId, limit) as SummedCall[];
  }

  /** The stored (gzip'd) bodies of one call; null when none were captured. */
  bodies(callId: number): StoredBodies | null {
    return (this.#selectBodies.get(callId) as StoredBodies | undefined) ?? null;
  }

  /**
   * Totals per backend, model, source or UTC day over a time range, most calls first (days in
   * order): the sums, shares and percentiles of call-aggregates.ts.
   */
  aggregate(group: AggregateGroup, filter: { since?: number; until?: number } = {}): AggregateRow[] {
    const where: string[] = [];
    const params: Record<string, unknown> = {};
    addTimeRange(where, params, filter);
    const key = GROUP_KEY_SQL[group];
    this.#cacheReporting ??= new Set(
      (this.#db.prepare(REPORTING_BACKENDS_SQL).all() as { backend: string }[]).map((r) => r.backend),
    );
    const totalsParams = { ...params, reporting: JSON.stringify([...this.#cacheReporting]) };
    const totals = this.#db
      .prepare(
        `SELECT ${key} AS key, ${TOTALS_SQL},
           SUM(CASE WHEN backend IN (SELECT value FROM json_each(@reporting)) THEN prompt_tokens ELSE 0 END)
             AS reporting_prompt_tokens
         FROM calls ${whereClause(where)} GROUP BY 1`,
      )
      .all(totalsParams) as (CallTotals & { key: string; reporting_prompt_tokens: number })[];
    // nearest rank over calls, not rows: the rank-th call is the first row whose running count reaches it
    const percentiles = this.#db
      .prepare(
        `WITH ranked AS (
           SELECT ${key} AS key, duration_ms,
             SUM(count) OVER (PARTITION BY ${key} ORDER BY duration_ms ROWS UNBOUNDED PRECEDING) AS reached,
             SUM(count) OVER (PARTITION BY ${key}) AS n
           FROM calls ${whereClause(where)})
         SELECT key,
           MIN(CASE WHEN reached >= ${nearestRankSql('n', 50)} THEN duration_ms END) AS p50_ms,
           MIN(CASE WHEN reached >= ${nearestRankSql('n', 95)} THEN duration_ms END) AS p95_ms
         FROM ranked GROUP BY key`,
      )
      .all(params) as { key: string; p50_ms: number; p95_ms: number }[];
    const byKey = new Map(percentiles.map((p) => [p.key, p]));
    const rows = totals.map(({ reporting_prompt_tokens, ...t }): AggregateRow => ({
      ...t,
      cache_hit_share: cacheHitShare(t.cached_tokens, reporting_prompt_tokens),
      p50_ms: byKey.get(t.key)?.p50_ms ?? 0,
      p95_ms: byKey.get(t.key)?.p95_ms ?? 0,
    }));
    return group === 'day'
      ? rows.sort((a, b) => a.key.localeCompare(b.key))
      : rows.sort((a, b) => b.calls - a.calls || a.key.localeCompare(b.key));
  }

  /**
   * One short prune transaction: at most `limit` bodies, else at most `limit` rows (their
   * bodies go with them), else the old quota counters and paid spend. Repeat until it returns `done`.
   */
  pruneStep(cutoffs: PruneCutoffs, limit: number): Pruned & { done: boolean } {
    const step = this.#pruneStep(cutoffs, limit);
    if (step.rows > 0) this.#cacheReporting = undefined;
    return step;
  }

  /** A consistent copy of stats.db at `destination`, taken on this connection (SQLite's online backup). */
  backupTo(destination: string): Promise<unknown> {
    return this.#db.backup(destination);
  }

  close(): void {
    this.#db.close();
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
