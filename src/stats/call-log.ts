/**
 * The call log: one row per call in `store/stats.db`, written in batches off the request path.
 *
 * `record()` only queues (O(1), no I/O); a timer flushes the queue in one transaction every
 * `flushMs`, so a crash loses at most that interval, and `close()` flushes what is left. The
 * quota counters (`requestsSince`, `costSince`) add the queued rows to what is on disk, so a
 * quota is hit exactly at its boundary even between flushes.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { openDatabase, type Db } from '../store/db.ts';
import { packBody, unpackBody, type PackedBody } from './bodies.ts';
import { effectiveCost } from './cost.ts';
import { STATS_MIGRATIONS } from './migrations.ts';
import { DAY_MS, startOfUtcDay, utcDayNumber } from './period.ts';
import { countsTowardQuota, RefusalReason, REFUSED_BACKEND, type CallRecord } from './record.ts';

export type { CallRecord } from './record.ts';

export interface CallLogOptions {
  /** Milliseconds between flushes of the queue. */
  flushMs: number;
  /** Days a call row is kept; 0 = forever. */
  retentionDays: number;
  captureBodies: boolean;
  /** Days captured bodies are kept (never longer than their row); 0 = as long as the row. */
  bodyRetentionDays: number;
  /** Clock for pruning; defaults to `Date.now`. */
  now?: () => number;
  /** Where a failed background flush or prune is reported (the queue is kept for a retry). */
  onError?: (err: unknown, during: 'flush' | 'prune') => void;
}

/** A stored call (bodies are fetched separately with `bodies(id)`). */
export type CallRow = Omit<CallRecord, 'request_body' | 'response_body'> & { id: number; has_bodies: boolean };

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
  calls: number;
  /** Calls with status >= 400 (refusals included). */
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  /** Spent: the upstream-reported cost where there is one, else the computed cost. */
  cost_usd: number;
  /** cached_tokens / prompt_tokens (0 when there were no prompt tokens). */
  cache_hit_share: number;
  /** Nearest-rank percentiles of duration_ms. */
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

const PRUNE_INTERVAL_MS = 3_600_000;
const FIRST_PRUNE_DELAY_MS = 10_000;
/** A queue this long is flushed on the next turn of the event loop instead of waiting. */
const EAGER_FLUSH_ROWS = 5_000;
/** Rows per background write transaction (~3 ms): keeps the event loop's pauses short. */
const WRITE_SLICE_ROWS = 500;
/** Days of per-user usage kept for quotas (a month window needs at most 31). */
const QUOTA_USAGE_KEEP_DAYS = 100;
const MAX_RECENT = 1_000;
/** While flushes fail (disk full, locked), at most this many rows wait in memory. */
const MAX_QUEUED_ROWS = 100_000;

/** SQL truth of `countsTowardQuota` (reason may be NULL). */
const COUNTS_TOWARD_QUOTA_SQL = `NOT (backend = '${REFUSED_BACKEND}' AND COALESCE(reason, '') IN ('${RefusalReason.quotaDay}', '${RefusalReason.quotaMonth}'))`;

const GROUP_KEY_SQL: Record<AggregateGroup, string> = {
  backend: 'backend',
  model: "COALESCE(model, '(none)')",
  source: 'source',
  day: "strftime('%Y-%m-%d', ts / 1000, 'unixepoch')",
};

const CALL_COLUMNS = [
  'ts', 'request_id', 'duration_ms', 'ttft_ms', 'endpoint', 'source', 'user_id', 'requested_model', 'model',
  'backend', 'status', 'reason', 'prompt_tokens', 'completion_tokens', 'cached_tokens', 'cache_write_tokens',
  'reasoning', 'cost_usd', 'upstream_cost_usd',
] as const;

type StoredCall = Omit<CallRow, 'id' | 'has_bodies'>;

interface PreparedCall {
  row: StoredCall;
  request: PackedBody | null;
  response: PackedBody | null;
}

export class CallLog {
  private readonly db: Db;
  private opts: CallLogOptions;
  private readonly now: () => number;
  private readonly statements: Statements;
  private queue: CallRecord[] = [];
  /** Queued rows per user, for the quota counters. */
  private pendingByUser = new Map<number, CallRecord[]>();
  /** Queued rows that count toward quotas, summed per user and UTC day (quota checks are O(days)). */
  private pendingDayTotals = new Map<number, Map<number, { requests: number; cost: number }>>();
  /** Per `user:since`, what is on disk; cleared by every write (flush, prune). */
  private readonly diskUsage = new Map<string, { requests: number; cost: number }>();
  private readonly timers: NodeJS.Timeout[] = [];
  private eagerFlushScheduled = false;
  private sliceScheduled = false;
  private flushCount = 0;
  private droppedCount = 0;
  private closed = false;

