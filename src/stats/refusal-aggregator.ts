/**
 * Folds unauthenticated 401s into at most one call-log row per source per minute, so a
 * scanner trying keys cannot grow stats.db without bound; the row's `count` says how many
 * calls it stands for. (An unauthenticated caller is attributed by IP — IPv6 by its /64 —
 * or by that IP's alias, never by a header it chose: see routes/caller.ts.)
 *
 * Refusals are folded per minute of the clock they arrive by. The rows of a minute are
 * handed over once it has ended (the next refusal or the call log's next flush notices) or
 * when the log closes. A row is the first refusal of its source that minute (its time,
 * endpoint, requested model, request id) with the count of all of them. Memory is bounded:
 * past `MAX_FOLDED_SOURCES` sources in one minute, the others share one overflow row.
 */
import { callCount, REFUSED_BACKEND, type CallRecord } from './record.ts';

export const MINUTE_MS = 60_000;
/** Distinct sources folded per minute; beyond them, refusals go to the overflow row. */
export const MAX_FOLDED_SOURCES = 10_000;
/** `source` of the row that stands for the refusals of every source past the limit. */
export const OVERFLOW_SOURCE = '(other sources)';

/** A call refused for a bad or missing key: no user, no backend, 401. */
export function isUnauthenticatedRefusal(rec: Pick<CallRecord, 'status' | 'backend' | 'user_id'>): boolean {
  return rec.status === 401 && rec.backend === REFUSED_BACKEND && (rec.user_id === null || rec.user_id === undefined);
}

export class RefusalAggregator {
  /** The minute (`floor(ms / MINUTE_MS)`) the open rows belong to. */
  private minute = Number.NaN;
  private open = new Map<string, CallRecord>();

  /** Rows folded and not handed over yet (at most `MAX_FOLDED_SOURCES + 1`). */
  get size(): number {
    return this.open.size;
  }

  /**
   * Folds `rec` into its source's row of the minute holding `now`. Returns the rows of a
   * minute that has ended meanwhile, to be logged (usually none).
   */
  add(rec: CallRecord, now: number): CallRecord[] {
    const closed = this.takeClosed(now);
    if (this.open.size === 0) this.minute = minuteOf(now);
    let source = rec.source;
    let row = this.open.get(source);
    if (!row && this.open.size >= MAX_FOLDED_SOURCES) {
      source = OVERFLOW_SOURCE;
      row = this.open.get(source);
    }
    if (row) row.count = callCount(row) + callCount(rec);
    else {
      const { request_body: _request, response_body: _response, ...fields } = rec;
      this.open.set(source, { ...fields, source, count: callCount(rec) });
    }
    return closed;
  }

  /** The rows of the open minute if `now` is past it (handed over once), else none. */
  takeClosed(now: number): CallRecord[] {
    return this.open.size > 0 && minuteOf(now) !== this.minute ? this.takeAll() : [];
  }

  /** Every folded row, ended minute or not (at close). */
  takeAll(): CallRecord[] {
    const rows = [...this.open.values()];
    this.open = new Map();
    return rows;
  }
}

function minuteOf(ms: number): number {
  return Math.floor(ms / MINUTE_MS);
}
