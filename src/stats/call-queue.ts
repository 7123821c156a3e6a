/**
 * The call log's write-behind queue: the rows recorded and not on disk yet, numbered after the
 * largest id on disk, each with what it adds to the quota counters and the paid spend. Captured
 * bodies are capped and gzip'd off this thread meanwhile (bodies.ts); a row is written once its
 * bodies are, oldest first, in one transaction per `writeReady()`. Reads look here before the
 * disk, so a call is listed the moment it is recorded.
 */
import {
  callRow,
  matchesFilter,
  storedCall,
  type CallQuery,
  type CallRow,
  type CallsRepo,
  type CallWrite,
  type DaySpend,
  type DayUsage,
  type StoredBodies,
  type StoredCall,
} from '../store/calls-repo.ts';
import { BodyCompressor, capBody, gzipBodySync, type CappedBody } from './bodies.ts';
import type { CallRecord } from './record.ts';

/** A queue this long is written from the next turn on instead of waiting for the timer. */
export const EAGER_WRITE_ROWS = 5_000;
/** While writes fail, at most this many rows wait in memory. */
const MAX_QUEUED_ROWS = 100_000;

type Sides = [CappedBody | null, CappedBody | null];

/** A queued call as it will be stored; written once `compressing` (its capped bodies being gzip'd) is null. */
interface Queued extends CallWrite {
  compressing: Sides | null;
}

export interface CallQueueDeps {
  repo: CallsRepo;
  /** Where a failed compression is reported (the row is stored without its bodies). */
  report: (err: unknown) => void;
  /** Each row once it is on disk (the stats rollup adds it). */
  written: (row: StoredCall) => void;
}

export class CallQueue {
  private readonly entries: Queued[] = [];
  private readonly compressor = new BodyCompressor();
  private readonly compressions = new Set<Promise<void>>();
  private nextId: number;
  /** Rows refused because the queue was full of failed writes. */
  dropped = 0;

  constructor(private readonly deps: CallQueueDeps) {
    this.nextId = deps.repo.maxId() + 1;
  }

  /** The largest id given so far (on disk or queued). */
  get lastId(): number {
    return this.nextId - 1;
  }

  /** Entries queued and not written yet (bodies still compressing included). */
  get length(): number {
    return this.entries.length;
  }

  /** Entries whose bodies are being compressed. */
  get compressing(): number {
    return this.compressions.size;
  }

  /**
   * Queues a row (null: only quota counters and spend) with its bodies when `captureBodies`;
   * true when the queue reached a multiple of `EAGER_WRITE_ROWS` (time to write without waiting).
   */
  push(rec: CallRecord | null, usage: DayUsage | null, spend: DaySpend | null, captureBodies: boolean): boolean {
    if (this.entries.length >= MAX_QUEUED_ROWS) {
      this.dropped++;
      return false;
    }
    const entry: Queued = { row: rec && storedCall(rec, this.nextId++), bodies: null, usage, spend, compressing: null };
    if (rec && captureBodies) {
      const sides: Sides = [capBody(rec.request_body), capBody(rec.response_body)];
      if (sides[0] || sides[1]) this.compress(entry, sides);
    }
    this.entries.push(entry);
    return this.entries.length % EAGER_WRITE_ROWS === 0;
  }

  /** Settles once every compression under way has. */
  async compressed(): Promise<void> {
    await Promise.all(this.compressions);
  }

  /** Compresses here, synchronously, the bodies still being compressed (shutdown). */
  compressNow(): void {
    for (const e of this.entries)
      if (e.compressing)
        this.settle(
          e,
          e.compressing,
          e.compressing.map((s) => s && gzipBodySync(s.kept)),
        );
  }

  /** Writes the oldest entries, at most `max`, in one transaction, up to the first still compressing. */
  writeReady(max: number): number {
    let n = 0;
    while (n < max && n < this.entries.length && !this.entries[n].compressing) n++;
    if (n === 0) return 0;
    const written = this.entries.slice(0, n);
    this.deps.repo.write(written);
    this.entries.splice(0, n);
    for (const e of written) if (e.row) this.deps.written(e.row);
    return n;
  }

  /** Queued rows that pass `filter`, in queue order, as the console lists them. */
  matching(filter: CallQuery): CallRow[] {
    const out: CallRow[] = [];
    for (const e of this.entries) if (e.row && matchesFilter(e.row, filter)) out.push(listed(e));
    return out;
  }

  /** A queued row by id, as the console lists it. */
  get(callId: number): CallRow | undefined {
    const queued = this.entries.find((e) => e.row?.id === callId);
    return queued?.row ? listed(queued) : undefined;
  }

  /** A queued row's gzip'd bodies; undefined when the row is not queued or has none (yet). */
  bodies(callId: number): StoredBodies | undefined {
    return this.entries.find((e) => e.row?.id === callId)?.bodies ?? undefined;
  }

  close(): void {
    this.compressor.close();
  }

  /** Gzips an entry's bodies off this thread (bodies.ts); a failure stores the row without them. */
  private compress(entry: Queued, sides: Sides): void {
    entry.compressing = sides;
    const done: Promise<void> = this.compressor
      .compress(sides.map((s) => s && s.kept))
      .then(
        (gz) => this.settle(entry, sides, gz),
        (err: unknown) => {
          this.settle(entry, sides, null);
          this.deps.report(err);
        },
      )
      .finally(() => this.compressions.delete(done));
    this.compressions.add(done);
  }

  /** Gives an entry its gzip'd bodies (none after a failure), unless `compressNow()` already did. */
  private settle(entry: Queued, sides: Sides, gz: (Buffer | null)[] | null): void {
    if (entry.compressing !== sides) return;
    entry.compressing = null;
    entry.bodies = gz && {
      request: gz[0],
      response: gz[1],
      request_bytes: sides[0]?.bytes ?? null,
      response_bytes: sides[1]?.bytes ?? null,
    };
  }
}

function listed(e: Queued): CallRow {
  return callRow(e.row!, e.bodies !== null || e.compressing !== null);
}
