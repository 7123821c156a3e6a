/**
 * Shared shapes of the Anthropic Messages bridge: what a translation step reports when the
 * client's body cannot be translated, and the reasoning the client asked for.
 *
 * The bridge modules are pure: they take parsed JSON and give parsed JSON (or SSE bytes) back,
 * so that the surface that uses them owns every socket, deadline and log line.
 */

/** Why a body could not be translated; `status` is the HTTP status the client should get. */
export interface BridgeError {
  status: number;
  message: string;
  /** The offending field as a dotted path (`messages.2.content.0.type`), like the real API names it. */
  param?: string;
  /** The real API's `error.details.error_code`, where it names one the SDKs act on (`thread_unsupported_request`). */
  errorCode?: string;
}

/**
 * What the client asked of the model's reasoning, kept out of the chat body on purpose: every
 * backend spells it differently (`reasoning_effort`, `chat_template_kwargs.enable_thinking`,
 * OpenRouter's `reasoning`, ...), so another module applies it per backend.
 */
export type ReasoningIntent =
  { mode: 'on'; budgetTokens?: number } | { mode: 'off' } | { mode: 'effort'; effort: string };

export type Json = Record<string, unknown>;

export { isObject } from '../../json.ts';

/**
 * Thrown inside the request translation only, and turned into `{ ok: false, error }` at its
 * entry point: validation happens deep in nested blocks, and unwinding by hand through every
 * helper would bury the rules under plumbing.
 */
export class BridgeFailure extends Error {
  readonly error: BridgeError;

  constructor(status: number, message: string, param?: string, errorCode?: string) {
    super(message);
    this.name = 'BridgeFailure';
    this.error = param === undefined ? { status, message } : { status, message, param };
    if (errorCode !== undefined) this.error.errorCode = errorCode;
  }
}

/** A 400 for a field the client got wrong; the message starts with the field's path. */
export function invalid(param: string, problem: string): BridgeFailure {
  return new BridgeFailure(400, `${param}: ${problem}`, param);
}
