/**
 * Shared shapes of the Responses API bridge: what a translation step reports when the client's
 * body cannot be translated, and the loose shape of a stored conversation item.
 *
 * The bridge modules are pure: they take parsed JSON and give parsed JSON (or SSE bytes) back,
 * so that the surface that uses them owns every socket, deadline, store and log line.
 */

/** Why a body could not be translated; `status` is the HTTP status the client should get. */
export interface BridgeError {
  status: number;
  message: string;
  /** The offending field as the real API names it (`input[2].content[0].type`, `tools[1].type`). */
  param?: string;
  /** A machine-readable reason, for the `code` of an OpenAI error body. */
  code?: string;
}

/**
 * One item of a conversation as a client sends it in `input` or the gateway stores it (an
 * earlier turn's input or output item): `{type:"message", role, content}`, `{type:"function_call",
 * call_id, name, arguments}`, `{type:"function_call_output", call_id, output}`, `{type:"reasoning", …}`.
 * Loose on purpose: items come from clients and the store, and are validated where they are read.
 */
export type ResponseItem = { type?: string; id?: string } & Record<string, unknown>;

export type Json = Record<string, unknown>;

export { isObject } from '../../json.ts';

/**
 * Thrown inside the request translation only, and turned into `{ ok: false, error }` at its
 * entry point: validation happens deep in nested items, and unwinding by hand through every
 * helper would bury the rules under plumbing.
 */
export class BridgeFailure extends Error {
  readonly error: BridgeError;

  constructor(error: BridgeError) {
    super(error.message);
    this.name = 'BridgeFailure';
    this.error = error;
  }
}

/** A 400 for a field the client got wrong; the message starts with the field's path. */
export function invalid(param: string, problem: string, code = 'invalid_value'): BridgeFailure {
  return new BridgeFailure({ status: 400, message: `${param}: ${problem}`, param, code });
}

/** A 400 for something valid that a chat-completions backend cannot do (a built-in tool, a file). */
export function unsupported(param: string, problem: string): BridgeFailure {
  return new BridgeFailure({ status: 400, message: `${param}: ${problem}`, param, code: 'unsupported_value' });
}
