/**
 * One fake backend: a real node:http server on 127.0.0.1 that answers like `kind` does,
 * records every request and obeys its knobs. All state lives in the startFake closure.
 */
import { listenFake } from './listen.ts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  DEFAULT_MODELS,
  llamaCppProps,
  llamaCppSlots,
  llamaSwapRunning,
  modelList,
  ollamaPs,
  ollamaTags,
  togetherIsDedicatedOnly,
  type CatalogueState,
} from './catalogues.ts';
import { audioRouteOf, serveAudio, type AudioContext } from './audio.ts';
import { DIALECTS, type Dialect } from './dialects.ts';
import { embeddingsReply } from './embeddings.ts';
import {
  badJson,
  knobError,
  loadingModel,
  modelNotFound,
  pathNotFound,
  togetherNonServerless,
  unableToStartProcess,
  unauthorized,
  type FakeReply,
} from './errors.ts';
import {
  chatChunks,
  chatCompletion,
  completionTokens,
  countTokens,
  planReply,
  textChunks,
  textCompletion,
  type ChunkSequence,
  type ReplyPlan,
} from './replies.ts';
import { SSE_DONE, sseData } from './sse.ts';
import {
  DEFAULT_KNOBS,
  type FakeBackend,
  type FakeKind,
  type FakeKnobs,
  type RecordedRequest,
  type StartFakeOptions,
} from './types.ts';

type Generation = 'chat' | 'text' | 'embeddings';

/** The OpenAI-compatible prefix: OpenRouter lives under /api/v1, everyone else under /v1. */
export function apiPrefix(kind: FakeKind): string {
  return kind === 'openrouter' ? '/api/v1' : '/v1';
}

function generationOf(kind: FakeKind, method: string, path: string): Generation | undefined {
  if (method !== 'POST') return undefined;
  const p = apiPrefix(kind);
  if (path === `${p}/chat/completions`) return 'chat';
  if (path === `${p}/completions`) return 'text';
  if (path === `${p}/embeddings`) return 'embeddings';
  return undefined;
}

/** Paths the real server serves without an API key even when one is configured. */
function isPublicPath(kind: FakeKind, path: string): boolean {
  switch (kind) {
    case 'llamacpp':
      return ['/health', '/v1/health', '/models', '/v1/models', '/api/tags'].includes(path);
    case 'vllm':
      return !path.startsWith('/v1');
    case 'llamaswap':
      return path === '/health';
    case 'openrouter':
      return path === '/api/v1/models';
    default:
      return false;
  }
}

function messageText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p?.text === 'string' ? p.text : '')).join('');
  return '';
}

/** What servedOrder records: the last user message, else the prompt, input or `user`. */
function servedLabel(body: any): string {
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
  const lastUser = [...messages].reverse().find((m) => m?.role === 'user');
  if (lastUser) return messageText(lastUser.content);
  for (const v of [body?.prompt, body?.input]) {
    if (typeof v === 'string') return v;
    if (Array.isArray(v) && typeof v[0] === 'string') return v[0];
  }
  return typeof body?.user === 'string' ? body.user : '';
}

/** A tool loop's second turn: the last message hands back a tool result. */
function lastIsToolResult(body: any): boolean {
  const messages: unknown[] = Array.isArray(body?.messages) ? body.messages : [];
  return (messages.at(-1) as { role?: unknown } | undefined)?.role === 'tool';
}

function promptTokensOf(body: any): number {
  if (Array.isArray(body?.messages))
    return countTokens(body.messages.map((m: any) => messageText(m?.content)).join('\n'));
  const prompt = body?.prompt;
  return countTokens(Array.isArray(prompt) ? prompt.join('\n') : typeof prompt === 'string' ? prompt : '');
}

function maxTokensOf(body: any): number | undefined {
  const v = body?.max_completion_tokens ?? body?.max_tokens;
  return typeof v === 'number' ? v : undefined;
}

function send(res: ServerResponse, reply: FakeReply): void {
  if (res.destroyed) return;
  const text = typeof reply.body === 'string';
  const payload = text ? (reply.body as string) : JSON.stringify(reply.body);
  res.writeHead(reply.status, {
    'Content-Type': text ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8',
    ...reply.headers,
  });
  res.end(payload);
}

/** The garbageJson answer: 200, application/json, and `body` serialised but cut in half (not JSON). */
function sendGarbled(res: ServerResponse, body: unknown): void {
  if (res.destroyed) return;
  const json = JSON.stringify(body);
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8' });
  res.end(json.slice(0, Math.floor(json.length / 2)));
}

