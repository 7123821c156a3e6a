/**
 * The JavaScript twins of the call log's reads (calls-repo.ts `recent()`): its filter, its
 * order, its page size and its listed row, for the rows the call log has not written yet.
 */
import type { CallFilter, CallRow, StoredCall } from './call-rows.ts';

/**
 * The console's filter: the API's, plus a status class and an exact paging cursor. (It belongs
 * in call-rows.ts `CallFilter`; kept here while that file is not the console's to change.)
 */
export interface CallQuery extends CallFilter {
  /** 1..5: statuses from `statusClass`00 to `statusClass`99 (`2` is 2xx); ignored with `status`. */
  statusClass?: number;
  /**
   * With `beforeId`: the `ts` of the cursor row, so a page follows `recent()`'s order exactly
   * (rows after (ts, id) newest first). Without it `beforeId` alone means "a smaller id".
   */
  beforeTs?: number;
}

/** Rows `recent()` returns for a filter: `limit`, default 100, clamped to 1..1,000. */
export function recentLimit(filter: CallFilter): number {
  return Math.min(1_000, Math.max(1, Math.floor(filter.limit ?? 100)));
}

/**
 * Whether a row passes a filter (its `limit` aside): the JavaScript twin of `recent()`'s WHERE
 * clause (calls-repo.ts), kept next to it so the two cannot drift, for rows not written yet.
 */
export function matchesFilter(r: StoredCall, f: CallQuery): boolean {
  return (
    (f.source === undefined || r.source === f.source) &&
    (f.backend === undefined || r.backend === f.backend) &&
    (f.status === undefined || r.status === f.status) &&
    (f.status !== undefined || f.statusClass === undefined || Math.floor(r.status / 100) === f.statusClass) &&
    (f.user_id === undefined || r.user_id === f.user_id) &&
    (f.model === undefined || r.model === f.model || r.requested_model === f.model) &&
    (f.since === undefined || r.ts >= f.since) &&
    (f.until === undefined || r.ts < f.until) &&
    (f.beforeId === undefined ||
      (f.beforeTs === undefined ? r.id < f.beforeId : r.ts < f.beforeTs || (r.ts === f.beforeTs && r.id < f.beforeId)))
  );
}

/** `recent()`'s order (its ORDER BY): newest arrival first, then the later row. */
export function newestFirst(a: Pick<StoredCall, 'ts' | 'id'>, b: Pick<StoredCall, 'ts' | 'id'>): number {
  return b.ts - a.ts || b.id - a.id;
}

/** A row as the console lists it. */
export function callRow(r: StoredCall, hasBodies: boolean): CallRow {
  return { ...r, has_bodies: hasBodies, usage_estimated: r.usage_estimated === 1, paid: r.paid === 1 };
}
