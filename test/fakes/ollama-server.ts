/**
 * A fake Ollama server on 127.0.0.1: the native API (`/api/chat`, `/api/generate`, `/api/embed`,
 * `/api/embeddings`, `/api/show`, `/api/tags`, `/api/ps`, `/api/version`, `GET /`) and the
 * `/v1/models` the gateway's discovery reads. It behaves like ollama/ollama's server/routes.go:
 * NDJSON streams unless `stream: false`, `{"error": …}` bodies with its statuses and wordings
 * (400 "missing request body" / "model is required" / a JSON decoder's complaint, 404
 * `model '<name>' not found`), every request recorded with its exact bytes. Held to the
 * captures of test/fixtures/llm/ollama/ by test/ollama-fake-conformance.test.ts.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ollamaOpenAiModels, ollamaPs, ollamaTags, type CatalogueState } from './catalogues.ts';
import { listenFake } from './listen.ts';
import { ollamaEmbed, ollamaShow, ollamaStreamLines, ollamaWholeReply, planOllamaReply } from './ollama-replies.ts';
import { readBody, sleep, write } from './server.ts';

export interface OllamaFakeKnobs {
  /** Content lines per reply. */
  chunks: number;
  /** Pause before each streamed line, ms. */
  lineDelayMs: number;
  /** Answer with a tool call when the request offers tools (and its last message is no tool result). */
  toolCall: boolean;
}

export interface OllamaRecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The body's exact text. */
  raw: string;
  /** The exact text of the answer's body, as far as it was written. */
  sent: string;
}

export interface OllamaFake {
  url: string;
  models: string[];
  knobs: OllamaFakeKnobs;
  requests: OllamaRecordedRequest[];
  /** Generations being served now. */
  readonly inflight: number;
  close(): Promise<void>;
}

export const OLLAMA_FAKE_VERSION = '0.32.8';

type Reply = { status: number; body: unknown };

const notFound = (model: string): Reply => ({ status: 404, body: { error: `model '${model}' not found` } });
const bad = (error: string): Reply => ({ status: 400, body: { error } });

function send(res: ServerResponse, reply: Reply, record?: OllamaRecordedRequest): void {
  if (res.destroyed) return;
  const text = typeof reply.body === 'string';
  res.writeHead(reply.status, {
    'Content-Type': text ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8',
  });
  const payload = text ? (reply.body as string) : JSON.stringify(reply.body);
  if (record) record.sent += payload;
  res.end(payload);
}

/** A JSON body as Go's decoder would take it: its error text, or the object. */
function decode(raw: string): { body?: any; error?: Reply } {
  if (raw.trim() === '') return { error: bad('missing request body') };
  try {
    return { body: JSON.parse(raw) };
  } catch {
    return { error: bad(`invalid character '${raw.trim()[0]}' looking for beginning of value`) };
  }
}

export async function startOllamaFake(
  opts: { models?: string[]; knobs?: Partial<OllamaFakeKnobs> } = {},
): Promise<OllamaFake> {
  const models = [...(opts.models ?? ['llama3.2:latest', 'qwen3:8b', 'all-minilm:latest'])];
  const knobs: OllamaFakeKnobs = { chunks: 5, lineDelayMs: 0, toolCall: false, ...opts.knobs };
  const requests: OllamaRecordedRequest[] = [];
  const created = Math.floor(Date.now() / 1000);
  let inflight = 0;
  const state = (): CatalogueState => ({
    models,
    created,
    running: [{ model: models[0]!, state: 'ready' }],
    busy: inflight,
    slots: 4,
  });

  function statusReply(method: string, path: string): Reply | undefined {
    if (method !== 'GET' && method !== 'HEAD') return undefined;
    if (path === '/') return { status: 200, body: 'Ollama is running' };
    if (path === '/api/version') return { status: 200, body: { version: OLLAMA_FAKE_VERSION } };
    if (path === '/api/tags') return { status: 200, body: ollamaTags(state()) };
    if (path === '/api/ps') return { status: 200, body: ollamaPs(state()) };
    if (path === '/v1/models') return { status: 200, body: ollamaOpenAiModels(state()) };
    return undefined;
  }

  async function generate(
    kind: 'chat' | 'generate',
    body: any,
    res: ServerResponse,
    record: OllamaRecordedRequest,
    signal: AbortSignal,
  ) {
    const reply = (r: Reply) => send(res, r, record);
    if (typeof body.model !== 'string' || body.model === '') return reply(bad('model is required'));
    if (!models.includes(body.model)) return reply(notFound(body.model));
    const plan = planOllamaReply(kind, body, { chunks: knobs.chunks, toolCall: knobs.toolCall });
    const started = Date.now();
    if (body.stream === false) {
      await sleep(knobs.lineDelayMs * plan.words.length, signal);
      return reply({ status: 200, body: ollamaWholeReply(plan, Date.now() - started) });
    }
    res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
    res.flushHeaders();
    const lines = ollamaStreamLines(plan, 0);
    for (const line of lines.slice(0, -1)) {
      await sleep(knobs.lineDelayMs, signal);
      if (signal.aborted) return;
      record.sent += line;
      await write(res, line, signal);
    }
    const last = ollamaStreamLines(plan, Date.now() - started).at(-1)!;
    record.sent += last;
    await write(res, last, signal);
    res.end();
  }

  function embed(path: string, body: any, reply: (r: Reply) => void): void {
    if (typeof body.model !== 'string' || body.model === '') return reply(bad('model is required'));
    if (!models.includes(body.model)) return reply(notFound(body.model));
    if (path === '/api/embeddings') {
      const prompt = typeof body.prompt === 'string' ? body.prompt : '';
      return reply({ status: 200, body: { embedding: ollamaEmbed(body.model, [prompt]).embeddings[0] } });
    }
    const input = typeof body.input === 'string' ? [body.input] : body.input;
    if (!Array.isArray(input) || !input.every((s) => typeof s === 'string')) return reply(bad('invalid input type'));
    reply({ status: 200, body: ollamaEmbed(body.model, input) });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://fake.invalid').pathname;
    const method = req.method ?? 'GET';
    const raw = await readBody(req);
    const record: OllamaRecordedRequest = { method, path, headers: { ...req.headers }, raw, sent: '' };
    requests.push(record);
    const reply = (r: Reply) => send(res, r, record);
    const status = statusReply(method, path);
    if (status) return reply(status);
    if (method !== 'POST') return reply({ status: 404, body: '404 page not found' });
    const generation = path === '/api/chat' ? 'chat' : path === '/api/generate' ? 'generate' : undefined;
    const known = generation || path === '/api/embed' || path === '/api/embeddings' || path === '/api/show';
    if (!known) return reply({ status: 404, body: '404 page not found' });
    const { body, error } = decode(raw);
    if (error) return reply(error);
    if (path === '/api/show') {
      const model = body.model ?? body.name;
      return reply(models.includes(model) ? { status: 200, body: ollamaShow(model) } : notFound(model));
    }
    if (!generation) return embed(path, body, reply);
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    inflight++;
    try {
      await generate(generation, body, res, record, abort.signal);
    } finally {
      inflight--;
    }
  }

  const listener = await listenFake({
    label: 'fake ollama',
    refuse: () => false,
    handle,
    crashed: (res, err) => send(res, { status: 500, body: { error: String(err) } }),
  });
  return {
    url: `http://127.0.0.1:${listener.port}`,
    models,
    knobs,
    requests,
    get inflight() {
      return inflight;
    },
    close: () => listener.close(),
  };
}
