/**
 * The call log: one row per call in `store/stats.db`, written in batches off the request path.
 *
 * `record()` only queues (O(1), no I/O). Every `flushMs` a timer hands the queue to the
 * writer thread (call-log-writer.ts), which writes it in one transaction on its own
 * connection — commit and WAL I/O, body gzip and the hourly prune never pause this thread's
 * event loop. So a crash loses at most that interval, and `close()` flushes what is left.
 *
 * Rows are "pending" from `record()` until their batch committed: queued here, then in flight
 * to the writer. The quota counters (`requestsSince`, `costSince`) add the pending rows to
 * what is on disk, so a quota is hit exactly at its boundary even between flushes.
 *
 * `flush()` is synchronous: it waits (Atomics, bounded) for the batch in flight and writes
 * the rest of the queue itself, on the main connection. Reads go through the main
 * connection too (WAL readers and the writer do not block each other). Until the writer
 * thread is up, and for good if it cannot start or dies, the main thread writes in short
 * slices as it did before there was a writer thread.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { openDatabase, type Db } from '../store/db.ts';
import { unpackBody } from './bodies.ts';
import { CALL_COLUMNS, callBatchOf, type StoredCall } from './call-rows.ts';
import { prepareCallWrites, type CallWrites, type PruneCutoffs } from './call-writes.ts';
import { STATS_MIGRATIONS } from './migrations.ts';
import { DAY_MS, startOfUtcDay, utcDayNumber } from './period.ts';
import { PendingUsage } from './pending-usage.ts';
import { RefusalReason, REFUSED_BACKEND, type CallRecord } from './record.ts';
import { WriterSignals, type WriterMessage } from './writer-protocol.ts';
import { WriterThread } from './writer-thread.ts';
import { WriteBatchPacker } from './write-batch-packer.ts';

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

/** Seams for tests; production passes none. */
export interface CallLogSeams {
  /** The module the writer thread runs; a broken one simulates a writer that cannot start. */
  writerModule?: URL;
  /** Sees the writer thread when it starts (terminating it simulates a crash). */
  onWriterStarted?: (worker: Worker) => void;
  /** Delay of the first background prune (default 10 s). */
  firstPruneDelayMs?: number;
}

/** A stored call (bodies are fetched separately with `bodies(id)`). */
export type CallRow = StoredCall & { id: number; has_bodies: boolean };

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
/** Rows per batch posted to the writer thread. */
const MAX_BATCH_ROWS = 5_000;
/** Rows packed for the writer per event-loop turn (~0.5 µs each: turns stay well under a ms)... */
const PACK_SLICE_ROWS = 500;
/** ...or fewer, once their captured bodies (copied once each) reach this many bytes. */
const PACK_SLICE_BODY_BYTES = 512 * 1024;
/** Rows per write transaction when this thread writes in the background (~3 ms each). */
const WRITE_SLICE_ROWS = 500;
/**
 * How long `flush()` waits for the writer to settle the batch in flight. Longer than the
 * connection's busy timeout (5 s), so a batch stuck on a lock fails, and is retried, first.
 */
const FLUSH_WAIT_MS = 6_000;
/** A writer thread not ready this long after it was started is given up on. */
const WRITER_START_TIMEOUT_MS = 15_000;
/** How long a quota read waits for a commit under way in the writer (usually a few ms). */
const COMMIT_WAIT_MS = 1_000;
/** Days of per-user usage kept for quotas (a month window needs at most 31). */
const QUOTA_USAGE_KEEP_DAYS = 100;
const MAX_RECENT = 1_000;
/** While flushes fail (disk full, locked), at most this many rows wait in memory. */
const MAX_PENDING_ROWS = 100_000;

/** SQL truth of `countsTowardQuota` (reason may be NULL). */
const COUNTS_TOWARD_QUOTA_SQL = `NOT (backend = '${REFUSED_BACKEND}' AND COALESCE(reason, '') IN ('${RefusalReason.quotaDay}', '${RefusalReason.quotaMonth}'))`;

const GROUP_KEY_SQL: Record<AggregateGroup, string> = {
  backend: 'backend',
  model: "COALESCE(model, '(none)')",
  source: 'source',
  day: "strftime('%Y-%m-%d', ts / 1000, 'unixepoch')",
};

