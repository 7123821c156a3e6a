import { test } from 'node:test';
import assert from 'node:assert/strict';
import { anthropicErrorFromUpstream, anthropicErrorType } from '../src/bridges/anthropic/errors.ts';

const TYPES: [number, string][] = [
  [400, 'invalid_request_error'],
  [401, 'authentication_error'],
  [402, 'billing_error'],
  [403, 'permission_error'],
  [404, 'not_found_error'],
  [408, 'invalid_request_error'],
  [413, 'request_too_large'],
  [422, 'invalid_request_error'],
  [429, 'rate_limit_error'],
  [500, 'api_error'],
  [502, 'api_error'],
  [503, 'overloaded_error'],
  [504, 'timeout_error'],
  [529, 'overloaded_error'],
  [200, 'api_error'],
];

for (const [status, type] of TYPES) {
  test(`errors: status ${status} is ${type}`, () => assert.equal(anthropicErrorType(status), type));
}

const UPSTREAM: { name: string; status: number; text: string; want: unknown }[] = [
  {
    name: 'an Anthropic-shaped answer stays as it is',
    status: 529,
    text: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}',
    want: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' }, request_id: 'req_1' },
  },
  {
    name: 'OpenAI {error:{message}}',
    status: 429,
    text: '{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}',
    want: { type: 'error', error: { type: 'rate_limit_error', message: 'Rate limit reached for requests' } },
  },
  {
    name: 'llama.cpp {error:{code,message,type}}',
    status: 400,
    text: '{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}',
    want: {
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message: 'the request exceeds the available context size, try increasing it',
      },
    },
  },
  {
    name: 'llama.cpp loading',
    status: 503,
    text: '{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}',
    want: { type: 'error', error: { type: 'overloaded_error', message: 'Loading model' } },
  },
  {
    name: 'Ollama {error:"..."}',
    status: 404,
    text: '{"error":"model \\"llama9\\" not found, try pulling it first"}',
    want: {
      type: 'error',
      error: { type: 'not_found_error', message: 'model "llama9" not found, try pulling it first' },
    },
  },
  {
    name: 'vLLM {object:"error", message}',
    status: 400,
    text: '{"object":"error","message":"max_tokens must be at least 1, got 0.","type":"BadRequestError","param":null,"code":400}',
    want: { type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens must be at least 1, got 0.' } },
  },
  {
    name: 'FastAPI {detail}',
    status: 401,
    text: '{"detail":"Invalid API key"}',
    want: { type: 'error', error: { type: 'authentication_error', message: 'Invalid API key' } },
  },
  {
    name: 'plain text',
    status: 502,
    text: 'Bad Gateway\n',
    want: { type: 'error', error: { type: 'api_error', message: 'Bad Gateway' } },
  },
  {
    name: 'an empty body',
    status: 500,
    text: '',
    want: { type: 'error', error: { type: 'api_error', message: 'the backend answered with status 500' } },
  },
  {
    name: 'JSON without a message',
    status: 500,
    text: '{"ok":false}',
    want: { type: 'error', error: { type: 'api_error', message: '{"ok":false}' } },
  },
];

for (const c of UPSTREAM) {
  test(`errors from upstream: ${c.name}`, () => assert.deepEqual(anthropicErrorFromUpstream(c.status, c.text), c.want));
}

test('errors from upstream: a huge page is clipped', () => {
  const body = anthropicErrorFromUpstream(502, `<html>${'x'.repeat(10_000)}</html>`);
  assert.ok(body.error.message.length <= 2001);
  assert.ok(body.error.message.startsWith('<html>'));
});
