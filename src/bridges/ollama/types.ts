/** Shapes shared by the Ollama ⇄ chat bridge (Ollama's native API: `/api/chat`, `/api/generate`, `/api/embed`). */
import { isObject, type JsonObject } from '../../json.ts';

export type Json = JsonObject;
export { isObject };

/** The two generating endpoints: `/api/chat` answers in `message`, `/api/generate` in `response`. */
export type OllamaKind = 'chat' | 'generate';

/** A request the bridge cannot translate: the client's mistake (400), in Ollama's words. */
export class OllamaRequestError extends Error {
  constructor(
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
    this.name = 'OllamaRequestError';
  }
}

/** Why a request cannot be translated, for the route's 400. */
export interface OllamaProblem {
  message: string;
  param: string | null;
}

/** A translation's refusal from what it threw: an OllamaRequestError becomes the problem, anything else goes on. */
export function refusal(err: unknown): { ok: false; error: OllamaProblem } {
  if (err instanceof OllamaRequestError) return { ok: false, error: { message: err.message, param: err.param } };
  throw err;
}

/** A 400 naming the field at `param` (`messages.2.images.0`). */
export function invalid(param: string, problem: string): OllamaRequestError {
  return new OllamaRequestError(`${param}: ${problem}`, param);
}

/** The times the gateway saw of one call, milliseconds on its clock (they become Ollama's `*_duration`). */
export interface CallTimes {
  /** The call arrived. */
  startedAt: number;
  /** The attempt that answered was sent to its backend (the call waited in the queue until then). */
  sentAt: number;
  /** The first token reached the gateway (streams only). */
  firstTokenAt?: number;
  /** The answer was complete. */
  endedAt: number;
}