/** A batch handed to the writer thread and not settled yet. */
interface InFlight {
  seq: number;
  rows: CallRecord[];
  /** False while it is still being packed (over a few event-loop turns). */
  posted: boolean;
}

export class CallLog {
  private readonly db: Db;
  private readonly file: string;
  private opts: CallLogOptions;
  private readonly seams: CallLogSeams;
  private readonly now: () => number;
  private readonly writes: CallWrites;
  private readonly reads: Reads;
  /** Started with the first background write; null before, and for good once it failed. */
  private writer: WriterThread | null = null;
  private writerFailed = false;
  private queue: CallRecord[] = [];
  private inFlight: InFlight | null = null;
  private pruneInFlight: number | null = null;
  /** A background prune came due while the writer thread was starting. */
  private pruneDue = false;
  private lastSeq = 0;
  /** Quota usage of the rows queued or in flight, for the quota counters. */
  private readonly pendingUsage = new PendingUsage();
  /** Per `user:since`, what is on disk; cleared by every write (flush, prune). */
  private readonly diskUsage = new Map<string, { requests: number; cost: number }>();
  private readonly timers: NodeJS.Timeout[] = [];
  private eagerFlushScheduled = false;
  private sliceScheduled = false;
  private flushCount = 0;
  private mainThreadWriteCount = 0;
  private droppedCount = 0;
  private closed = false;

  private constructor(db: Db, file: string, opts: CallLogOptions, seams: CallLogSeams) {
    this.db = db;
    this.file = file;
    this.opts = opts;
    this.seams = seams;
    this.now = opts.now ?? Date.now;
    this.writes = prepareCallWrites(db);
    this.reads = prepareReads(db);
    const flushMs = Math.max(10, opts.flushMs);
    this.timers.push(
      setInterval(() => this.backgroundFlush(), flushMs).unref(),
      setTimeout(() => this.backgroundPrune(), seams.firstPruneDelayMs ?? FIRST_PRUNE_DELAY_MS).unref(),
      setInterval(() => this.backgroundPrune(), PRUNE_INTERVAL_MS).unref(),
    );
  }

  /** Opens (creating if needed) `<storeDir>/stats.db` and starts the flush and prune timers. */
  static open(storeDir: string, opts: CallLogOptions, seams: CallLogSeams = {}): CallLog {
    mkdirSync(storeDir, { recursive: true });
    const file = join(storeDir, 'stats.db');
    return new CallLog(openDatabase(file, STATS_MIGRATIONS), file, opts, seams);
  }

  /** Applies reloaded retention and capture settings (the flush interval needs a restart). */
  reconfigure(patch: Partial<Pick<CallLogOptions, 'retentionDays' | 'captureBodies' | 'bodyRetentionDays'>>): void {
    this.opts = { ...this.opts, ...patch };
  }

  /** Queues one call. O(1), no I/O; the row reaches the database at the next flush. */
  record(rec: CallRecord): void {
    if (this.closed || this.pending >= MAX_PENDING_ROWS) {
      // after close (shutdown order), or the database has failed for long: keep memory bounded
      this.droppedCount++;
      return;
    }
    this.queue.push(rec);
    this.pendingUsage.add(rec);
    // every EAGER_FLUSH_ROWS rows, not on every row: a failing database is not retried per call
    if (this.queue.length % EAGER_FLUSH_ROWS === 0 && !this.eagerFlushScheduled) {
      this.eagerFlushScheduled = true;
      setImmediate(() => {
        this.eagerFlushScheduled = false;
        this.backgroundFlush();
      });
    }
  }

  /** Rows recorded and not yet written (queued, or in flight to the writer thread). */
  get pending(): number {
    return this.queue.length + (this.inFlight?.rows.length ?? 0);
  }

  /** Rows dropped: recorded after `close()`, or while the queue was full of failed flushes. */
  get dropped(): number {
    return this.droppedCount;
  }

  /** Write transactions committed so far (by the writer thread and by this thread). */
  get flushes(): number {
    return this.flushCount;
  }

  /** Write transactions this thread committed itself: `flush()`, or while no writer thread runs. */
  get mainThreadWrites(): number {
    return this.mainThreadWriteCount;
  }

