/**
 * Ids and error answers of the fake Anthropic API, in the real API's words. Pure: each function
 * returns what to send; anthropic-server.ts adds the `request-id` header and `request_id` field.
 */
import { randomBytes } from 'node:crypto';
import { OAUTH_BETA } from './anthropic-types.ts';

/** The real ids are a type prefix, "01" and 22 base58 characters (msg_01Y6V41gqPaKWEw7iPouH7iW). */
function anthropicId(prefix: string): string {
  const abc = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
  return `${prefix}_01${Array.from(randomBytes(22), (b) => abc[b % abc.length]).join('')}`;
}

export const newMessageId = () => anthropicId('msg');
export const newToolUseId = () => anthropicId('toolu');
export const newRequestId = () => anthropicId('req');

export interface AnthropicErrorReply {
  status: number;
  type: string;
  message: string;
  headers?: Record<string, string>;
  /** `error.details` (`{error_code, …}`), as the real API sends for the errors the SDKs act on. */
  details?: Record<string, unknown>;
}

/** The error `type` the real API uses for a status (its errors page; other 4xx are invalid_request_error). */
export function errorTypeFor(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
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
    case 504:
      return 'timeout_error';
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

/** A message in the real API's style for a bare status (errorStatus, modelsStatus). */
function messageFor(status: number): string {
  switch (status) {
    case 401:
      return 'invalid x-api-key';
    case 403:
      return 'Your API key does not have permission to use the specified resource.';
    case 404:
      return 'Not Found';
    case 413:
      return 'Request exceeds the maximum allowed number of bytes.';
    case 429:
      return 'Number of request tokens has exceeded your per-minute rate limit';
    case 500:
      return 'Internal server error';
    case 529:
      return 'Overloaded';
    default:
      return 'fake upstream error';
  }
}

export function anthropicError(status: number, message: string, headers?: Record<string, string>): AnthropicErrorReply {
  return { status, type: errorTypeFor(status), message, ...(headers ? { headers } : {}) };
}

/** The answer for the errorStatus / modelsStatus knobs; 429 and 529 carry a retry-after like the real ones. */
export function statusError(status: number, retryAfter?: string): AnthropicErrorReply {
  const after = retryAfter ?? (status === 429 || status === 529 ? '1' : undefined);
  return anthropicError(status, messageFor(status), after === undefined ? undefined : { 'retry-after': after });
}

/** The body of an error answer (and of a mid-stream `event: error`, which has no request_id). */
export function errorBody(
  reply: Pick<AnthropicErrorReply, 'type' | 'message' | 'details'>,
  requestId?: string,
): object {
  const error = { type: reply.type, message: reply.message, ...(reply.details ? { details: reply.details } : {}) };
  return { type: 'error', error, ...(requestId ? { request_id: requestId } : {}) };
}

/** The mid-stream overload, exactly as the real API sends it. */
export const OVERLOADED_EVENT = { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } };

function header(headers: Record<string, string | string[] | undefined>, name: string): string {
  const v = headers[name];
  return Array.isArray(v) ? v.join(',') : (v ?? '');
}

/**
 * Who may call: `x-api-key: <apiKey>`; `Authorization: Bearer <apiKey>` (how the current SDK
 * sends an API key); `Authorization: Bearer <oauthToken>` only with the oauth beta, as the real
 * API answers any other bearer with "OAuth authentication is currently not supported.".
 */
export function authRefusal(
  headers: Record<string, string | string[] | undefined>,
  apiKey: string,
  oauthToken: string,
): AnthropicErrorReply | undefined {
  const key = header(headers, 'x-api-key');
  if (key !== '') return key === apiKey ? undefined : anthropicError(401, 'invalid x-api-key');
  const auth = header(headers, 'authorization');
  if (auth === '') return anthropicError(401, 'x-api-key header is required');
  const bearer = /^Bearer\s+(.+)$/i.exec(auth)?.[1]?.trim() ?? '';
  if (bearer !== '' && bearer === apiKey) return undefined;
  const betas = header(headers, 'anthropic-beta')
    .split(',')
    .map((b) => b.trim());
  if (!betas.includes(OAUTH_BETA)) return anthropicError(401, 'OAuth authentication is currently not supported.');
  return bearer === oauthToken ? undefined : anthropicError(401, 'Invalid bearer token');
}

/** Every /v1 call needs the version header (checked after auth, as the real API does). */
export function versionRefusal(
  headers: Record<string, string | string[] | undefined>,
): AnthropicErrorReply | undefined {
  return header(headers, 'anthropic-version') === ''
    ? anthropicError(400, 'anthropic-version: header is required')
    : undefined;
}

const isObject = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The real API validates with pydantic and names the first bad field: "max_tokens: Field required". */
export function messagesBodyRefusal(
  body: unknown,
  parsed: boolean,
  countTokensCall: boolean,
): AnthropicErrorReply | undefined {
  if (!parsed || !isObject(body))
    return anthropicError(400, 'There was an error parsing the body: the request body is not a JSON object');
  if (!countTokensCall && body.max_tokens === undefined) return anthropicError(400, 'max_tokens: Field required');
  if (countTokensCall && body.max_tokens !== undefined)
    return anthropicError(400, 'max_tokens: Extra inputs are not permitted');
  if (!countTokensCall && (typeof body.max_tokens !== 'number' || !Number.isInteger(body.max_tokens))) {
    return anthropicError(400, 'max_tokens: Input should be a valid integer');
  }
  if (body.messages === undefined) return anthropicError(400, 'messages: Field required');
  if (!Array.isArray(body.messages)) return anthropicError(400, 'messages: Input should be a valid list');
  if (body.model === undefined) return anthropicError(400, 'model: Field required');
  if (typeof body.model !== 'string') return anthropicError(400, 'model: Input should be a valid string');
  return undefined;
}

export function modelNotFound(model: string): AnthropicErrorReply {
  return anthropicError(404, `model: ${model}`);
}
