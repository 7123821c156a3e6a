/** A Responses API call as its surface and attempts see it (responses-surface.ts). */
import type { BodyTransform } from './body-transform.ts';

export interface ResponsesCall {
  /** The client's query string with its `?`, or ''. */
  query: string;
  body: Record<string, unknown>;
  rawBody: string;
  /** The model name the client asked for: translated answers carry it. */
  requested: string;
  /** The response's id (`resp_…`) and creation time (unix seconds), chosen by the gateway. */
  id: string;
  createdAt: number;
  /** Earlier turns of a stored conversation (`previous_response_id`), oldest first. */
  history?: unknown[];
  /** The reasoning switch and sampling defaults, per serving backend. */
  transform: BodyTransform;
  /** Resolves an `item_reference` to an item of a recent response of this caller. */
  resolveItem?: (id: string) => unknown;
}

/** What an attempt leaves behind for the store. */
export interface FinalResponseSource {
  finalResponse(): Record<string, unknown> | undefined;
}
