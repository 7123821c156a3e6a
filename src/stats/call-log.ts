/**
 * The call log: one row per call in stats.db (store/calls-repo.ts), written in batches by a
 * timer on this thread, never on the request path (docs/decisions.md has the measurements).
 *
 * `record()` adds the call to the quota counters (quota.ts) and the paid spend (paid-budget.ts)
 * and queues its row (call-queue.ts: numbered after the largest id on disk, O(1), no I/O;
 * captured bodies are gzip'd off this thread meanwhile).
 * Every `flushMs` the queue is written a hundred rows per transaction, one per event-loop turn.
 * Reads never wait for a write: `recent()` merges the queue with the disk, `bodies()` and `get()`
 * look in both, `aggregate()` reads the disk only, `summary()` reads an in-memory rollup of the
 * disk (calls-rollup.ts: built from stats.db after start, a slice per turn, then fed each
 * write). Unauthenticated 401s are folded per source and minute (refusal-aggregator.ts).
 * While writes fail the queue waits, up to a hundred thousand rows; past that rows are dropped
 * (their calls still count towards quotas). A request id gets one row: a second record of an
 * id among the last `RECENT_IDS` is not written (it still counts towards quotas) and is
 * reported, at most once a minute (docs/decisions.md, "The call log counts each call once").
 */
import {
  CallsRepo,
  newestFirst,
  recentLimit,
  type AggregateGroup,
  type AggregateRow,
  type CallQuery,
  type CallRow,
  type DaySpend,
  type DayUsage,
  type Pruned,
  type StoredBodies,
} from '../store/calls-repo.ts';
import { summedCall } from '../store/call-aggregates.ts';
import { unpackBody } from './bodies.ts';
import { CallQueue } from './call-queue.ts';
import { CallsRollup, type CallSummary, type RollupStep } from './calls-rollup.ts';
import { effectiveCost } from './cost.ts';
import { daySpendOf, PaidSpend } from './paid-budget.ts';
import { DAY_MS, utcDayNumber } from './period.ts';
import { dayUsageOf, QuotaGate } from './quota.ts';
import { RecentIds } from './recent-ids.ts';
import type { CallRecord } from './record.ts';
import { isUnauthenticatedRefusal, RefusalAggregator } from './refusal-aggregator.ts';

export type { CallRecord } from './record.ts';
export type { AggregateGroup, AggregateRow, CallFilter, CallQuery, CallRow } from '../store/calls-repo.ts';
export type { CallSummary, GroupStats, RollupStep, SeriesPoint } from './calls-rollup.ts';

export interface CallLogOptions {
  /** Milliseconds between writes of the queue. */
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
  /** Where a failed background write, compression or prune is reported (the queue is kept). */
  onError?: (err: unknown, during: 'flush' | 'prune') => void;
  /** A request id recorded again (no second row): the record and how many so far; at most once a minute. */
  onDuplicate?: (rec: CallRecord, total: number) => void;
}

/** Rows per write transaction, one transaction per event-loop turn (~1 ms with bodies). */
const WRITE_SLICE_ROWS = 100;
/** Bodies or rows deleted per prune transaction, one per event-loop turn. */
const PRUNE_SLICE_ROWS = 500;
/** Days of per-user usage kept for quotas (a month window needs at most 31). */
const QUOTA_USAGE_KEEP_DAYS = 100;
/** Rows read per event-loop turn while the stats rollup is built from stats.db (~3 ms). */
const ROLLUP_SLICE_ROWS = 2_000;
/** Request ids remembered to refuse a second row (~3 MB: 16 s at 2,000 calls/s, hours at a few a second). */
const RECENT_IDS = 32_768;
/** Duplicate request ids are reported at most this often. */
const DUPLICATE_REPORT_MS = 60_000;

export class CallLog {
  /** The quota counters, and the calls admitted against them and still running. */
  readonly quotas = new QuotaGate();
  /** Each call's quota usage as it goes on record (cluster mode adds it to the shared counters). */
  onUsage?: (usage: DayUsage) => void;
  /** What paid backends spent per UTC day, every caller together (`paid_budget_usd_month`). */
  readonly paidSpend = new PaidSpend();
  private readonly repo: CallsRepo;
  private opts: CallLogOptions;
  private readonly now: () => number;
  private readonly refusals = new RefusalAggregator();
  /** The rows recorded and not on disk yet (call-queue.ts). */
  private readonly queue: CallQueue;
  private readonly timers: NodeJS.Timeout[];
  private writing = false;
  private closed = false;
  /** Write transactions committed so far. */
  flushes = 0;
  private droppedAfterClose = 0;
  /** Records of a request id already on record: no row of their own (their quota use counts). */
  duplicates = 0;
  private readonly recentIds = new RecentIds(RECENT_IDS);
  private duplicateReportedAt = -Infinity;
  /** Sums per hour/day × backend × model × source of the rows on disk (the Statistics tab's). */
  private readonly rollup: CallsRollup;
  /** Settles once the rollup holds every row that was on disk at start. */
  private readonly rollupBuilt: Promise<void>;