  private constructor(db: Db, opts: CallLogOptions) {
    this.db = db;
    this.opts = opts;
    this.now = opts.now ?? Date.now;
    this.statements = prepareStatements(db);
    const flushMs = Math.max(10, opts.flushMs);
    this.timers.push(
      setInterval(() => this.backgroundFlush(), flushMs).unref(),
      setTimeout(() => this.backgroundPrune(), FIRST_PRUNE_DELAY_MS).unref(),
      setInterval(() => this.backgroundPrune(), PRUNE_INTERVAL_MS).unref(),
    );
  }

  /** Opens (creating if needed) `<storeDir>/stats.db` and starts the flush and prune timers. */
  static open(storeDir: string, opts: CallLogOptions): CallLog {
    mkdirSync(storeDir, { recursive: true });
    return new CallLog(openDatabase(join(storeDir, 'stats.db'), STATS_MIGRATIONS), opts);
  }

  /** Applies reloaded retention and capture settings (the flush interval needs a restart). */
  reconfigure(patch: Partial<Pick<CallLogOptions, 'retentionDays' | 'captureBodies' | 'bodyRetentionDays'>>): void {
    this.opts = { ...this.opts, ...patch };
  }

  /** Queues one call. O(1), no I/O; the row reaches the database at the next flush. */
  record(rec: CallRecord): void {
    if (this.closed || this.queue.length >= MAX_QUEUED_ROWS) {
      // after close (shutdown order), or the database has failed for long: keep memory bounded
      this.droppedCount++;
      return;
    }
    this.queue.push(rec);
    if (typeof rec.user_id === 'number') {
      const mine = this.pendingByUser.get(rec.user_id);
      if (mine) mine.push(rec);
      else this.pendingByUser.set(rec.user_id, [rec]);
      if (countsTowardQuota(rec)) this.addPendingDayTotal(rec.user_id, rec);
    }
    // every EAGER_FLUSH_ROWS rows, not on every row: a failing database is not retried per call
    if (this.queue.length % EAGER_FLUSH_ROWS === 0 && !this.eagerFlushScheduled) {
      this.eagerFlushScheduled = true;
      setImmediate(() => {
        this.eagerFlushScheduled = false;
        this.backgroundFlush();
      });
    }
  }

  /** Rows queued and not yet written. */
  get pending(): number {
    return this.queue.length;
  }

  /** Rows dropped: recorded after `close()`, or while the queue was full of failed flushes. */
  get dropped(): number {
    return this.droppedCount;
  }

  /** Flush transactions committed so far. */
  get flushes(): number {
    return this.flushCount;
  }

  /** Writes every queued row (and its bodies and quota counters) in one transaction. */
  flush(): void {
    this.writeOldest(this.queue.length);
  }

  /**
   * Writes the `n` oldest queued rows in one transaction and forgets them from the pending
   * counters. The background writer uses slices so that no single write stalls the event
   * loop for long, however busy the gateway is.
   */
  private writeOldest(n: number): void {
    if (this.closed || this.queue.length === 0) return;
    const all = n >= this.queue.length;
    const batch = all ? this.queue : this.queue.slice(0, n);
    this.statements.writeBatch(batch.map((rec) => this.prepare(rec)), quotaUsageOf(batch));
    this.flushCount++;
    this.diskUsage.clear();
    if (all) {
      this.queue = [];
      this.pendingByUser = new Map();
      this.pendingDayTotals = new Map();
      return;
    }
    this.queue = this.queue.slice(n);
    this.forgetPending(batch);
  }

