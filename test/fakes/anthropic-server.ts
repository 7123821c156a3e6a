/**
 * The fake Anthropic Messages API: a real node:http server on 127.0.0.1 that answers like
 * api.anthropic.com (auth, anthropic-version, pydantic-style 400s, request-id on everything),
 * records every request and obeys its knobs. All state lives in the startAnthropicFake closure.
 *
 *   GET  /v1/models[?limit&after_id&before_id]   GET /v1/models/{id}
 *   POST /v1/messages (stream and not; message threads, anthropic-threads.ts)
 *   POST /v1/messages/count_tokens
 */
import { listenFake } from './listen.ts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  anthropicError,
  authRefusal,
  errorBody,
  messagesBodyRefusal,
  modelNotFound,
  newRequestId,
  OVERLOADED_EVENT,
  statusError,
  versionRefusal,
  type AnthropicErrorReply,
} from './anthropic-errors.ts';
import { DEFAULT_ANTHROPIC_MODELS, modelInfo, modelsPage } from './anthropic-models.ts';
import {
  assembledMessage,
  inputTokensOf,
  planAnthropicReply,
  sseEvent,
  streamEvents,
  type AnthropicPlan,
} from './anthropic-reply.ts';
import {
  ANTHROPIC_FAKE_API_KEY,
  ANTHROPIC_FAKE_OAUTH_TOKEN,
  DEFAULT_ANTHROPIC_KNOBS,
  type AnthropicFake,
  type AnthropicKnobs,
  type RecordedAnthropicRequest,
  type StartAnthropicFakeOptions,
} from './anthropic-types.ts';
import { readBody, sleep, untilAborted, write } from './server.ts';
import { FakeThreads } from './anthropic-threads.ts';

const SSE_HEAD = { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache' };
const JSON_TYPE = { 'Content-Type': 'application/json' };

/** Answers JSON with the request's id in the `request-id` header, as every real response has. */
function sendJson(
  res: ServerResponse,
  requestId: string,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.destroyed || res.headersSent) return;
  res.writeHead(status, { ...JSON_TYPE, 'request-id': requestId, ...headers });
  res.end(JSON.stringify(body));
}

/** An error answer: `{"type":"error","error":{type,message},"request_id"}` and its headers. */
function sendError(res: ServerResponse, requestId: string, e: AnthropicErrorReply): void {
  sendJson(res, requestId, e.status, errorBody(e, requestId), e.headers);
}

