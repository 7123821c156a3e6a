/**
 * The bytes of one OpenAI call on their way up and down: the body sent to a backend (the
 * client's, with only the gateway's fields edited in), an upstream error turned into an SSE
 * error event, a secret scrubbed from an upstream's text. Pure functions.
 */
import { editTopLevel, topLevelValueText } from '../wire/raw-json.ts';

/** What these functions need of a call. */
export interface CallBody {
  body: Record<string, unknown>;
  rawBody: string;
}

/**
 * The body sent upstream: the client's bytes, with only the real model id and (streams) the
 * usage request edited in; every other byte as it came (big integers, key order, escapes).
 */
export function upstreamBody(
  call: CallBody,
  model: string,
  stream: boolean,
  extra?: ReadonlyMap<string, string | null>,
): string {
  const edits = new Map<string, string | null>(extra);
  if (call.body.model !== model) edits.set('model', JSON.stringify(model));
  if (stream) {
    const opts = call.body.stream_options;
    const isObject = typeof opts === 'object' && opts !== null && !Array.isArray(opts);
    if (!isObject || (opts as { include_usage?: unknown }).include_usage !== true) {
      edits.set(
        'stream_options',
        isObject ? withIncludeUsage(call.rawBody, opts as Record<string, unknown>) : '{"include_usage":true}',
      );
    }
  }
  return edits.size ? editTopLevel(call.rawBody, edits) : call.rawBody;
}

/**
 * The client's stream_options with include_usage set, edited in its own text. With duplicate
 * keys the text's first one may not be the object JSON.parse kept (the last): then the parsed
 * one is re-serialised.
 */
function withIncludeUsage(rawBody: string, parsed: Record<string, unknown>): string {
  const text = topLevelValueText(rawBody, 'stream_options');
  if (text?.startsWith('{')) return editTopLevel(text, new Map([['include_usage', 'true']]));
  return JSON.stringify({ ...parsed, include_usage: true });
}

/** An upstream error as the body of an SSE error event: its own JSON error, else wrapped. */
export function asErrorEvent(status: number, text: string): unknown {
  try {
    const parsed = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && 'error' in parsed) return parsed;
  } catch {
    /* not JSON: wrapped below */
  }
  return {
    error: {
      message: text.slice(0, 2000) || `HTTP ${status}`,
      type: 'upstream_error',
      param: null,
      code: String(status),
    },
  };
}

export function scrubSecret(text: string, secret: string | undefined): string {
  return secret && secret.length >= 8 ? text.split(secret).join('[redacted]') : text;
}