  /** Takes written rows (the oldest of each user's pending list) out of the pending counters. */
  private forgetPending(written: readonly CallRecord[]): void {
    const writtenPerUser = new Map<number, number>();
    for (const rec of written) {
      if (typeof rec.user_id !== 'number') continue;
      writtenPerUser.set(rec.user_id, (writtenPerUser.get(rec.user_id) ?? 0) + 1);
      if (!countsTowardQuota(rec)) continue;
      const total = this.pendingDayTotals.get(rec.user_id)?.get(utcDayNumber(rec.ts));
      if (total) {
        total.requests--;
        total.cost -= effectiveCost(rec);
      }
    }
    for (const [user, count] of writtenPerUser) {
      const rest = this.pendingByUser.get(user)?.slice(count) ?? [];
      if (rest.length) this.pendingByUser.set(user, rest);
      else {
        this.pendingByUser.delete(user);
        this.pendingDayTotals.delete(user);
      }
    }
  }

  /**
   * Flushes, stops the timers and closes the database. A failing last flush is reported
   * through `onError`, not thrown. Later `record()` calls are dropped.
   */
  close(): void {
    if (this.closed) return;
    for (const t of this.timers) clearInterval(t);
    try {
      this.flush();
    } catch (err) {
      this.report(err, 'flush');
    }
    this.closed = true;
    this.db.close();
  }

  /** Calls newest first, filtered. Flushes first, so it sees every recorded call. */
  recent(filter: CallFilter = {}): CallRow[] {
    this.flush();
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
    return rows.map((r) => ({ ...r, has_bodies: r.has_bodies === 1 }));
  }

