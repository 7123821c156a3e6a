/**
 * Errors as Anthropic clients expect them: `{"type":"error","error":{"type","message"}}`, the
 * type named after the HTTP status the way the real API names it. The SDKs pick their
 * exception class from the status, and Claude Code shows `error.message` to the user, so the
 * backend's own message is what must survive the translation.
 */
import { isObject } from './types.ts';

export interface AnthropicErrorBody {
  type: 'error';
  error: { type: string; message: string };
}

/**
 * The real API's types per status; `request_too_large` for 413 and, from the SDK's error
 * union, `billing_error` for 402 and `timeout_error` for 504. 503 means the same as
 * Anthropic's 529 here: a backend that cannot take the call now. Other 4xx are
 * `invalid_request_error` and other 5xx `api_error`, as the API documents for unlisted codes.
 */
export function anthropicErrorType(status: number): string {
  switch (status) {
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
    case 504:
      return 'timeout_error';
    default:
      return status >= 400 && status < 500 ? 'invalid_request_error' : 'api_error';
  }
}

/** Longest backend message passed on: an HTML error page is not something to show whole. */
const MAX_MESSAGE = 2000;

/**
 * A backend's error answer as an Anthropic error body. Already Anthropic-shaped (a backend that
 * speaks Messages itself): unchanged. Otherwise the message is found where the servers put it —
 * OpenAI and llama.cpp `{error:{message}}`, Ollama `{error:"..."}`, vLLM `{message}`, FastAPI
 * `{detail}` — or is the text itself; the type always comes from the status.
 */
export function anthropicErrorFromUpstream(status: number, text: string): AnthropicErrorBody {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (isAnthropicError(parsed)) return parsed;
  const message =
    (parsed === undefined ? text.trim() : (messageOf(parsed) ?? text.trim())) ||
    `the backend answered with status ${status}`;
  return { type: 'error', error: { type: anthropicErrorType(status), message: clip(message) } };
}

function isAnthropicError(value: unknown): value is AnthropicErrorBody {
  return (
    isObject(value) &&
    value.type === 'error' &&
    isObject(value.error) &&
    typeof value.error.type === 'string' &&
    typeof value.error.message === 'string'
  );
}

function messageOf(body: unknown): string | undefined {
  if (!isObject(body)) return undefined;
  const { error } = body;
  if (typeof error === 'string' && error !== '') return error;
  if (isObject(error) && typeof error.message === 'string' && error.message !== '') return error.message;
  if (typeof body.message === 'string' && body.message !== '') return body.message;
  if (typeof body.detail === 'string' && body.detail !== '') return body.detail;
  if (body.detail !== undefined) return JSON.stringify(body.detail);
  return undefined;
}

function clip(message: string): string {
  return message.length <= MAX_MESSAGE ? message : `${message.slice(0, MAX_MESSAGE)}…`;
}
