import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Dispatcher } from 'undici';
import type { BackendRegistry, BackendState } from '../backends/registry.ts';
import { credentialHeaders } from '../backends/probe.ts';
import { describeError, kindForStatus } from '../backends/errors.ts';
import type { BackendError } from '../backends/types.ts';
import type { GatewayConfig } from '../config/types.ts';
import { GatewayError } from '../errors.ts';
import type { Resolution } from '../routing/resolve.ts';
import { SchedulerRejection, type Lease, type Scheduler, type Ticket } from '../scheduler/index.ts';
import { adaptEmbeddingsResponse } from './embeddings.ts';
import { clientResponseHeaders, upstreamRequestHeaders } from './headers.ts';
import type { CallOutcome } from './outcome.ts';
import { relayStream } from './relay.ts';
import { usageFromOpenAI, usageFromLlamaCppTimings } from './usage.ts';

export type Endpoint = 'chat' | 'completions' | 'embeddings';

export interface ProxyDeps {
  registry: BackendRegistry;
  scheduler: Scheduler;
  dispatcherFor: (backend: BackendState) => Dispatcher;
  config: () => GatewayConfig;
  now: () => number;
  onOutcome: (outcome: CallOutcome) => void;
  log: { warn(obj: object, msg: string): void };
}

export interface ProxyCall {
  endpoint: Endpoint;
  body: Record<string, unknown>;
  resolution: Resolution;
  req: FastifyRequest;
  reply: FastifyReply;
  /** Who is calling, for the call log. */
  caller: { source: string; userId: number | null };
  /** Re-resolves the candidates against the current fleet while the call is parked. */
  refreshCandidates?: () => Resolution['candidates'];
}

/** Why an attempt on one backend did not produce an answer and the next candidate should try. */
interface Failover {
  error: Omit<BackendError, 'since'>;
  /** Counts towards the backend's consecutive-failure threshold (a model still loading does not). */
  countsAsFailure: boolean;
}

const LOAD_FAILURE = /unable to start process|loading model/i;

/** What the call inspector keeps of a streamed answer (the call log caps it again). */
const CAPTURE_BYTES = 256 * 1024;

/**
 * Forwards one OpenAI-style call: waits for a lease from the scheduler, sends the request to
 * that backend, fails over to the next free candidate on errors before the response head, and
 * relays the answer (streams event by event). Writes the response itself and reports every
 * answered call through `onOutcome`; a call it refuses comes back as a thrown GatewayError,
 * which the route records.
 */
export class Proxy {
  constructor(private readonly deps: ProxyDeps) {}

  async handle(call: ProxyCall): Promise<void> {
    const { deps } = this;
    const cfg = deps.config();
    const startedAt = deps.now();
    const clientGone = abortOnClientClose(call.reply);
    const ticket: Ticket = {
      alias: call.resolution.alias ?? call.resolution.requested,
      candidates: call.resolution.candidates.map((c) => ({ backend: c.backend, typeKey: c.model })),
      parkMs: parkSeconds(cfg, call.resolution.alias ?? call.resolution.requested) * 1000,
      signal: clientGone.signal,
      refresh: call.refreshCandidates && (() => call.refreshCandidates!().map((c) => ({ backend: c.backend, typeKey: c.model }))),
    };
    const base: Omit<CallOutcome, 'status' | 'reason' | 'durationMs'> = {
      requestId: String(call.req.id), endpoint: call.endpoint, requestedModel: call.resolution.requested,
      backend: null, model: null, startedAt, ttftMs: null,
      source: call.caller.source, userId: call.caller.userId,
      requestBody: cfg.capture_bodies ? JSON.stringify(call.body) : undefined,
    };

    let lease: Lease | null;
    try {
      lease = await deps.scheduler.acquire(ticket);
    } catch (err) {
      if (err instanceof SchedulerRejection) {
        if (err.reason === 'aborted') {
          deps.onOutcome({ ...base, status: 499, reason: 'client_closed_while_parked', durationMs: deps.now() - startedAt });
          return;
        }
        throw rejectionError(err, ticket.alias);
      }
      throw err;
    }

    const tried = new Set<string>();
    let lastFailure: Failover | undefined;
    while (lease) {
      tried.add(lease.backend);
      const failover = await this.attempt(call, lease, clientGone, base);
      if (!failover) return;
      lastFailure = failover;
      const backend = lease.backend;
      lease.release();
      if (failover.countsAsFailure) {
        deps.registry.recordFailure(backend, failover.error, cfg.failure_threshold);
      }
      deps.log.warn({ backend, reqId: call.req.id, error: failover.error }, 'upstream attempt failed; trying the next candidate');
      if (clientGone.signal.aborted) {
        deps.onOutcome({ ...base, backend, status: 499, reason: 'client_closed', durationMs: deps.now() - startedAt });
        return;
      }
      lease = deps.scheduler.tryAcquireNow(ticket.refresh?.() ?? ticket.candidates, tried);
    }
    throw exhaustedError(lastFailure);
  }

