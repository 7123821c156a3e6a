/** Small HTTP helpers for the tests that talk to one fake backend directly. */
import { setTimeout as delay } from 'node:timers/promises';
import { parseSse, startFake, type FakeBackend, type FakeKind, type FakeKnobs } from './index.ts';

export const CHAT = '/v1/chat/completions';

export function post(
  fake: FakeBackend,
  path: string,
  body: unknown,
  init: { headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<Response> {
  return fetch(`${fake.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...init.headers },
    body: JSON.stringify(body),
    signal: init.signal,
  });
}

export function chatBody(fake: FakeBackend, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { model: fake.models[0], messages: [{ role: 'user', content: 'hello' }], ...extra };
}

export const streamBody = (fake: FakeBackend, extra: Record<string, unknown> = {}) =>
  chatBody(fake, { stream: true, stream_options: { include_usage: true }, ...extra });

/** The JSON chunks of an SSE body ([DONE] excluded) and whether [DONE] came. */
export function chunksOf(raw: string): { chunks: any[]; done: boolean } {
  const { data } = parseSse(raw);
  return { chunks: data.filter((d) => d !== '[DONE]').map((d) => JSON.parse(d)), done: data.includes('[DONE]') };
}

/** Polls `cond` every few ms for up to a second (callers assert afterwards). */
export async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await delay(5);
}

export const contentOf = (chunks: any[]) => chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join('');
export const countContentChunks = (raw: string) => (raw.match(/tok\d+/g) ?? []).length;

export async function withFake(
  kind: FakeKind,
  knobs: Partial<FakeKnobs>,
  fn: (f: FakeBackend) => Promise<void>,
  apiKey?: string,
): Promise<void> {
  const fake = await startFake(kind, { knobs, apiKey });
  try {
    await fn(fake);
  } finally {
    await fake.close();
  }
}