  /** Whether background writes go to the writer thread (it starts with the first one). */
  get writerReady(): boolean {
    return this.writer?.ready ?? false;
  }

  /**
   * Starts the writer thread now instead of with the first background write, so that the
   * first batch does not wait for it (~0.3 s). Safe to call more than once.
   */
  startWriter(): void {
    if (!this.closed) this.startedWriter();
  }

  /**
   * Puts every recorded row on disk before it returns: waits for the batch the writer thread
   * has in flight, then writes the rest of the queue (rows, bodies, quota counters) in one
   * transaction here. Throws when that transaction fails (the rows stay queued).
   */
  flush(): void {
    if (this.closed) return;
    this.awaitInFlight();
    this.writeOldest(this.queue.length);
  }

  /**
   * Flushes, stops the timers and the writer thread, and closes the database. A failing
   * last flush is reported through `onError`, not thrown. Later `record()` calls are dropped.
   */
  close(): void {
    if (this.closed) return;
    for (const t of this.timers) clearInterval(t);
    try {
      this.flush();
    } catch (err) {
      this.report(err, 'flush');
    }
    if (this.inFlight) {
      this.report(new Error(`call log closed with ${this.inFlight.rows.length} rows unconfirmed by the writer thread`), 'flush');
    }
    this.closed = true;
    this.writer?.terminate(); // everything is written: no need to wait for the thread to end
    this.writer = null;
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
    const row = this.reads.selectBodies.get(callId) as
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

  /** Calls of a user since `since` (unix ms) that count towards quotas, pending ones included. */
  requestsSince(userId: number, since: number): number {
    return this.fromDisk(userId, since).requests + this.pendingUsage.since(userId, since).requests;
  }

  /** USD a user spent since `since` (upstream-reported cost where known), pending calls included. */
  costSince(userId: number, since: number): number {
    return this.fromDisk(userId, since).cost + this.pendingUsage.since(userId, since).cost;
  }

  /**
   * Deletes rows older than `retentionDays` and bodies older than `bodyRetentionDays` (or
   * than their row), plus quota counters older than any quota window, in one transaction on
   * this thread. (The hourly background prune runs in the writer thread, in short steps.)
   */
  prune(now: number = this.now()): { rows: number; bodies: number } {
    if (this.closed) return { rows: 0, bodies: 0 };
    this.diskUsage.clear();
    return this.writes.pruneAll(this.pruneCutoffs(now));
  }

  private pruneCutoffs(now: number): PruneCutoffs {
    const rowCutoff = this.opts.retentionDays > 0 ? now - this.opts.retentionDays * DAY_MS : -Infinity;
    const bodyCutoff = Math.max(
      rowCutoff,
      this.opts.bodyRetentionDays > 0 ? now - this.opts.bodyRetentionDays * DAY_MS : -Infinity,
    );
    return { rowCutoff, bodyCutoff, firstUsageDay: utcDayNumber(now) - QUOTA_USAGE_KEEP_DAYS };
  }

  // --- background writes ---

  /**
   * Hands the queue to the writer thread (started by the first call; until it is ready,
   * typically a few hundred ms, the rows wait). Without a writer thread, writes the queue
   * here in slices, yielding to the event loop between them.
   */
  private backgroundFlush(): void {
    if (this.closed || this.queue.length === 0) return;
    const writer = this.startedWriter();
    if (writer?.ready) {
      this.collectSettled();
      if (!this.inFlight) this.postBatch(writer);
      return;
    }
    if (writer) return; // it posts 'ready', which flushes
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

  /**
   * Moves the oldest queued rows in flight as one batch, packs them a slice per event-loop
   * turn and posts them (bodies raw: the writer gzips them). `flush()` may take the batch
   * back before it is posted.
   */
  private postBatch(writer: WriterThread): void {
    const rows = this.queue.length <= MAX_BATCH_ROWS ? this.queue : this.queue.slice(0, MAX_BATCH_ROWS);
    this.queue = rows === this.queue ? [] : this.queue.slice(MAX_BATCH_ROWS);
    const batch: InFlight = { seq: (this.lastSeq = WriterSignals.next(this.lastSeq)), rows, posted: false };
    this.inFlight = batch;
    const packer = new WriteBatchPacker(rows, this.opts.captureBodies);
    const packSlice = () => {
      if (this.inFlight !== batch) return; // taken back by flush(), or the writer is gone
      try {
        if (!packer.pack(PACK_SLICE_ROWS, PACK_SLICE_BODY_BYTES)) {
          setImmediate(packSlice);
          return;
        }
        const { op, transfer } = packer.op(batch.seq);
        writer.post(op, transfer);
        batch.posted = true;
      } catch (err) {
        this.takeBackInFlight();
        this.report(err, 'flush');
      }
    };
    packSlice();
  }

  /** Puts the batch in flight back at the front of the queue. */
  private takeBackInFlight(): void {
    if (!this.inFlight) return;
    this.queue = this.inFlight.rows.concat(this.queue);
    this.inFlight = null;
  }

  /** Has the writer thread prune in short steps; without one, prunes here. */
  private backgroundPrune(): void {
    if (this.closed) return;
    const writer = this.startedWriter();
    if (writer?.ready) {
      this.pruneDue = false;
      if (this.pruneInFlight !== null) return;
      const seq = (this.lastSeq = WriterSignals.next(this.lastSeq));
      this.pruneInFlight = seq;
      writer.post({ kind: 'prune', seq, ...this.pruneCutoffs(this.now()) });
      return;
    }
    if (writer) {
      this.pruneDue = true; // done on 'ready'
      return;
    }
    try {
      this.prune();
    } catch (err) {
      this.report(err, 'prune');
    }
  }

  /** The writer thread, started on first use; null while none can run. */
  private startedWriter(): WriterThread | null {
    if (this.writer && !this.writer.ready && performance.now() - this.writer.startedAt > WRITER_START_TIMEOUT_MS) {
      this.onWriterGone(new Error(`not ready ${WRITER_START_TIMEOUT_MS} ms after it was started`));
    }
    if (this.writer || this.writerFailed) return this.writer;
    try {
      this.writer = new WriterThread({
        file: this.file,
        module: this.seams.writerModule,
        onMessage: (message) => this.onWriterMessage(message),
        onGone: (err) => this.onWriterGone(err),
      });
      this.seams.onWriterStarted?.(this.writer.worker);
    } catch (err) {
      this.onWriterGone(err instanceof Error ? err : new Error(String(err)));
    }
    return this.writer;
  }

  private onWriterMessage(message: WriterMessage): void {
    if (this.closed) return;
    if (message.kind === 'ready') {
      this.backgroundFlush();
      if (this.pruneDue) this.backgroundPrune();
      return;
    }
    if (!message.ok) this.report(new Error(message.error), message.kind === 'prune' ? 'prune' : 'flush');
    this.applySettled(message.seq, message.ok); // a no-op when flush() already applied it
    if (this.queue.length >= EAGER_FLUSH_ROWS) this.backgroundFlush(); // a backlog goes on at once
  }

  /** The writer cannot start or died: report it once, take its unsettled batch back, write here from now on. */
  private onWriterGone(err: Error): void {
    if (this.closed || this.writerFailed) return;
    this.writerFailed = true;
    this.report(new Error(`call log writer thread unavailable, writing on the main thread: ${err.message}`), 'flush');
    if (this.writer) this.collectSettled();
    this.takeBackInFlight();
    this.pruneInFlight = null;
    this.pruneDue = false;
    this.writer?.terminate();
    this.writer = null;
    if (this.queue.length > 0) setImmediate(() => this.backgroundFlush()); // what waited for the writer
  }

  /**
   * Blocks until the writer settled the batch in flight (bounded: reported, and left in
   * flight, on timeout). A batch still being packed is taken back instead.
   */
  private awaitInFlight(): void {
    if (!this.inFlight || !this.writer) return;
    if (!this.inFlight.posted) {
      this.takeBackInFlight();
      return;
    }
    if (!this.writer.signals.waitSettled([this.inFlight.seq], FLUSH_WAIT_MS)) {
      this.report(new Error(`call log writer thread did not settle a batch within ${FLUSH_WAIT_MS} ms`), 'flush');
      return;
    }
    this.collectSettled();
  }

  /** Applies what the writer settled in shared memory, ahead of its messages. */
  private collectSettled(): void {
    const signals = this.writer?.signals;
    if (!signals) return;
    for (const seq of [this.inFlight?.seq, this.pruneInFlight]) {
      if (seq === undefined || seq === null) continue;
      const status = signals.status(seq);
      if (status !== 'pending') this.applySettled(seq, status === 'ok');
    }
  }

  /** A committed batch leaves the pending counters; a failed one goes back to the front of the queue. */
  private applySettled(seq: number, ok: boolean): void {
    if (this.pruneInFlight === seq) {
      this.pruneInFlight = null;
      this.diskUsage.clear();
      return;
    }
    if (this.inFlight?.seq !== seq) return;
    const { rows } = this.inFlight;
    this.inFlight = null;
    if (!ok) {
      this.queue = rows.concat(this.queue);
      return;
    }
    // (the ok path also runs for a batch settled in shared memory before its message arrives)
    this.flushCount++;
    this.diskUsage.clear();
    this.forgetPending(rows);
  }

  // --- writes on this thread ---

  /** Writes the `n` oldest queued rows in one transaction and forgets them from the pending counters. */
  private writeOldest(n: number): void {
    if (this.closed || this.queue.length === 0) return;
    const all = n >= this.queue.length;
    const rows = all ? this.queue : this.queue.slice(0, n);
    this.writes.writeBatch(callBatchOf(rows, this.opts.captureBodies));
    this.flushCount++;
    this.mainThreadWriteCount++;
    this.diskUsage.clear();
    this.queue = all ? [] : this.queue.slice(n);
    this.forgetPending(rows);
  }

  // --- pending counters ---

  /** Written rows leave the pending counters. */
  private forgetPending(written: readonly CallRecord[]): void {
    if (this.queue.length === 0 && !this.inFlight) this.pendingUsage.clear();
    else this.pendingUsage.forget(written);
  }

  // --- quota usage on disk ---

  /**
   * Quota usage on disk since `since`: whole UTC days from the daily counters (a primary-key
   * range of at most a few dozen rows), a partial first day from the calls index.
   */
  private fromDisk(userId: number, since: number): { requests: number; cost: number } {
    if (this.closed) return { requests: 0, cost: 0 };
    const key = `${userId}:${since}`;
    let usage = this.diskUsage.get(key);
    if (!usage) {
      usage = this.readDiskUsageExactly(userId, since);
      this.diskUsage.set(key, usage);
    }
    return usage;
  }

  /**
   * Disk usage that leaves out exactly the rows still counted as pending. The writer thread
   * may commit the batch in flight at any moment, before its message arrives; a read then
   * would count those rows twice. So: wait out a commit under way, apply what has settled,
   * read, and retry if a commit began meanwhile (a seqlock on the writer's commit epoch).
   */
  private readDiskUsageExactly(userId: number, since: number): { requests: number; cost: number } {
    const signals = this.writer?.signals;
    for (let attempt = 0; attempt < 3 && signals && this.inFlight?.posted; attempt++) {
      const epoch = signals.quietEpoch(COMMIT_WAIT_MS);
      if (epoch === null) break; // the writer is stuck in a commit: count its batch twice for a while
      this.collectSettled();
      if (!this.inFlight?.posted) break;
      const usage = this.readDiskUsage(userId, since);
      if (signals.epoch === epoch) return usage;
    }
    return this.readDiskUsage(userId, since);
  }

  /** What stats.db holds for a user since `since`. */
  private readDiskUsage(userId: number, since: number): { requests: number; cost: number } {
    const dayStart = startOfUtcDay(since);
    const firstWholeDay = dayStart === since ? utcDayNumber(since) : utcDayNumber(since) + 1;
    const whole = this.reads.usageFromDay.get(userId, firstWholeDay) as { requests: number; cost: number };
    if (dayStart === since) return whole;
    const partial = this.reads.usageBetween.get(userId, since, dayStart + DAY_MS) as {
      requests: number;
      cost: number;
    };
    return { requests: whole.requests + partial.requests, cost: whole.cost + partial.cost };
  }

  private report(err: unknown, during: 'flush' | 'prune'): void {
    if (this.opts.onError) this.opts.onError(err, during);
    else process.emitWarning(`call log ${during} failed: ${err instanceof Error ? err.message : String(err)}`);
  }
}

type Reads = ReturnType<typeof prepareReads>;

function prepareReads(db: Db) {
  return {
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