  /** One try on the leased backend. Returns a Failover when the next candidate should try. */
  private async attempt(
    call: ProxyCall,
    lease: Lease,
    clientGone: AbortController,
    base: Omit<CallOutcome, 'status' | 'reason' | 'durationMs'>,
  ): Promise<Failover | undefined> {
    const { deps } = this;
    const cfg = deps.config();
    const backend = deps.registry.get(lease.backend);
    if (!backend) return { error: { kind: 'error', detail: 'backend was removed' }, countsAsFailure: false };
    const outcomeBase = { ...base, backend: backend.name, model: lease.typeKey };
    const wantsStream = call.endpoint !== 'embeddings' && call.body.stream === true;
    const payload = Buffer.from(JSON.stringify(upstreamBody(call.body, lease.typeKey, wantsStream)));
    const path = `${backend.basePath}${call.req.url}`;

    const firstByteMs = cfg.first_byte_timeout_s > 0 ? cfg.first_byte_timeout_s * 1000 : 0;
    const attemptStartedAt = deps.now();

    let res: Dispatcher.ResponseData;
    try {
      res = await deps.dispatcherFor(backend).request({
        path,
        method: 'POST',
        headers: upstreamRequestHeaders(call.req.headers, credentialHeaders(backend.spec), payload.length),
        body: payload,
        signal: clientGone.signal,
        headersTimeout: firstByteMs || cfg.request_timeout_s * 1000,
        // a stream may legitimately wait long for its first token (prefill); the relay watches
        // the silence between data after that. A JSON answer gets the idle limit as a whole.
        bodyTimeout: wantsStream ? 0 : cfg.stream_idle_timeout_s * 1000,
      });
    } catch (err) {
      return { error: describeError(err), countsAsFailure: !clientGone.signal.aborted };
    }

    if (res.statusCode !== 200) {
      let text: string;
      try {
        text = await res.body.text();
      } catch (err) {
        return { error: describeError(err), countsAsFailure: true };
      }
      if ((res.statusCode === 502 || res.statusCode === 503) && LOAD_FAILURE.test(text)) {
        return {
          error: { kind: 'upstream', status: res.statusCode, detail: text.slice(0, 300) },
          countsAsFailure: res.statusCode === 502,
        };
      }
      const countsAsFailure = res.statusCode >= 500 || res.statusCode === 408 || res.statusCode === 429;
      if (countsAsFailure) {
        deps.registry.recordFailure(backend.name, { kind: kindForStatus(res.statusCode), status: res.statusCode, detail: text.slice(0, 300) }, cfg.failure_threshold);
      } else {
        deps.registry.recordSuccess(backend.name);
      }
      lease.release();
      this.sendUpstreamAnswer(call.reply, backend, res, scrubSecret(text, backend.spec.api_key));
      deps.onOutcome({ ...outcomeBase, status: res.statusCode, reason: 'upstream_error', durationMs: deps.now() - base.startedAt, responseBody: cfg.capture_bodies ? text : undefined });
      return undefined;
    }

    const contentType = String(res.headers['content-type'] ?? '');
    if (wantsStream && contentType.includes('text/event-stream')) {
      const result = await relayStream({
        upstream: res,
        reply: call.reply,
        headers: { ...gatewayHeaders(backend.name, call.req.id) },
        clientWantsUsage: (call.body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true,
        promptTokenEstimate: estimatePromptTokens(call.body),
        now: deps.now,
        firstByteTimeoutMs: firstByteMs,
        idleTimeoutMs: cfg.stream_idle_timeout_s * 1000,
        captureBytes: cfg.capture_bodies ? CAPTURE_BYTES : 0,
      });
      if (result.kind === 'failover') {
        return { error: result.error, countsAsFailure: true };
      }
      const status = result.kind === 'complete' ? 200 : result.kind === 'client_closed' ? 499 : 502;
      if (result.kind === 'upstream_failed') {
        deps.registry.recordFailure(backend.name, result.error, cfg.failure_threshold);
      } else {
        deps.registry.recordSuccess(backend.name);
      }
      lease.release();
      const summary = result.summary;
      if (status === 200 && summary.usage && summary.firstTokenAt !== undefined) {
        deps.scheduler.recordSpeed(backend.name, {
          status, outputTokens: summary.usage.completion_tokens, seconds: Math.max(0.001, (deps.now() - summary.firstTokenAt) / 1000),
        });
      }
      deps.onOutcome({
        ...outcomeBase, status, reason: result.kind === 'complete' ? null : result.kind,
        durationMs: deps.now() - base.startedAt,
        ttftMs: summary.firstTokenAt !== undefined ? summary.firstTokenAt - base.startedAt : null,
        usage: summary.usage,
        responseBody: result.captured,
      });
      return undefined;
    }

    let raw: Buffer;
    try {
      raw = Buffer.from(await res.body.arrayBuffer());
    } catch (err) {
      return { error: describeError(err), countsAsFailure: !clientGone.signal.aborted };
    }
    deps.registry.recordSuccess(backend.name);
    lease.release();
    const { body, usage } = this.inspectJson(call, raw);
    const now = deps.now();
    const elapsed = now - base.startedAt;
    if (usage && call.endpoint !== 'embeddings') {
      // generation speed: time on this backend only, not time spent parked
      const seconds = Math.max(0.001, (now - attemptStartedAt) / 1000);
      deps.scheduler.recordSpeed(backend.name, { status: 200, outputTokens: usage.completion_tokens, seconds });
    }
    call.reply
      .code(200)
      .headers({ ...clientResponseHeaders(res.headers), ...gatewayHeaders(backend.name, call.req.id) })
      .send(body);
    deps.onOutcome({
      ...outcomeBase, status: 200, reason: null, durationMs: elapsed, ttftMs: elapsed, usage,
      responseBody: cfg.capture_bodies ? raw : undefined,
    });
    return undefined;
  }

  /** Reads usage out of a JSON answer; embeddings are re-encoded to what the client asked for. */
  private inspectJson(call: ProxyCall, raw: Buffer): { body: Buffer | string; usage?: ReturnType<typeof usageFromOpenAI> } {
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(raw.toString('utf8'));
    } catch {
      return { body: raw };
    }
    const usage = usageFromOpenAI(parsed) ?? (parsed.timings ? usageFromLlamaCppTimings(parsed.timings) : undefined);
    if (call.endpoint === 'embeddings') {
      const requested = call.body.encoding_format as 'float' | 'base64' | undefined;
      const adapted = adaptEmbeddingsResponse(parsed, requested);
      return { body: adapted === parsed ? raw : JSON.stringify(adapted), usage };
    }
    return { body: raw, usage };
  }

