/**
 * What the gateway changes in a chat-shaped body per attempt, besides the model: the
 * reasoning switch applied the way the serving backend understands it, and the sampling
 * defaults of the alias and of that backend (only for keys the client did not send). Made
 * per attempt because a failover serves the call on another backend with other rules and
 * defaults. The result is a set of top-level edits, applied to the body's text so every other
 * byte stays as it came.
 */
import type { BackendSpec } from '../config/types.ts';
import { editTopLevel } from '../wire/raw-json.ts';

export interface BodyEdits {
  /** Top-level key → its new JSON text (null: remove the key). */
  edits?: Map<string, string | null>;
  /** The `x-reasoning-control` value (`off:enable_thinking`, `unsupported`…), when a switch was asked for. */
  reasoning?: string;
}

export interface BodyTransform {
  /** The edits for `parsed` (a chat or completions body) sent to `model` on `backend`. */
  edits(parsed: Record<string, unknown>, backend: BackendSpec, model: string): BodyEdits;
}

const NOTHING: BodyEdits = Object.freeze({});

/** Changes nothing (no switch, no defaults). */
export const NO_TRANSFORM: BodyTransform = { edits: () => NOTHING };

/** `text` (the JSON of `parsed`) with the transform's edits for this attempt. */
export function transformText(
  text: string,
  parsed: Record<string, unknown>,
  transform: BodyTransform,
  backend: BackendSpec,
  model: string,
): { text: string; reasoning?: string } {
  const { edits, reasoning } = transform.edits(parsed, backend, model);
  return { text: edits?.size ? editTopLevel(text, edits) : text, reasoning };
}