  /** The captured bodies of one call, decompressed; null when none were captured. */
  bodies(callId: number): CapturedBodies | null {
    this.flush();
    const row = this.statements.selectBodies.get(callId) as
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
    this.flush();
    const where: string[] = [];
    const params: Record<string, unknown> = {};
    addTimeRange(where, params, filter);
    const key = GROUP_KEY_SQL[group];
    const totals = this.db
      .prepare(
        `SELECT ${key} AS key, COUNT(*) AS calls, SUM(status >= 400) AS errors,
           SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens,
           SUM(cached_tokens) AS cached_tokens, SUM(cache_write_tokens) AS cache_write_tokens,
           SUM(COALESCE(upstream_cost_usd, cost_usd)) AS cost_usd
         FROM calls ${whereClause(where)} GROUP BY 1`,
      )
      .all(params) as Omit<AggregateRow, 'cache_hit_share' | 'p50_ms' | 'p95_ms'>[];
    const percentiles = this.db
      .prepare(
        `WITH ranked AS (
           SELECT ${key} AS key, duration_ms,
             ROW_NUMBER() OVER (PARTITION BY ${key} ORDER BY duration_ms) AS rn,
             COUNT(*) OVER (PARTITION BY ${key}) AS n
           FROM calls ${whereClause(where)})
         SELECT key,
           MAX(CASE WHEN rn = (n * 50 + 99) / 100 THEN duration_ms END) AS p50_ms,
           MAX(CASE WHEN rn = (n * 95 + 99) / 100 THEN duration_ms END) AS p95_ms
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

  /** Calls of a user since `since` (unix ms) that count towards quotas, queued ones included. */
  requestsSince(userId: number, since: number): number {
    let n = this.fromDisk(userId, since).requests;
    if (startOfUtcDay(since) === since) return n + this.pendingSinceDay(userId, since).requests;
    for (const rec of this.pendingByUser.get(userId) ?? []) {
      if (rec.ts >= since && countsTowardQuota(rec)) n++;
    }
    return n;
  }

  /** USD a user spent since `since` (upstream-reported cost where known), queued calls included. */
  costSince(userId: number, since: number): number {
    let usd = this.fromDisk(userId, since).cost;
    if (startOfUtcDay(since) === since) return usd + this.pendingSinceDay(userId, since).cost;
    for (const rec of this.pendingByUser.get(userId) ?? []) {
      if (rec.ts >= since && countsTowardQuota(rec)) usd += effectiveCost(rec);
    }
    return usd;
  }

  /**
   * Deletes rows older than `retentionDays` and bodies older than `bodyRetentionDays` (or
   * than their row), plus quota counters older than any quota window.
   */
  prune(now: number = this.now()): { rows: number; bodies: number } {
    if (this.closed) return { rows: 0, bodies: 0 };
    const rowCutoff = this.opts.retentionDays > 0 ? now - this.opts.retentionDays * DAY_MS : -Infinity;
    const bodyCutoff = Math.max(
      rowCutoff,
      this.opts.bodyRetentionDays > 0 ? now - this.opts.bodyRetentionDays * DAY_MS : -Infinity,
    );
    this.diskUsage.clear();
    return this.statements.prune(rowCutoff, bodyCutoff, utcDayNumber(now) - QUOTA_USAGE_KEEP_DAYS);
  }

  private addPendingDayTotal(userId: number, rec: CallRecord): void {
    let days = this.pendingDayTotals.get(userId);
    if (!days) this.pendingDayTotals.set(userId, (days = new Map()));
    const day = utcDayNumber(rec.ts);
    const total = days.get(day) ?? { requests: 0, cost: 0 };
    total.requests++;
    total.cost += effectiveCost(rec);
    days.set(day, total);
  }

  /** Queued quota usage of a user from the UTC day starting at `dayStart` on. */
  private pendingSinceDay(userId: number, dayStart: number): { requests: number; cost: number } {
    const sum = { requests: 0, cost: 0 };
    const first = utcDayNumber(dayStart);
    for (const [day, total] of this.pendingDayTotals.get(userId) ?? []) {
      if (day < first) continue;
      sum.requests += total.requests;
      sum.cost += total.cost;
    }
    return sum;
  }

  /**
   * Quota usage on disk since `since`: whole UTC days from the daily counters (a primary-key
   * range of at most a few dozen rows), a partial first day from the calls index.
   */
  private fromDisk(userId: number, since: number): { requests: number; cost: number } {
    if (this.closed) return { requests: 0, cost: 0 };
    const key = `${userId}:${since}`;
    let usage = this.diskUsage.get(key);
    if (!usage) {
      usage = this.readDiskUsage(userId, since);
      this.diskUsage.set(key, usage);
    }
    return usage;
  }

  /** What stats.db holds for a user since `since` (cached in `diskUsage` until the next write). */
  private readDiskUsage(userId: number, since: number): { requests: number; cost: number } {
    const dayStart = startOfUtcDay(since);
    const firstWholeDay = dayStart === since ? utcDayNumber(since) : utcDayNumber(since) + 1;
    const whole = this.statements.usageFromDay.get(userId, firstWholeDay) as { requests: number; cost: number };
    if (dayStart === since) return whole;
    const partial = this.statements.usageBetween.get(userId, since, dayStart + DAY_MS) as {
      requests: number;
      cost: number;
    };
    return { requests: whole.requests + partial.requests, cost: whole.cost + partial.cost };
  }

  private prepare(rec: CallRecord): PreparedCall {
    const capture = this.opts.captureBodies;
    return {
      row: storedCall(rec),
      request: capture ? packBody(rec.request_body) : null,
      response: capture ? packBody(rec.response_body) : null,
    };
  }

  /** Writes the queue in slices of WRITE_SLICE_ROWS, yielding to the event loop between them. */
  private backgroundFlush(): void {
    if (this.closed) return;
    try {
      this.writeOldest(WRITE_SLICE_ROWS);
    } catch (err) {
      this.report(err, 'flush');
      return;
    }
    if (this.queue.length > 0 && !this.sliceScheduled) {
      this.sliceScheduled = true;
      setImmediate(() => {
        this.sliceScheduled = false;
        this.backgroundFlush();
      });
    }
  }

  private backgroundPrune(): void {
    try {
      this.prune();
    } catch (err) {
      this.report(err, 'prune');
    }
  }

  private report(err: unknown, during: 'flush' | 'prune'): void {
    if (this.opts.onError) this.opts.onError(err, during);
    else process.emitWarning(`call log ${during} failed: ${err instanceof Error ? err.message : String(err)}`);
  }
}

type Statements = ReturnType<typeof prepareStatements>;

function prepareStatements(db: Db) {
  const insertCall = db.prepare(
    `INSERT INTO calls (${CALL_COLUMNS.join(', ')}) VALUES (${CALL_COLUMNS.map(() => '?').join(', ')})`,
  );
  const insertBodies = db.prepare(
    `INSERT INTO call_bodies (call_id, ts, request, response, request_bytes, response_bytes)
     VALUES (?, ?, ?, ?, ?, ?)`,
  );
  const addUsage = db.prepare(
    `INSERT INTO quota_usage (user_id, day, requests, cost_usd) VALUES (?, ?, ?, ?)
     ON CONFLICT (user_id, day) DO UPDATE SET
       requests = requests + excluded.requests, cost_usd = cost_usd + excluded.cost_usd`,
  );
  const deleteBodies = db.prepare('DELETE FROM call_bodies WHERE ts < ?');
  const deleteCalls = db.prepare('DELETE FROM calls WHERE ts < ?');
  const deleteUsage = db.prepare('DELETE FROM quota_usage WHERE day < ?');

  return {
    writeBatch: db.transaction((calls: PreparedCall[], usage: QuotaUsage[]) => {
      for (const c of calls) {
        // positional binding: markedly cheaper than named parameters on a hot batch
        const id = insertCall.run(CALL_COLUMNS.map((col) => c.row[col])).lastInsertRowid;
        if (c.request || c.response) {
          insertBodies.run(
            id, c.row.ts, c.request?.gz ?? null, c.response?.gz ?? null, c.request?.bytes ?? null, c.response?.bytes ?? null,
          );
        }
      }
      for (const u of usage) addUsage.run(u.user_id, u.day, u.requests, u.cost);
    }),
    prune: db.transaction((rowCutoff: number, bodyCutoff: number, firstUsageDay: number) => {
      const bodies = Number.isFinite(bodyCutoff) ? deleteBodies.run(bodyCutoff).changes : 0;
      const rows = Number.isFinite(rowCutoff) ? deleteCalls.run(rowCutoff).changes : 0;
      deleteUsage.run(firstUsageDay);
      return { rows, bodies };
    }),
    selectBodies: db.prepare(
      'SELECT request, response, request_bytes, response_bytes FROM call_bodies WHERE call_id = ?',
    ),
    usageFromDay: db.prepare(
      `SELECT COALESCE(SUM(requests), 0) AS requests, COALESCE(SUM(cost_usd), 0) AS cost
       FROM quota_usage WHERE user_id = ? AND day >= ?`,
    ),
    usageBetween: db.prepare(
      `SELECT COUNT(*) AS requests, COALESCE(SUM(COALESCE(upstream_cost_usd, cost_usd)), 0) AS cost
       FROM calls WHERE user_id = ? AND ts >= ? AND ts < ? AND ${COUNTS_TOWARD_QUOTA_SQL}`,
    ),
  };
}

interface QuotaUsage {
  user_id: number;
  day: number;
  requests: number;
  cost: number;
}

/** Per user and UTC day: the calls of a batch that count towards quotas, and their cost. */
function quotaUsageOf(batch: readonly CallRecord[]): QuotaUsage[] {
  const byKey = new Map<string, QuotaUsage>();
  for (const rec of batch) {
    if (typeof rec.user_id !== 'number' || !countsTowardQuota(rec)) continue;
    const day = utcDayNumber(rec.ts);
    const key = `${rec.user_id}:${day}`;
    const u = byKey.get(key) ?? { user_id: rec.user_id, day, requests: 0, cost: 0 };
    u.requests++;
    u.cost += effectiveCost(rec);
    byKey.set(key, u);
  }
  return [...byKey.values()];
}

/**
 * A record as stored: counts made whole and non-negative, missing fields filled, no bodies.
 * A malformed record must never fail the batch (a poison row would wedge every flush).
 */
function storedCall(rec: CallRecord): StoredCall {
  return {
    ts: whole(rec.ts),
    request_id: String(rec.request_id ?? ''),
    duration_ms: whole(rec.duration_ms),
    ttft_ms: rec.ttft_ms === null || rec.ttft_ms === undefined ? null : whole(rec.ttft_ms),
    endpoint: String(rec.endpoint ?? ''),
    source: String(rec.source ?? ''),
    user_id: Number.isInteger(rec.user_id) ? rec.user_id : null,
    requested_model: rec.requested_model ?? null,
    model: rec.model ?? null,
    backend: String(rec.backend ?? ''),
    status: whole(rec.status),
    reason: rec.reason ?? null,
    prompt_tokens: whole(rec.prompt_tokens),
    completion_tokens: whole(rec.completion_tokens),
    cached_tokens: whole(rec.cached_tokens),
    cache_write_tokens: whole(rec.cache_write_tokens),
    reasoning: rec.reasoning ?? null,
    cost_usd: Number.isFinite(rec.cost_usd) && rec.cost_usd > 0 ? rec.cost_usd : 0,
    upstream_cost_usd:
      typeof rec.upstream_cost_usd === 'number' && Number.isFinite(rec.upstream_cost_usd) && rec.upstream_cost_usd >= 0
        ? rec.upstream_cost_usd
        : null,
  };
}

function whole(n: number): number {
  return Number.isFinite(n) && n > 0 ? Math.round(n) : 0;
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
