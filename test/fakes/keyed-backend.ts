/**
 * A fake paid OpenAI-compatible backend that answers by the bearer key it is sent: `ok` (a chat
 * completion, streamed when asked), a refusal (`status` with an optional Retry-After and a body
 * that echoes the key, as real APIs do), or a stream that breaks after its first event. It counts
 * chat requests per key, with when they arrived, so a test can say which key was tried how often.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { listenFake } from './listen.ts';

/** `models`: the model list is refused too (a revoked key); otherwise only chat requests are. */
export type KeyBehaviour = 'ok' | 'break-stream' | { status: number; retryAfter?: string; models?: boolean };

export interface KeyedBackend {
  url: string;
  /** What each key gets (a key not in it: 401); change it at any time. */
  behaviour: Map<string, KeyBehaviour>;
  /** Chat requests per key, each with its arrival time (unix ms). */
  calls: Map<string, number[]>;
  count(key: string): number;
  total(): number;
  close(): Promise<void>;
}

export async function startKeyedBackend(model: string, behaviour: Record<string, KeyBehaviour>): Promise<KeyedBackend> {
  const fake = {
    behaviour: new Map(Object.entries(behaviour)),
    calls: new Map<string, number[]>(),
  };
  const listener = await listenFake({
    label: 'keyed',
    refuse: () => false,
    crashed: (res) => {
      res.statusCode = 500;
      res.end();
    },
    handle: async (req, res) => {
      const body = await readBody(req);
      const key = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
      if (req.method === 'GET' && req.url === '/v1/models') {
        const what = fake.behaviour.get(key);
        if (typeof what === 'object' && what.models) return json(res, what.status, { error: { message: 'refused' } });
        return json(res, 200, { object: 'list', data: [{ id: model, object: 'model', owned_by: 'fake' }] });
      }
      // residency reads and anything else: not this fake's business, and not counted
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') return json(res, 404, { error: 'not found' });
      const list = fake.calls.get(key) ?? [];
      list.push(Date.now());
      fake.calls.set(key, list);
      const what = fake.behaviour.get(key) ?? { status: 401 };
      const stream = (JSON.parse(body || '{}') as { stream?: boolean }).stream === true;
      if (typeof what === 'object') {
        if (what.retryAfter !== undefined) res.setHeader('retry-after', what.retryAfter);
        const message = `Incorrect API key provided: ${key}, or too many requests for ${key}`;
        return json(res, what.status, { error: { message, type: 'error', code: String(what.status) } });
      }
      if (!stream) return json(res, 200, completion(model, `hello from ${key.slice(-2)}`));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify(chunk(model, 'first '))}\n\n`);
      if (what === 'break-stream') {
        await new Promise((r) => setTimeout(r, 20));
        res.destroy();
        return;
      }
      res.write(`data: ${JSON.stringify(chunk(model, 'and last'))}\n\n`);
      res.end('data: [DONE]\n\n');
    },
  });
  return {
    url: `http://127.0.0.1:${listener.port}`,
    ...fake,
    count: (key) => fake.calls.get(key)?.length ?? 0,
    total: () => [...fake.calls.values()].reduce((n, l) => n + l.length, 0),
    close: () => listener.close(),
  };
}

function completion(model: string, content: string) {
  return {
    id: 'chatcmpl-keyed',
    object: 'chat.completion',
    created: 1,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
  };
}

function chunk(model: string, content: string) {
  return {
    id: 'chatcmpl-keyed',
    object: 'chat.completion.chunk',
    created: 1,
    model,
    choices: [{ index: 0, delta: { content }, finish_reason: null }],
  };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts).toString('utf8');
}
