/**
 * Error replies in each real server's own style. Pure: each function returns what to send;
 * a string body goes out as text/plain, anything else as JSON.
 */
import type { FakeKind } from './types.ts';

export interface FakeReply {
  status: number;
  body: unknown;
  /** Extra response headers (content-type is set from the body). */
  headers?: Record<string, string>;
}

/** llama.cpp's error `type` for a status (server-common.h error_type names). */
function llamaCppType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 501:
      return 'not_supported_error';
    case 503:
      return 'unavailable_error';
    default:
      return 'server_error';
  }
}

function openAiType(status: number): string {
  if (status === 400 || status === 404 || status === 422) return 'invalid_request_error';
  if (status === 401) return 'authentication_error';
  if (status === 429) return 'rate_limit_error';
  return 'server_error';
}

/** A generic error of `status` with `message`, shaped like `kind` shapes it. */
export function kindError(kind: FakeKind, status: number, message: string): FakeReply {
  switch (kind) {
    case 'llamacpp':
      return { status, body: { error: { code: status, message, type: llamaCppType(status) } } };
    case 'llamaswap':
      // llama-swap's own errors are plain text (gin c.String / http.Error); proxied ones are llama.cpp's.
      return { status, body: `${message}\n` };
    case 'vllm':
      return { status, body: { error: { message, type: vllmType(status), param: null, code: status } } };
    case 'ollama':
      return { status, body: { error: { message, type: ollamaType(status), param: null, code: null } } };
    case 'openrouter':
      return { status, body: { error: { message, code: status } } };
    case 'together':
      return { status, body: { error: { message, type: openAiType(status), param: null, code: null } } };
  }
}

function vllmType(status: number): string {
  if (status === 400) return 'BadRequestError';
  if (status === 404) return 'NotFoundError';
  return 'InternalServerError';
}

function ollamaType(status: number): string {
  if (status === 400) return 'invalid_request_error';
  if (status === 404) return 'not_found_error';
  return 'api_error';
}

/** The default body for the errorStatus knob. */
export function knobError(kind: FakeKind, status: number): FakeReply {
  if (kind === 'llamaswap') return kindError('llamacpp', status, 'fake upstream error');
  if (kind === 'openrouter' && status === 429) {
    return {
      status,
      body: {
        error: {
          message: 'Rate limit exceeded: free-models-per-min.',
          code: 429,
          metadata: { headers: { 'X-RateLimit-Limit': '20' } },
        },
      },
    };
  }
  return kindError(kind, status, status === 429 ? 'Rate limit exceeded' : 'fake upstream error');
}

/** 401 for a missing or wrong API key. */
export function unauthorized(kind: FakeKind): FakeReply {
  switch (kind) {
    case 'llamacpp':
      return kindError(kind, 401, 'Invalid API Key');
    case 'llamaswap':
      return kindError(kind, 401, 'unauthorized: invalid or missing API key');
    case 'vllm':
      return { status: 401, body: { error: 'Unauthorized' } };
    case 'ollama':
      return kindError(kind, 401, 'unauthorized');
    case 'openrouter':
      return { status: 401, body: { error: { message: 'No auth credentials found', code: 401 } } };
    case 'together':
      return {
        status: 401,
        body: {
          error: {
            message:
              'Invalid API key provided. You can find your API key at https://api.together.xyz/settings/api-keys.',
            type: 'invalid_request_error',
            param: null,
            code: 'invalid_api_key',
          },
        },
      };
  }
}

/** 404 for a model the server does not serve. */
export function modelNotFound(kind: FakeKind, model: string): FakeReply {
  switch (kind) {
    case 'llamacpp':
      return kindError(kind, 404, `model '${model}' not found`);
    case 'llamaswap':
      return kindError(kind, 404, `could not find real modelID for ${model}`);
    case 'vllm':
      return kindError(kind, 404, `The model \`${model}\` does not exist.`);
    case 'ollama':
      return kindError(kind, 404, `model "${model}" not found, try pulling it first`);
    case 'openrouter':
      return kindError(kind, 404, `${model} is not a valid model ID`);
    case 'together':
      return {
        status: 404,
        body: {
          error: {
            message: `Unable to access model ${model}. Please visit https://api.together.ai/models to view the list of supported models.`,
            type: 'invalid_request_error',
            param: null,
            code: 'model_not_available',
          },
        },
      };
  }
}

/** Together's answer for a listed model that has no serverless endpoint. */
export function togetherNonServerless(model: string): FakeReply {
  return {
    status: 400,
    body: {
      error: {
        message: `Unable to access non-serverless model ${model}. Please visit https://api.together.ai/models/${model} to create and start a new dedicated endpoint for the model.`,
        type: 'invalid_request_error',
        param: null,
        code: 'model_not_available',
      },
    },
  };
}

/** llama.cpp while it loads the model (the real /health 503 body). */
export function loadingModel(): FakeReply {
  return kindError('llamacpp', 503, 'Loading model');
}

/** llama-swap when the upstream process cannot start (Go http.Error: text, trailing newline). */
export function unableToStartProcess(): FakeReply {
  return { status: 502, body: 'unable to start process: upstream command exited unexpectedly: exit status 1\n' };
}

/** An unknown path, the way each server's router says it. */
export function pathNotFound(kind: FakeKind): FakeReply {
  switch (kind) {
    case 'llamacpp':
      return kindError(kind, 404, 'File Not Found');
    case 'llamaswap':
    case 'ollama':
      return { status: 404, body: '404 page not found' };
    case 'vllm':
      return { status: 404, body: { detail: 'Not Found' } };
    case 'openrouter':
      return kindError(kind, 404, 'Not Found');
    case 'together':
      return kindError(kind, 404, 'Not Found');
  }
}

/** Unparseable JSON body. */
export function badJson(kind: FakeKind): FakeReply {
  return kindError(kind, 400, 'invalid JSON in request body');
}