/** The halfBodyThenSilence answer: 200, its head and half of `body`, then nothing until the client leaves or close(). */
function halfBodyThenSilence(res: ServerResponse, body: unknown, signal: AbortSignal): Promise<void> {
  if (res.destroyed) return Promise.resolve();
  const json = JSON.stringify(body);
  const length = String(Buffer.byteLength(json));
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': length });
  res.write(json.slice(0, Math.floor(json.length / 2)));
  return untilAborted(signal);
}

/** The headThenSilence answer: a 200 head, then nothing until the client goes away or close(). */
function headThenSilence(res: ServerResponse, streaming: boolean, signal: AbortSignal): Promise<void> {
  const type = streaming
    ? { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' }
    : { 'Content-Type': 'application/json; charset=utf-8' };
  res.writeHead(200, type);
  res.flushHeaders();
  return untilAborted(signal);
}

/** Resolves after `ms`, or at once when `signal` aborts (the timer is cleared). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

export function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/** Writes and waits until the data is handed to the socket (or the response is gone). */
export function write(res: ServerResponse, data: string, signal: AbortSignal): Promise<void> {
  if (res.destroyed || res.writableEnded || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    res.write(data, () => done());
  });
}

export async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const chunk of req) parts.push(chunk as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

/** Starts one fake backend of `kind` on 127.0.0.1. */
export async function startFake(kind: FakeKind, opts: StartFakeOptions = {}): Promise<FakeBackend> {
  const models = [...(opts.models ?? DEFAULT_MODELS[kind])];
  const knobs: FakeKnobs = { ...DEFAULT_KNOBS, ...opts.knobs };
  // prompt-cache hits (knob `cachedPromptTokens`) are reported the way OpenAI-style servers do
  const dialect = { ...DIALECTS[kind], usage: withCacheHits(DIALECTS[kind].usage, () => knobs.cachedPromptTokens) };
  const created = Math.floor(Date.now() / 1000);
  const slots = opts.slots ?? 4;
  const requests: RecordedRequest[] = [];
  const servedOrder: string[] = [];
  let running: CatalogueState['running'] =
    kind === 'llamaswap' || kind === 'ollama' ? [{ model: models[0]!, state: 'ready' }] : [];
  let loadingSince = Date.now();
  let inflight = 0;
  let maxInflight = 0;
  /** errorStatus answers sent since errorCount/errorStatus were last set. */
  let errorsSent = 0;

  const catalogueState = (): CatalogueState => ({ models, created, running, busy: inflight, slots });
  const isLoading = () => kind === 'llamacpp' && knobs.loadingMs > 0 && Date.now() - loadingSince < knobs.loadingMs;

  /** GET endpoints other than the generations; undefined when the path is unknown. */
  function statusReply(method: string, path: string): FakeReply | undefined {
    if (method !== 'GET' && method !== 'HEAD') {
      // as llama-swap: POST /api/models/unload unloads; /unload is GET only (POST is a 405)
      if (kind === 'llamaswap' && path === '/api/models/unload') {
        running = [];
        return { status: 200, body: { msg: 'ok' } };
      }
      if (kind === 'llamaswap' && path === '/unload') return { status: 405, body: 'Method Not Allowed' };
      return undefined;
    }
    const ok = (body: unknown): FakeReply => ({ status: 200, body });
    if (path === `${apiPrefix(kind)}/models`) return ok(modelList(kind, catalogueState()));
    switch (kind) {
      case 'llamacpp':
        if (path === '/health' || path === '/v1/health') return ok({ status: 'ok' });
        if (path === '/models') return ok(modelList(kind, catalogueState()));
        if (path === '/props') return ok(llamaCppProps(catalogueState()));
        if (path === '/slots') return ok(llamaCppSlots(catalogueState()));
        return undefined;
      case 'llamaswap':
        if (path === '/health') return ok('OK');
        if (path === '/running') return ok(llamaSwapRunning(catalogueState()));
        if (path === '/unload') {
          running = [];
          return ok('OK');
        }
        return undefined;
      case 'vllm':
        if (path === '/health') return ok('');
        if (path === '/version') return ok({ version: '0.11.0' });
        return undefined;
      case 'ollama':
        if (path === '/') return ok('Ollama is running');
        if (path === '/api/tags') return ok(ollamaTags(catalogueState()));
        if (path === '/api/ps') return ok(ollamaPs(catalogueState()));
        if (path === '/api/version') return ok({ version: '0.12.3' });
        return undefined;
      default:
        return undefined;
    }
  }

  /** llama-swap swaps to the requested model (taking loadingMs); Ollama keeps it loaded too. */
  async function ensureRunning(model: string, signal: AbortSignal): Promise<void> {
    if (kind === 'ollama' && !running.some((r) => r.model === model)) running = [...running, { model, state: 'ready' }];
    if (kind !== 'llamaswap' || running.some((r) => r.model === model && r.state === 'ready')) return;
    running = [{ model, state: 'starting' }];
    await sleep(knobs.loadingMs, signal);
    if (running[0]?.model === model) running = [{ model, state: 'ready' }];
  }

  /** The error a generation request gets before any content, if any. */
  function generationRefusal(model: string): FakeReply | undefined {
    if (!models.includes(model)) return modelNotFound(kind, model);
    if (knobs.errorStatus > 0 && (knobs.errorCount <= 0 || errorsSent < knobs.errorCount)) {
      if (knobs.errorCount > 0) errorsSent++;
      const error =
        knobs.errorBody === undefined
          ? knobError(kind, knobs.errorStatus)
          : { status: knobs.errorStatus, body: knobs.errorBody };
      return knobs.retryAfter === undefined
        ? error
        : { ...error, headers: { ...error.headers, 'Retry-After': knobs.retryAfter } };
    }
    if (kind === 'llamaswap' && knobs.unableToStart) return unableToStartProcess();
    if (kind === 'together' && togetherIsDedicatedOnly(model)) return togetherNonServerless(model);
    return undefined;
  }

  async function streamReply(
    res: ServerResponse,
    seq: ChunkSequence,
    started: () => void,
    signal: AbortSignal,
  ): Promise<void> {
    const { tokensPerSecond, dropAfterChunks: drop, stallAfterChunks: stall } = knobs;
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    res.flushHeaders();
    started();
    if (knobs.prefillMs > 0) await sleep(knobs.prefillMs, signal);
    for (const c of seq.lead) await write(res, sseData(c), signal);
    const cut = async (sent: number): Promise<boolean> => {
      if (drop >= 0 && sent >= Math.min(drop, seq.content.length)) {
        res.socket?.destroy();
        return true;
      }
      if (stall >= 0 && sent >= Math.min(stall, seq.content.length)) {
        await untilAborted(signal);
        return true;
      }
      return false;
    };
    for (let i = 0; i < seq.content.length; i++) {
      if (await cut(i)) return;
      if (tokensPerSecond > 0) await sleep(1000 / tokensPerSecond, signal);
      if (signal.aborted) return;
      await write(res, sseData(seq.content[i]), signal);
    }
    if (await cut(seq.content.length)) return;
    for (const c of seq.tail) await write(res, sseData(c), signal);
    await write(res, SSE_DONE, signal);
    res.end();
  }

  async function serveGeneration(what: Generation, body: any, res: ServerResponse, signal: AbortSignal): Promise<void> {
    let startedOnce = false;
    const started = () => {
      if (!startedOnce) {
        startedOnce = true;
        servedOrder.push(servedLabel(body));
      }
    };
    const reply = (r: FakeReply) => {
      started();
      send(res, r);
    };

    await sleep(knobs.latencyMs, signal);
    if (signal.aborted) return;
    const model = typeof body?.model === 'string' ? body.model : models[0]!;
    const refusal = generationRefusal(model);
    if (refusal) return reply(refusal);
    await ensureRunning(model, signal);
    if (signal.aborted) return;

    const streaming = body?.stream === true && what !== 'embeddings';
    if (knobs.headThenSilence) {
      started();
      return headThenSilence(res, streaming, signal);
    }
    if (!streaming && knobs.dropAfterChunks >= 0) {
      res.socket?.destroy();
      return;
    }
    if (!streaming && knobs.stallAfterChunks >= 0) return untilAborted(signal);
    const answer = (json: unknown) => {
      if (knobs.halfBodyThenSilence) {
        started();
        return halfBodyThenSilence(res, json, signal);
      }
      if (!knobs.garbageJson) return reply({ status: 200, body: json });
      started();
      sendGarbled(res, json);
    };
    if (what === 'embeddings') return answer(embeddingsReply(kind, model, body?.input, body?.encoding_format));

    const plan: ReplyPlan = planReply({
      dialect,
      what,
      model,
      promptTokens: promptTokensOf(body),
      chunkCount: knobs.chunkCount,
      maxTokens: maxTokensOf(body),
      toolCall: knobs.toolCall && !(knobs.toolCallOnce && lastIsToolResult(body)),
      toolName: knobs.toolCallName,
      toolArguments: knobs.toolCallArguments,
      parallelToolCalls: knobs.parallelToolCalls,
      reasoningChunks: knobs.reasoningChunks,
      tokensPerSecond: knobs.tokensPerSecond,
    });
    if (streaming) {
      const includeUsage =
        knobs.includeUsage &&
        (body?.stream_options?.include_usage === true || (kind === 'openrouter' && body?.usage?.include === true));
      const seq = what === 'chat' ? chatChunks(plan, includeUsage) : textChunks(plan, includeUsage);
      return streamReply(res, seq, started, signal);
    }
    if (knobs.tokensPerSecond > 0) await sleep((completionTokens(plan) * 1000) / knobs.tokensPerSecond, signal);
    if (signal.aborted) return;
    return answer(what === 'chat' ? chatCompletion(plan) : textCompletion(plan));
  }

  /** The audio endpoints' view of this fake (audio.ts). */
  const audioContext: AudioContext = {
    kind,
    knobs,
    send,
    gate: (req) => {
      if (opts.apiKey !== undefined && req.headers.authorization !== `Bearer ${opts.apiKey}`) return unauthorized(kind);
      return isLoading() ? loadingModel() : undefined;
    },
    refusal: (model) => generationRefusal(model),
    served: (label) => {
      servedOrder.push(label);
    },
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (knobs.refuse) {
      req.socket.resetAndDestroy();
      return;
    }
    const url = new URL(req.url ?? '/', 'http://fake.invalid');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    const record: RecordedRequest = {
      method,
      path,
      query: url.search.slice(1),
      headers: { ...req.headers },
      body: undefined,
      startedAt: Date.now(),
    };
    requests.push(record);
    const abort = new AbortController();
    res.on('close', () => {
      record.endedAt = Date.now();
      abort.abort();
    });

    const what = generationOf(kind, method, path);
    const audio = audioRouteOf(kind, apiPrefix(kind), method, path);
    if (what || audio) {
      inflight++;
      maxInflight = Math.max(maxInflight, inflight);
      res.once('close', () => {
        inflight--;
      });
    }

    if (audio) return serveAudio(audioContext, audio, req, res, record, abort.signal);
    let raw: string;
    try {
      raw = await readBody(req);
    } catch {
      return;
    }
    let body: any;
    let parsed = true;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw);
      } catch {
        body = raw;
        parsed = false;
      }
    }
    record.body = body;

    if (
      opts.apiKey !== undefined &&
      !isPublicPath(kind, path) &&
      req.headers.authorization !== `Bearer ${opts.apiKey}`
    ) {
      return send(res, unauthorized(kind));
    }
    if (isLoading()) return send(res, loadingModel());
    if (what) {
      if (!parsed) return send(res, badJson(kind));
      return serveGeneration(what, body, res, abort.signal);
    }
    send(res, statusReply(method, path) ?? pathNotFound(kind));
  }

  const listener = await listenFake({
    label: 'fake backend',
    port: opts.port,
    refuse: () => knobs.refuse,
    handle,
    crashed: (res, err) => send(res, { status: 500, body: `fake ${kind} crashed: ${String(err)}` }),
  });
  const port = listener.port;
  const origin = `http://127.0.0.1:${port}`;

  return {
    kind,
    url: kind === 'openrouter' ? `${origin}/api` : origin,
    port,
    models,
    knobs,
    setKnobs(patch: Partial<FakeKnobs>) {
      Object.assign(knobs, patch);
      if ('loadingMs' in patch) loadingSince = Date.now();
      if ('errorCount' in patch || 'errorStatus' in patch) errorsSent = 0;
    },
    requests,
    get inflight() {
      return inflight;
    },
    get maxInflight() {
      return maxInflight;
    },
    servedOrder,
    close: () => listener.close(),
  };
}

/** Wraps a dialect's usage so that `cached()` prompt tokens are reported as cache hits. */
function withCacheHits(usage: Dialect['usage'], cached: () => number): Dialect['usage'] {
  return (model, prompt, completion, reasoning) => {
    const u = usage(model, prompt, completion, reasoning);
    const hits = Math.min(cached(), prompt);
    if (hits <= 0) return u;
    const details = (u as { prompt_tokens_details?: object }).prompt_tokens_details ?? {};
    return { ...u, prompt_tokens_details: { ...details, cached_tokens: hits } };
  };
}
