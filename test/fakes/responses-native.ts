/**
 * A fake OpenAI Responses API (a `responses: native` backend) on 127.0.0.1: `POST
 * /v1/responses` (stream or not; `store` defaults to true as on OpenAI; `previous_response_id`
 * must name a stored response, whose conversation the model then sees), `GET
 * /v1/responses/{id}`, `DELETE /v1/responses/{id}`, `GET /v1/responses/{id}/input_items`, and
 * `GET /v1/models`. Bearer auth; errors in OpenAI's shape. Records every request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { listenFake } from './listen.ts';
import {
  finishedResponse,
  inputItemsPage,
  newResponseId,
  openaiError,
  responseNotFound,
  storedInputItems,
  streamEvents,
} from './responses-native-reply.ts';
import { readBody, sleep } from './server.ts';

export interface NativeResponsesFake {
  url: string;
  requests: { method: string; path: string; query: string; headers: IncomingMessage['headers']; body: any }[];
  /** What the fake holds, by response id. */
  stored: Map<string, StoredNative>;
  /** Pause between stream events (ms), so a run can be caught mid-stream. */
  setEventDelay(ms: number): void;
  /** The id the next created response gets (a backend's odd ids, e.g. with `/`), instead of a fresh one. */
  setNextId(id: string): void;
  close(): Promise<void>;
}

interface StoredNative {
  response: Record<string, unknown>;
  /** This turn's input items (what input_items lists). */
  input: Record<string, unknown>[];
  /** Everything the model saw and said, for a later previous_response_id. */
  conversation: unknown[];
}

export async function startNativeResponsesFake(
  opts: { models?: string[]; apiKey?: string } = {},
): Promise<NativeResponsesFake> {
  const models = opts.models ?? ['gpt-5.2'];
  const requests: NativeResponsesFake['requests'] = [];
  const stored = new Map<string, StoredNative>();
  let eventDelayMs = 0;
  let nextId: string | undefined;

  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': `req_${Date.now()}` });
    res.end(JSON.stringify(body));
  };

  async function create(body: any, res: ServerResponse, signal: AbortSignal): Promise<void> {
    if (!models.includes(body?.model)) {
      const e = openaiError(400, `The requested model '${body?.model}' does not exist.`, 'model', 'model_not_found');
      return void json(res, e.status, e.body);
    }
    let earlier: unknown[] = [];
    if (body.previous_response_id != null) {
      const previous = stored.get(body.previous_response_id);
      if (!previous) {
        const message = `Previous response with id '${body.previous_response_id}' not found.`;
        const e = openaiError(400, message, 'previous_response_id', 'previous_response_not_found');
        return void json(res, e.status, e.body);
      }
      earlier = previous.conversation;
    }
    const input = storedInputItems(body.input);
    const final = finishedResponse(body, nextId ?? newResponseId(), earlier.length + input.length);
    nextId = undefined;
    const conversation = [...earlier, ...input, ...(final.output as unknown[])];
    if (body.store !== false) stored.set(final.id as string, { response: final, input, conversation });
    if (body.stream !== true) return void json(res, 200, final);
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    for (const e of streamEvents(final)) {
      if (eventDelayMs > 0) await sleep(eventDelayMs, signal);
      if (signal.aborted || res.destroyed) return;
      res.write(`event: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`);
    }
    res.end();
  }

  type Answer = { status: number; body: unknown };
  function readBack(method: string, path: string, query: URLSearchParams): Answer | undefined {
    const m = /^\/v1\/responses\/([^/]+)(\/input_items)?$/.exec(path);
    if (!m) return undefined;
    const id = decodeURIComponent(m[1]!);
    const held = stored.get(id);
    if (!held) return responseNotFound(id);
    if (method === 'GET' && m[2]) return inputItemsPage(held.input, query);
    if (method === 'GET') return { status: 200, body: held.response };
    if (method === 'DELETE' && !m[2]) {
      stored.delete(id);
      return { status: 200, body: { id, object: 'response', deleted: true } };
    }
    return undefined;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake.invalid');
    const raw = await readBody(req);
    let body: any;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      body = undefined;
    }
    const method = req.method ?? 'GET';
    requests.push({ method, path: url.pathname, query: url.search.slice(1), headers: { ...req.headers }, body });
    if (opts.apiKey && req.headers.authorization !== `Bearer ${opts.apiKey}`) {
      return void json(res, 401, openaiError(401, 'Incorrect API key provided.', null, 'invalid_api_key').body);
    }
    if (method === 'GET' && url.pathname === '/v1/models') {
      const data = models.map((id) => ({ id, object: 'model', created: 1727308800, owned_by: 'system' }));
      return void json(res, 200, { object: 'list', data });
    }
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    if (method === 'POST' && url.pathname === '/v1/responses') return create(body, res, abort.signal);
    const answer =
      readBack(method, url.pathname, url.searchParams) ?? openaiError(404, `Invalid URL (${method} ${url.pathname})`);
    json(res, answer.status, answer.body);
  }

  const listener = await listenFake({
    label: 'fake native responses',
    refuse: () => false,
    handle,
    crashed: (res, err) => json(res, 500, openaiError(500, `fake crashed: ${String(err)}`).body),
  });
  return {
    url: `http://127.0.0.1:${listener.port}`,
    requests,
    stored,
    setEventDelay: (ms) => {
      eventDelayMs = ms;
    },
    setNextId: (id) => {
      nextId = id;
    },
    close: () => listener.close(),
  };
}