  private sendUpstreamAnswer(reply: FastifyReply, backend: BackendState, res: Dispatcher.ResponseData, text: string): void {
    reply
      .code(res.statusCode)
      .headers({ ...clientResponseHeaders(res.headers), ...gatewayHeaders(backend.name, reply.request.id) })
      .send(text);
  }
}

export function gatewayHeaders(backend: string, requestId: string): Record<string, string> {
  return { 'x-gateway-backend': backend, 'x-request-id': requestId };
}

/** The body sent upstream: the client's, untouched but for the real model id and the usage request. */
function upstreamBody(body: Record<string, unknown>, model: string, stream: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = { ...body, model };
  if (stream) {
    const opts = (typeof body.stream_options === 'object' && body.stream_options) || {};
    out.stream_options = { ...opts, include_usage: true };
  }
  return out;
}

function parkSeconds(cfg: GatewayConfig, alias: string): number {
  return Object.hasOwn(cfg.alias_park, alias) ? cfg.alias_park[alias] : cfg.park_timeout_s;
}

/** An AbortController that fires when the client goes away before the response finished. */
function abortOnClientClose(reply: FastifyReply): AbortController {
  const ac = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) ac.abort(new Error('client closed the connection'));
  });
  return ac;
}

function rejectionError(err: SchedulerRejection, alias: string): GatewayError {
  const messages: Record<string, string> = {
    no_backend: `No healthy backend is serving \`${alias}\` right now.`,
    parking_off: `Every backend serving \`${alias}\` is busy and parking is off for it; retry shortly.`,
    queue_full: `Too many calls are waiting for a backend; retry shortly.`,
    park_timeout: `Every backend serving \`${alias}\` stayed busy for the whole wait; retry shortly.`,
  };
  return new GatewayError({
    status: 503,
    code: err.reason === 'no_backend' ? 'no_healthy_backend' : err.reason,
    type: 'api_error',
    message: messages[err.reason] ?? err.message,
    retryAfter: err.retryAfter,
    reason: err.reason,
  });
}

function exhaustedError(failure: Failover | undefined): GatewayError {
  if (failure?.error.kind === 'timeout') {
    return new GatewayError({ status: 504, code: 'upstream_timeout', type: 'timeout_error', message: `The backend did not answer in time (${failure.error.detail}).` });
  }
  if (failure?.error.status === 503 || failure?.error.status === 502) {
    return new GatewayError({ status: 503, code: 'backend_unavailable', message: `No backend could take the call: ${failure.error.detail}`, retryAfter: 2 });
  }
  return new GatewayError({ status: 502, code: 'upstream_unreachable', message: `No backend could be reached: ${failure?.error.detail ?? 'unknown error'}` });
}

function scrubSecret(text: string, secret: string | undefined): string {
  return secret && secret.length >= 8 ? text.split(secret).join('[redacted]') : text;
}

/** A cheap prompt-size estimate for synthesised usage: the text of messages / prompt. */
function estimatePromptTokens(body: Record<string, unknown>): number {
  const messages = body.messages;
  if (Array.isArray(messages)) {
    let chars = 0;
    for (const m of messages) {
      const c = (m as { content?: unknown })?.content;
      chars += typeof c === 'string' ? c.length : c ? JSON.stringify(c).length : 0;
    }
    return Math.ceil(chars / 4);
  }
  if (typeof body.prompt === 'string') return Math.ceil(body.prompt.length / 4);
  return 0;
}