  constructor(repo: CallsRepo, opts: CallLogOptions) {
    this.repo = repo;
    this.opts = opts;
    this.now = opts.now ?? Date.now;
    this.queue = new CallQueue({
      repo,
      report: (err) => this.report(err, 'flush'),
      written: (row) => this.rollup.add(summedCall(row)),
    });
    for (const usage of repo.quotaUsage()) this.quotas.count(usage);
    for (const spend of repo.paidSpend()) this.paidSpend.count(spend);
    this.rollup = new CallsRollup({ now: this.now });
    this.rollupBuilt = this.buildRollup(this.queue.lastId);
    const prune = () => void this.prune().catch((err: unknown) => this.report(err, 'prune'));
    this.timers = [
      setInterval(() => void this.writeInSlices(), Math.max(10, opts.flushMs)).unref(),
      setTimeout(prune, 10_000).unref(),
      setInterval(prune, 3_600_000).unref(),
    ];
  }

  /** Opens (creating if needed) `<storeDir>/stats.db`; the quota counters start from what it holds. */
  static open(storeDir: string, opts: CallLogOptions): CallLog {
    return new CallLog(CallsRepo.open(storeDir), opts);
  }

  /** Applies reloaded retention, capture and logging settings (the flush interval needs a restart). */
  reconfigure(
    patch: Partial<Pick<CallLogOptions, 'retentionDays' | 'captureBodies' | 'bodyRetentionDays' | 'logCalls'>>,
  ): void {
    this.opts = { ...this.opts, ...patch };
  }

  /**
   * Counts one call towards its user's quotas and queues its row (an unauthenticated 401 once its
   * minute ended). False when no row comes of it: after close, or a request id on record already.
   */
  record(rec: CallRecord): boolean {
    if (this.closed) {
      // after close (shutdown order)
      this.droppedAfterClose++;
      return false;
    }
    const usage = dayUsageOf(rec);
    if (usage) {
      this.quotas.count(usage);
      this.onUsage?.(usage);
    }
    const spend = daySpendOf({ ts: rec.ts, cost: effectiveCost(rec) });
    if (spend) this.paidSpend.count(spend);
    // folded 401s are one row per source and minute anyway: a scanner repeating an id is counted there
    const unauthenticated = isUnauthenticatedRefusal(rec);
    const id = rec.request_id;
    if (!unauthenticated && typeof id === 'string' && id !== '' && !this.recentIds.add(id)) {
      this.duplicate(rec);
      if (usage || spend) this.enqueue(null, usage, spend);
      return false;
    }
    if (this.opts.logCalls === false) {
      if (usage || spend) this.enqueue(null, usage, spend);
    } else if (unauthenticated) {
      this.queueFolded(this.refusals.add(rec, this.now()));
    } else this.enqueue(rec, usage, spend);
    return true;
  }

  /** Whether a row of request id `id` is among the last ones recorded (a new call must not take its id). */
  hasRecord(id: string): boolean {
    return this.recentIds.has(id);
  }

  /** Rows dropped: recorded after `close()`, or while the queue was full of failed writes. */
  get dropped(): number {
    return this.droppedAfterClose + this.queue.dropped;
  }

  /** Calls queued and not written yet (bodies still compressing included). */
  get pending(): number {
    return this.queue.length;
  }

  /** Calls whose bodies are being compressed. */
  get compressing(): number {
    return this.queue.compressing;
  }

  /**
   * Puts every call recorded so far on disk: awaits the bodies being compressed, then writes the
   * queue in one transaction; rejects when that fails (the rows stay queued). Refusals of the
   * minute under way stay folded (`close()` writes them).
   */
  async flush(): Promise<void> {
    await this.queue.compressed();
    if (this.closed) return;
    this.queueEndedRefusals();
    this.writeReady(Infinity);
  }

  /** A copy of stats.db at `destination` holding every call recorded until now (written first). */
  async backupTo(destination: string): Promise<unknown> {
    await this.flush();
    if (this.closed) throw new Error('the call log is closed');
    return this.repo.backupTo(destination);
  }

  /**
   * Writes what is left in one transaction, synchronously (shutdown): folded refusals too, and
   * bodies still being compressed are compressed here. Then closes stats.db. A failing write
   * is reported through `onError`, not thrown. Later `record()` calls are dropped.
   */
  close(): void {
    if (this.closed) return;
    for (const t of this.timers) clearInterval(t);
    this.queueFolded(this.refusals.takeAll());
    this.queue.compressNow();
    try {
      this.writeReady(Infinity);
    } catch (err) {
      this.report(err, 'flush');
    }
    this.closed = true;
    this.queue.close();
    this.repo.close();
  }

  /** Calls newest first, filtered: the queued ones merged with those on disk. */
  recent(filter: CallQuery = {}): CallRow[] {
    this.queueEndedRefusals();
    const queued = this.queue.matching(filter);
    const stored = this.repo.recent(filter);
    return queued.length === 0 ? stored : [...queued, ...stored].sort(newestFirst).slice(0, recentLimit(filter));
  }

  /** One call by id, queued or on disk. */
  get(callId: number): CallRow | undefined {
    return this.queue.get(callId) ?? this.repo.get(callId);
  }

