/** Small helpers for the tests that talk to the Anthropic fake directly, raw or through the real SDK. */
import Anthropic, { type ClientOptions } from '@anthropic-ai/sdk';
import { startAnthropicFake } from './anthropic-server.ts';
import { ANTHROPIC_FAKE_API_KEY, type AnthropicFake, type StartAnthropicFakeOptions } from './anthropic-types.ts';

export const VERSION = '2023-06-01';

/** The real SDK pointed at the fake; no retries, so each error reaches the test as it came. */
export function sdk(fake: AnthropicFake, opts: ClientOptions = {}): Anthropic {
  return new Anthropic({ baseURL: fake.url, apiKey: ANTHROPIC_FAKE_API_KEY, maxRetries: 0, ...opts });
}

/** The default headers of a raw call: the API key and the version. */
export function rawHeaders(extra: Record<string, string> = {}): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-api-key': ANTHROPIC_FAKE_API_KEY,
    'anthropic-version': VERSION,
    ...extra,
  };
}

/** A raw POST, headers replaced wholesale when given. */
export function rawPost(
  fake: AnthropicFake,
  path: string,
  body: unknown,
  headers: Record<string, string> = rawHeaders(),
): Promise<Response> {
  return fetch(`${fake.url}${path}`, {
    method: 'POST',
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** A minimal valid messages body for the fake's first model. */
export function messagesBody(fake: AnthropicFake, extra: Record<string, unknown> = {}): Record<string, any> {
  return { model: fake.models[0], max_tokens: 1024, messages: [{ role: 'user', content: 'hello' }], ...extra };
}

export async function withAnthropic(
  opts: StartAnthropicFakeOptions,
  fn: (f: AnthropicFake) => Promise<void>,
): Promise<void> {
  const fake = await startAnthropicFake(opts);
  try {
    await fn(fake);
  } finally {
    await fake.close();
  }
}

/** Reads a body to its end; 'error' when the connection broke instead. */
export async function readToEnd(res: Response): Promise<{ text: string; outcome: 'end' | 'error' }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, outcome: 'end' };
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    return { text, outcome: 'error' };
  }
}