/** Starts the fake Anthropic API on 127.0.0.1. */
export async function startAnthropicFake(opts: StartAnthropicFakeOptions = {}): Promise<AnthropicFake> {
  const models = [...(opts.models ?? DEFAULT_ANTHROPIC_MODELS)];
  const knobs: AnthropicKnobs = { ...DEFAULT_ANTHROPIC_KNOBS, ...opts.knobs };
  const apiKey = opts.apiKey ?? ANTHROPIC_FAKE_API_KEY;
  const oauthToken = opts.oauthToken ?? ANTHROPIC_FAKE_OAUTH_TOKEN;
  const requests: RecordedAnthropicRequest[] = [];
  let inflight = 0;
  let maxInflight = 0;
  /** errorStatus answers sent since errorCount/errorStatus were last set. */
  let errorsSent = 0;
  const threads = new FakeThreads();

  /** The refusal a messages request gets before any content, if any (knob errors last, as in the OpenAI fakes). */
  function messagesRefusal(body: any): AnthropicErrorReply | undefined {
    if (!models.includes(body.model)) return modelNotFound(body.model);
    if (knobs.errorStatus > 0 && (knobs.errorCount <= 0 || errorsSent < knobs.errorCount)) {
      if (knobs.errorCount > 0) errorsSent++;
      return statusError(knobs.errorStatus, knobs.retryAfter);
    }
    return undefined;
  }

  async function streamReply(
    res: ServerResponse,
    requestId: string,
    plan: AnthropicPlan,
    signal: AbortSignal,
  ): Promise<void> {
    const { tokensPerSecond, dropAfterEvents: drop, overloadedMidStream: overload } = knobs;
    const events = streamEvents(plan);
    const totalDeltas = events.filter((e) => e.delta).length;
    const overloadAt = overload >= 0 ? Math.min(overload, totalDeltas) : -1;
    res.writeHead(200, { ...SSE_HEAD, 'request-id': requestId });
    res.flushHeaders();
    let deltas = 0;
    for (let i = 0; i < events.length; i++) {
      if (drop >= 0 && i >= Math.min(drop, events.length)) {
        res.socket?.destroy();
        return;
      }
      const e = events[i]!;
      if (e.delta && tokensPerSecond > 0) await sleep(1000 / tokensPerSecond, signal);
      if (signal.aborted) return;
      await write(res, sseEvent(e.data), signal);
      if (e.delta) deltas++;
      // The real API ends an overloaded stream with one `event: error` and no message_stop.
      if (overloadAt >= 0 && (overloadAt === 0 ? i === 0 : e.delta && deltas === overloadAt)) {
        await write(res, sseEvent(OVERLOADED_EVENT), signal);
        res.end();
        return;
      }
    }
    if (drop >= 0 && drop >= events.length) {
      res.socket?.destroy();
      return;
    }
    res.end();
  }

  async function serveMessages(
    raw: any,
    parsed: boolean,
    betas: string,
    res: ServerResponse,
    requestId: string,
    signal: AbortSignal,
  ): Promise<void> {
    await sleep(knobs.latencyMs, signal);
    if (signal.aborted) return;
    const invalid = messagesBodyRefusal(raw, parsed, false);
    if (invalid) return sendError(res, requestId, invalid);
    const thread = threads.turn(raw, betas);
    if (thread && 'status' in thread) return sendError(res, requestId, thread);
    const body = thread ? thread.body : raw;
    const refusal = messagesRefusal(body);
    if (refusal) return sendError(res, requestId, refusal);
    const streaming = body.stream === true;
    if (knobs.headThenSilence) {
      res.writeHead(200, { ...(streaming ? SSE_HEAD : JSON_TYPE), 'request-id': requestId });
      res.flushHeaders();
      return untilAborted(signal);
    }
    const plan = planAnthropicReply(body, knobs);
    thread?.hold(assembledMessage(plan) as { id: string; role: string; content: unknown });
    if (streaming) return streamReply(res, requestId, plan, signal);
    if (knobs.dropAfterEvents >= 0) {
      res.socket?.destroy();
      return;
    }
    if (knobs.overloadedMidStream >= 0) return sendError(res, requestId, statusError(529));
    if (knobs.tokensPerSecond > 0) await sleep((plan.outputTokens * 1000) / knobs.tokensPerSecond, signal);
    if (signal.aborted) return;
    if (knobs.halfBodyThenSilence) {
      const json = JSON.stringify(assembledMessage(plan));
      res.writeHead(200, { ...JSON_TYPE, 'request-id': requestId, 'Content-Length': String(Buffer.byteLength(json)) });
      res.write(json.slice(0, Math.floor(json.length / 2)));
      return untilAborted(signal);
    }
    sendJson(res, requestId, 200, assembledMessage(plan));
  }

  /** Everything but POST /v1/messages; undefined when the path is unknown. */
  function otherReply(
    method: string,
    path: string,
    query: URLSearchParams,
    body: any,
    parsed: boolean,
  ): { body: unknown } | AnthropicErrorReply | undefined {
    if (method === 'GET' && path === '/v1/models') {
      if (knobs.modelsStatus > 0) return statusError(knobs.modelsStatus);
      const page = modelsPage(models, query);
      return 'data' in page ? { body: page } : page;
    }
    if (method === 'GET' && path.startsWith('/v1/models/')) {
      const id = decodeURIComponent(path.slice('/v1/models/'.length));
      if (knobs.modelsStatus > 0) return statusError(knobs.modelsStatus);
      return models.includes(id) ? { body: modelInfo(id) } : modelNotFound(id);
    }
    if (method === 'POST' && path === '/v1/messages/count_tokens') {
      const refusal = messagesBodyRefusal(body, parsed, true);
      if (refusal) return refusal;
      if (!models.includes(body.model)) return modelNotFound(body.model);
      return { body: { input_tokens: inputTokensOf(body) } };
    }
    return undefined;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (knobs.refuse) {
      req.socket.resetAndDestroy();
      return;
    }
    const url = new URL(req.url ?? '/', 'http://fake.invalid');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    const requestId = newRequestId();
    const record: RecordedAnthropicRequest = {
      method,
      path,
      query: url.search.slice(1),
      headers: { ...req.headers },
      rawBody: '',
      body: undefined,
      startedAt: Date.now(),
    };
    requests.push(record);
    const abort = new AbortController();
    res.on('close', () => {
      record.endedAt = Date.now();
      abort.abort();
    });
    const isMessages = method === 'POST' && path === '/v1/messages';
    if (isMessages) {
      inflight++;
      maxInflight = Math.max(maxInflight, inflight);
      res.once('close', () => {
        inflight--;
      });
    }

    let raw: string;
    try {
      raw = await readBody(req);
    } catch {
      return;
    }
    record.rawBody = raw;
    let body: any;
    let parsed = raw.length > 0;
    if (parsed) {
      try {
        body = JSON.parse(raw);
      } catch {
        parsed = false;
      }
    }
    record.body = body;

    if (!path.startsWith('/v1/')) return sendError(res, requestId, anthropicError(404, 'Not Found'));
    const gate = authRefusal(req.headers, apiKey, oauthToken) ?? versionRefusal(req.headers);
    if (gate) return sendError(res, requestId, gate);
    const betas = [req.headers['anthropic-beta'] ?? ''].flat().join(',');
    if (isMessages) return serveMessages(body, parsed, betas, res, requestId, abort.signal);
    const reply = otherReply(method, path, url.searchParams, body, parsed) ?? anthropicError(404, 'Not Found');
    if ('status' in reply) return sendError(res, requestId, reply);
    sendJson(res, requestId, 200, reply.body);
  }

  const listener = await listenFake({
    label: 'fake anthropic',
    port: opts.port,
    refuse: () => knobs.refuse,
    handle,
    crashed: (res, err) =>
      sendError(res, newRequestId(), anthropicError(500, `fake anthropic crashed: ${String(err)}`)),
  });
  const port = listener.port;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    models,
    knobs,
    setKnobs(patch: Partial<AnthropicKnobs>) {
      Object.assign(knobs, patch);
      if ('errorCount' in patch || 'errorStatus' in patch) errorsSent = 0;
    },
    requests,
    get inflight() {
      return inflight;
    },
    get maxInflight() {
      return maxInflight;
    },
    close: () => listener.close(),
  };
}