  /** A call's captured bodies, decompressed; null when none were captured (or they are still compressing). */
  bodies(callId: number): StoredBodies | null {
    const stored = this.queue.bodies(callId) ?? this.repo.bodies(callId);
    return stored && { ...stored, request: unpackBody(stored.request), response: unpackBody(stored.response) };
  }

  /** Totals per backend, model, source or UTC day over a time range, of the calls on disk. */
  aggregate(group: AggregateGroup, filter: { since?: number; until?: number } = {}): AggregateRow[] {
    return this.repo.aggregate(group, filter);
  }

  /**
   * Totals, cache split and percentiles per backend, model, source and period (UTC hour or
   * day) of the calls on disk, from the in-memory rollup: fast at any size (stats/calls-rollup.ts).
   * Waits, the first time after start, until the rollup has read what stats.db held.
   */
  async summary(range: { since: number; until: number; step: RollupStep }): Promise<CallSummary> {
    await this.rollupBuilt;
    return this.rollup.summary(range);
  }

  /**
   * Deletes rows older than `retentionDays`, bodies older than `bodyRetentionDays` (or than
   * their row) and quota counters older than any quota window, one short transaction per
   * event-loop turn; resolves with what it removed.
   */
  async prune(now: number = this.now()): Promise<Pruned> {
    const { retentionDays, bodyRetentionDays } = this.opts;
    const rowCutoff = retentionDays > 0 ? now - retentionDays * DAY_MS : -Infinity;
    const bodyCutoff = Math.max(rowCutoff, bodyRetentionDays > 0 ? now - bodyRetentionDays * DAY_MS : -Infinity);
    const cutoffs = { rowCutoff, bodyCutoff, firstUsageDay: utcDayNumber(now) - QUOTA_USAGE_KEEP_DAYS };
    this.quotas.forgetBefore(cutoffs.firstUsageDay);
    this.paidSpend.forgetBefore(cutoffs.firstUsageDay);
    this.rollup.forgetBefore(rowCutoff);
    const total = { rows: 0, bodies: 0 };
    for (let step = { ...total, done: false }; !step.done && !this.closed; await turn()) {
      step = this.repo.pruneStep(cutoffs, PRUNE_SLICE_ROWS);
      total.rows += step.rows;
      total.bodies += step.bodies;
    }
    this.rollup.forgetBefore(rowCutoff); // again: the first build may have read rows this prune then deleted
    return total;
  }

  /** A second record of a request id: counted, reported at most once a minute (a client may repeat its own id). */
  private duplicate(rec: CallRecord): void {
    this.duplicates++;
    const now = this.now();
    if (now - this.duplicateReportedAt < DUPLICATE_REPORT_MS) return;
    this.duplicateReportedAt = now;
    if (this.opts.onDuplicate) this.opts.onDuplicate(rec, this.duplicates);
    else process.emitWarning(`call log: request id ${rec.request_id} recorded again (${this.duplicates} so far)`);
  }

  private enqueue(rec: CallRecord | null, usage: DayUsage | null, spend: DaySpend | null = null): void {
    if (this.queue.push(rec, usage, spend, this.opts.captureBodies)) setImmediate(() => void this.writeInSlices());
  }

  /** Folded refusals handed over (dropped if logging was turned off meanwhile: they count for no quota). */
  private queueFolded(rows: CallRecord[]): void {
    if (this.opts.logCalls !== false) for (const row of rows) this.enqueue(row, null);
  }

  private queueEndedRefusals(): void {
    this.queueFolded(this.refusals.takeClosed(this.now()));
  }

  /** Writes the oldest entries, at most `max`, in one transaction, up to the first still compressing. */
  private writeReady(max: number): number {
    const n = this.queue.writeReady(max);
    if (n > 0) this.flushes++;
    return n;
  }

  /** Writes the queue a slice per event-loop turn (one run at a time). */
  private async writeInSlices(): Promise<void> {
    if (this.writing) return;
    this.writing = true;
    try {
      this.queueEndedRefusals();
      while (!this.closed && this.writeReady(WRITE_SLICE_ROWS) === WRITE_SLICE_ROWS) await turn();
    } catch (err) {
      this.report(err, 'flush');
    } finally {
      this.writing = false;
    }
  }

  /** Reads the rows up to `upToId` into the rollup a slice per event-loop turn (newer rows come from writes). */
  private async buildRollup(upToId: number): Promise<void> {
    let after = 0;
    try {
      while (!this.closed && after < upToId) {
        await turn();
        if (this.closed) break;
        const rows = this.repo.rollupRows(after, upToId, ROLLUP_SLICE_ROWS);
        for (const r of rows) this.rollup.add(r);
        if (rows.length < ROLLUP_SLICE_ROWS) break;
        after = rows[rows.length - 1].id;
      }
    } catch (err) {
      this.report(err, 'flush');
    }
  }

  private report(err: unknown, during: 'flush' | 'prune'): void {
    if (this.opts.onError) this.opts.onError(err, during);
    else process.emitWarning(`call log ${during} failed: ${err instanceof Error ? err.message : String(err)}`);
  }
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
