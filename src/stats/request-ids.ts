/**
 * Each request's id: the key of its call-log row, echoed in `x-request-id`. A client's own
 * well-formed `x-request-id` is taken as it is unless it is in recent use (issued to a request
 * lately, or on record in the call log); a repeat gets the client's id with a suffix of its own
 * (`<id>.<8 hex>`), so two calls sharing an id still get a row each, the client still finds its
 * id in the one echoed, and that echoed id is the one to look the call up by. No id sent (or a
 * malformed one): a random UUID.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { RecentIds } from './recent-ids.ts';

/** What a client may send as its request id (letters, digits, `_ . : -`; at most 128). */
export const REQUEST_ID = /^[\w.:-]{1,128}$/;
const REQUEST_ID_MAX = 128;

/** Ids issued that a repeat is checked against (the call log's window is as long). */
export const ISSUED_IDS = 32_768;
const SUFFIX_HEX = 8;

export class RequestIds {
  private readonly issued: RecentIds;

  /** `recorded(id)`: whether the call log has a row of that id among its recent ones. */
  constructor(
    private readonly recorded: (id: string) => boolean,
    capacity = ISSUED_IDS,
  ) {
    this.issued = new RecentIds(capacity);
  }

  /** The id of a request that sent `incoming` as its `x-request-id` (a header's value, if any). */
  next(incoming: unknown): string {
    if (typeof incoming !== 'string' || !REQUEST_ID.test(incoming)) return this.issue(randomUUID());
    if (!this.recorded(incoming) && this.issued.add(incoming)) return incoming;
    const stem = incoming.slice(0, REQUEST_ID_MAX - SUFFIX_HEX - 1);
    for (;;) {
      const id = `${stem}.${randomBytes(SUFFIX_HEX / 2).toString('hex')}`;
      if (!this.recorded(id) && this.issued.add(id)) return id;
    }
  }

  private issue(id: string): string {
    this.issued.add(id);
    return id;
  }
}
