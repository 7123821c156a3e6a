/**
 * Ids of what the gateway itself creates for a Responses answer: the response and its output
 * items (`msg_…`, `fc_…`, `rs_…`), and a call id when a backend gave none.
 *
 * All drawn at random, 24 bytes as 48 hex characters like the real API's. A response id is a
 * capability: stored responses are owner-gated by it (GET /v1/responses/{id}), so it must not be
 * guessable or derived from anything a backend chose (a chat completion's `id` repeats across
 * retries and is often a counter). Item ids are random for the same reason clients send them
 * back as `item_reference`s, which the store resolves.
 */
import { randomBytes } from 'node:crypto';

function randomId(prefix: string): string {
  return prefix + randomBytes(24).toString('hex');
}

/** `resp_` + 48 hex characters. */
export function newResponseId(): string {
  return randomId('resp_');
}

/** A `message` output item's id. */
export function newMessageId(): string {
  return randomId('msg_');
}

/** A `function_call` output item's id (the call itself is named by its `call_id`). */
export function newFunctionCallId(): string {
  return randomId('fc_');
}

/** A `reasoning` output item's id. */
export function newReasoningId(): string {
  return randomId('rs_');
}

/** A `call_id` for a tool call the backend sent without an id: the client must be able to answer it. */
export function newCallId(): string {
  return randomId('call_');
}
