/**
 * What the call log's main thread and its writer thread say to each other.
 *
 * Messages carry the work (`WriterOp`) and its outcome (`WriterResult`), but messages wait
 * for the event loop; a synchronous `flush()` cannot. So the writer also settles every op
 * in shared memory (`WriterSignals`), which the main thread can read — and wait on — at any
 * time. Ops are numbered from 1; a number is reused after 2^30 ops, long after it settled.
 */
import type { PackedBodies, PackedCalls } from './call-codec.ts';
import type { QuotaUsage } from './call-rows.ts';
import type { PruneCutoffs } from './call-writes.ts';

/** `workerData` of the writer thread. */
export interface WriterData {
  /** stats.db, already created and migrated by the main thread. */
  file: string;
  /** The memory behind `WriterSignals`. */
  signals: SharedArrayBuffer;
}

export type WriterOp =
  | { kind: 'write'; seq: number; calls: PackedCalls; bodies: PackedBodies; usage: QuotaUsage[] }
  | ({ kind: 'prune'; seq: number } & PruneCutoffs);

/** What the writer thread posts back: that it is ready, then the outcome of every op. */
export type WriterMessage = { kind: 'ready' } | WriterResult;

export interface WriterResult {
  kind: WriterOp['kind'];
  seq: number;
  ok: boolean;
  /** Why the op failed (its rows are still the main thread's to retry). */
  error?: string;
}

export type OpStatus = 'pending' | 'ok' | 'failed';

const READY = 0;
/** Even while no commit is under way; odd from just before a COMMIT until its op settled. */
const COMMIT_EPOCH = 1;
/** Bumped (and notified) whenever an op settles. */
const SETTLED = 2;
const RING = 3;
/** Ops that can be outstanding at once (the main thread keeps far fewer in flight). */
export const RING_SIZE = 64;
const MAX_SEQ = 2 ** 30;

/** The shared words both threads read and write. All access is through Atomics. */
export class WriterSignals {
  readonly buffer: SharedArrayBuffer;
  private readonly words: Int32Array;

  constructor(buffer?: SharedArrayBuffer) {
    this.buffer = buffer ?? new SharedArrayBuffer(4 * (RING + RING_SIZE));
    this.words = new Int32Array(this.buffer);
    if (!buffer) this.words.fill(-1, RING); // no op has settled
  }

  /** The op number after `seq` (1, 2, ... wrapping before 2^30). */
  static next(seq: number): number {
    return seq + 1 >= MAX_SEQ ? 1 : seq + 1;
  }

  // --- writer side ---

  /** The writer has its connection and statements. */
  markReady(): void {
    Atomics.store(this.words, READY, 1);
  }

  /** Called inside the write transaction, right before it commits. */
  beginCommit(): void {
    Atomics.add(this.words, COMMIT_EPOCH, 1);
  }

  /** Publishes the outcome of op `seq` and wakes a waiting main thread. */
  settle(seq: number, ok: boolean): void {
    Atomics.store(this.words, RING + (seq % RING_SIZE), seq * 2 + (ok ? 0 : 1));
    if (Atomics.load(this.words, COMMIT_EPOCH) % 2 !== 0) Atomics.add(this.words, COMMIT_EPOCH, 1);
    Atomics.add(this.words, SETTLED, 1);
    Atomics.notify(this.words, SETTLED);
    Atomics.notify(this.words, COMMIT_EPOCH);
  }

  // --- main side ---

  get ready(): boolean {
    return Atomics.load(this.words, READY) === 1;
  }

  status(seq: number): OpStatus {
    const word = Atomics.load(this.words, RING + (seq % RING_SIZE));
    if (word < 0 || word >> 1 !== seq) return 'pending';
    return word & 1 ? 'failed' : 'ok';
  }

  /** Blocks until every op in `seqs` settled or `timeoutMs` passed; true when all settled. */
  waitSettled(seqs: readonly number[], timeoutMs: number): boolean {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const seen = Atomics.load(this.words, SETTLED);
      if (seqs.every((s) => this.status(s) !== 'pending')) return true;
      const left = deadline - performance.now();
      if (left <= 0) return false;
      Atomics.wait(this.words, SETTLED, seen, left);
    }
  }

  /**
   * The commit epoch once no commit is under way (waits at most `timeoutMs` for one to
   * finish; null if it did not). A read of the database between two equal even epochs saw
   * exactly the commits of the ops that had settled before it.
   */
  quietEpoch(timeoutMs: number): number | null {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const epoch = Atomics.load(this.words, COMMIT_EPOCH);
      if (epoch % 2 === 0) return epoch;
      const left = deadline - performance.now();
      if (left <= 0) return null;
      Atomics.wait(this.words, COMMIT_EPOCH, epoch, left);
    }
  }

  get epoch(): number {
    return Atomics.load(this.words, COMMIT_EPOCH);
  }
}
