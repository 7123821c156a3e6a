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
 * the rest of the queue itself, on the main connection. Reads (call-queries.ts) go through
 * the main connection too (WAL readers and the writer do not block each other). Until the
 * writer thread is up, and for good if it cannot start or dies, the main thread writes in
 * short slices as it did before there was a writer thread.
 *
 * Unauthenticated 401s are folded per source and minute (refusal-aggregator.ts) and queued
 * once their minute ended. With `logCalls` off no row is written, but the calls of users
 * still feed the quota counters.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { openDatabase, type Db } from '../store/db.ts';
import { callBatchOf } from './call-rows.ts';
import { CallQueries, type AggregateGroup, type AggregateRow, type CallFilter, type CallRow, type CapturedBodies } from './call-queries.ts';
import { prepareCallWrites, type CallWrites, type PruneCutoffs } from './call-writes.ts';
import { STATS_MIGRATIONS } from './migrations.ts';
import { DAY_MS, startOfUtcDay, utcDayNumber } from './period.ts';
import { PendingUsage } from './pending-usage.ts';
import { quotaOnlyRecord } from './quota-rules.ts';
import type { CallRecord } from './record.ts';
import { isUnauthenticatedRefusal, RefusalAggregator } from './refusal-aggregator.ts';
import { WriterSignals, type WriterMessage } from './writer-protocol.ts';
import { WriterThread } from './writer-thread.ts';
import { WriteBatchPacker } from './write-batch-packer.ts';

export type { CallRecord } from './record.ts';
export type { AggregateGroup, AggregateRow, CallFilter, CallRow, CapturedBodies } from './call-queries.ts';

export interface CallLogOptions {
  /** Milliseconds between flushes of the queue. */
  flushMs: number;
  /** Days a call row is kept; 0 = forever. */
  retentionDays: number;
  captureBodies: boolean;
  /** Days captured bodies are kept (never longer than their row); 0 = as long as the row. */
  bodyRetentionDays: number;
  /** Write call rows (`call_log`); off, calls only feed the quota counters. Default true. */
  logCalls?: boolean;
  /** Clock for pruning and for folding refusals into minutes; defaults to `Date.now`. */
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
/** While flushes fail (disk full, locked), at most this many rows wait in memory. */
const MAX_PENDING_ROWS = 100_000;

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
  private readonly reads: CallQueries;
  private readonly refusals = new RefusalAggregator();
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
    this.reads = new CallQueries(db);
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

  /** Applies reloaded retention, capture and logging settings (the flush interval needs a restart). */
  reconfigure(patch: Partial<Pick<CallLogOptions, 'retentionDays' | 'captureBodies' | 'bodyRetentionDays' | 'logCalls'>>): void {
    this.opts = { ...this.opts, ...patch };
  }

  /**
   * Queues one call. O(1), no I/O; the row reaches the database at the next flush (an
   * unauthenticated 401 once its minute ended, folded with its source's others).
   */
  record(rec: CallRecord): void {
    if (this.closed || this.pending >= MAX_PENDING_ROWS) {
      // after close (shutdown order), or the database has failed for long: keep memory bounded
      this.droppedCount++;
      return;
    }
    if (this.opts.logCalls === false) {
      const counted = quotaOnlyRecord(rec);
      if (counted) this.enqueue(counted);
    } else if (isUnauthenticatedRefusal(rec)) {
      this.queueFolded(this.refusals.add(rec, this.now()));
    } else this.enqueue(rec);
  }

  /** Folded refusals handed over (dropped if logging was turned off meanwhile: they count for no quota). */
  private queueFolded(rows: CallRecord[]): void {
    if (this.opts.logCalls !== false) for (const row of rows) this.enqueue(row);
  }

  private enqueue(rec: CallRecord): void {
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
   * transaction here. Throws when that transaction fails (the rows stay queued). Folded
   * refusals of the minute under way stay folded (`close()` writes them).
   */
  flush(): void {
    if (this.closed) return;
    this.queueEndedRefusals();
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
    this.queueFolded(this.refusals.takeAll());
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
    return this.reads.recent(filter);
  }

  /** The captured bodies of one call, decompressed; null when none were captured. */
  bodies(callId: number): CapturedBodies | null {
    this.flush();
    return this.reads.bodies(callId);
  }

  /** Totals per backend, model, source or UTC day over a time range, most calls first (days in order). */
  aggregate(group: AggregateGroup, filter: { since?: number; until?: number } = {}): AggregateRow[] {
    this.flush();
    return this.reads.aggregate(group, filter);
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
    if (this.closed) return;
    this.queueEndedRefusals();
    if (this.queue.length === 0) return;
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

  /** Queues the folded refusals of a minute that has ended. */
  private queueEndedRefusals(): void {
    this.queueFolded(this.refusals.takeClosed(this.now()));
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
    const whole = this.reads.usageFromDay(userId, firstWholeDay);
    if (dayStart === since) return whole;
    // (a partial first day is summed from the call rows: while the log is off there are none)
    const partial = this.reads.usageBetween(userId, since, dayStart + DAY_MS);
    return { requests: whole.requests + partial.requests, cost: whole.cost + partial.cost };
  }

  private report(err: unknown, during: 'flush' | 'prune'): void {
    if (this.opts.onError) this.opts.onError(err, during);
    else process.emitWarning(`call log ${during} failed: ${err instanceof Error ? err.message : String(err)}`);
  }
}
