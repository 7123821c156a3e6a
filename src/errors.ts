/**
 * One error type for everything the gateway refuses or fails at. Routes throw it; the error
 * handler renders it per surface (OpenAI shape on /v1/*, Anthropic shape on /v1/messages).
 */
export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'insufficient_quota'
  | 'api_error'
  | 'overloaded_error'
  | 'timeout_error';

export interface GatewayErrorInit {
  status: number;
  message: string;
  code: string;
  type?: ErrorType;
  param?: string | null;
  /** Seconds for a Retry-After header. */
  retryAfter?: number;
  /** Why a call was refused, for the call log (defaults to `code`). */
  reason?: string;
  /**
   * A refusal's reason per candidate backend (routing/refusal.ts `CandidateReason`), rendered
   * as `error.candidates` in both shapes so scripts and the console can read them.
   */
  candidates?: readonly object[];
}

/** The `error` object of an OpenAI-shaped error body; `candidates` only on a refusal that explains itself. */
export interface OpenAIErrorObject {
  message: string;
  type: string;
  param: string | null;
  code: string;
  candidates?: readonly object[];
}

export class GatewayError extends Error {
  readonly status: number;
  readonly code: string;
  readonly type: ErrorType;
  readonly param: string | null;
  readonly retryAfter?: number;
  readonly reason: string;
  readonly candidates?: readonly object[];

  constructor(init: GatewayErrorInit) {
    super(init.message);
    this.name = 'GatewayError';
    this.status = init.status;
    this.code = init.code;
    this.type = init.type ?? defaultType(init.status);
    this.param = init.param ?? null;
    this.retryAfter = init.retryAfter;
    this.reason = init.reason ?? init.code;
    if (init.candidates) this.candidates = init.candidates;
  }

  toOpenAI(): { error: OpenAIErrorObject } {
    const error = { message: this.message, type: this.type, param: this.param, code: this.code };
    return { error: this.candidates ? { ...error, candidates: this.candidates } : error };
  }

  /** Ollama's error body: one string (its clients read `error` and nothing else). */
  toOllama(): { error: string } {
    return { error: this.message };
  }

  toAnthropic(): { type: 'error'; error: { type: string; message: string; candidates?: readonly object[] } } {
    const error = { type: anthropicType(this.status), message: this.message };
    return { type: 'error', error: this.candidates ? { ...error, candidates: this.candidates } : error };
  }
}

function defaultType(status: number): ErrorType {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'invalid_request_error';
  if (status === 429) return 'rate_limit_error';
  if (status === 504) return 'timeout_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

function anthropicType(status: number): string {
  switch (status) {
    case 400:
    case 408:
    case 413:
    case 415:
    case 422:
    case 431:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
    default:
      return 'api_error';
  }
}

export const modelNotFound = (model: string | undefined): GatewayError =>
  new GatewayError({
    status: 404,
    code: 'model_not_found',
    reason: 'unknown_model',
    param: 'model',
    message: model
      ? `The model \`${model}\` does not exist or you do not have access to it.`
      : 'You must provide a model parameter.',
  });

export const badRequest = (message: string, param: string | null = null, code = 'invalid_request'): GatewayError =>
  new GatewayError({ status: 400, code, param, message });

/** A body that is not JSON. The parser's message can quote the body (and so a key): only where it stopped is kept. */
export const invalidJson = (parserMessage: string): GatewayError =>
  new GatewayError({
    status: 400,
    code: 'invalid_json',
    message: `We could not parse the JSON body of your request: ${parsePosition(parserMessage)}.`,
  });

function parsePosition(message: string): string {
  const at = /position (\d+)/.exec(message);
  return at ? `unexpected input at position ${at[1]}` : 'it is not valid JSON';
}
