import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Dispatcher } from 'undici';
import type { BackendRegistry, BackendState } from '../backends/registry.ts';
import type { GatewayConfig } from '../config/types.ts';
import { GatewayError } from '../errors.ts';
import { parkSeconds } from '../routing/aliases.ts';
import type { ConversationAffinity } from '../routing/conversation-affinity.ts';
import type { Resolution } from '../routing/resolve.ts';
import {
  SchedulerRejection,
  type Candidate,
  type Lease,
  type Scheduler,
  type Ticket,
  type TicketUser,
} from '../scheduler/index.ts';
import { classifyStatus } from './classify.ts';
import { UpstreamSignal } from './deadline.ts';
import { redactBackendText } from '../backends/secret-scrub.ts';
import { forward, type UpstreamHeaders } from './forward.ts';
import { clientResponseHeaders } from './headers.ts';
import type { CallOutcome } from '../stats/call-outcome.ts';
import {
  answerForCaller,
  exhaustedError,
  rejectionError,
  type AttemptFailure,
  type UpstreamAnswer,
} from './refusals.ts';
import type { RefusalDeps } from './refusals.ts';
import { withGatewayHeaders } from './gateway-headers.ts';
import type { AttemptEnd, OutcomeFields } from './attempt-end.ts';
import { bodyDeadlines, pipeRawBody, relaySse } from './body-relays.ts';
import { dropUnfitBoxes, learnAffinity } from './call-affinity.ts';
import { failoverTicket, spillAfterMs } from './call-ticket.ts';
import { jsonSpeedSample, type DispatchFacts } from './speed-sample.ts';
import { SseResponse, StreamKeepalive } from '../wire/sse-response.ts';
import { formatSseData } from '../wire/sse.ts';
import type { CallSurface } from './surface.ts';

export interface ProxyDeps extends RefusalDeps {
  registry: BackendRegistry;
  scheduler: Pick<Scheduler, 'acquire' | 'tryAcquireNow' | 'order' | 'recordSpeed' | 'queuePosition'>;
  dispatcherFor: (backend: BackendState) => Dispatcher;
  config: () => GatewayConfig;
  now: () => number;
  onOutcome: (outcome: CallOutcome) => void;
  /** Asks discovery to probe a backend now (failures crossed the threshold, or it is unreachable). */
  probe: (backend: string) => void;
  log: { warn(obj: object, msg: string): void };
  /**
   * A call for `model` is being sent to `backend` (residency: the box will hold it). Says what
   * the gateway knew of the box just before: whether it has to load the model, whether other
   * calls were in flight there (the attempt's speed sample, swap-cost.ts).
   */
  onDispatch?: (backend: string, model: string) => DispatchFacts;
  /** Where each conversation was answered last (routing/conversation-affinity.ts); absent = no affinity. */
  affinity?: ConversationAffinity;
}

export interface ProxyCall {
  /** The call's wire format: what the backend gets, what the client gets (surface.ts). */
  surface: CallSurface;
  resolution: Resolution;
  req: FastifyRequest;
  reply: FastifyReply;
  /** Who is calling: the call log's attribution, and the user the scheduler charges (routes/ticket-user.ts). */
  caller: {
    source: string;
    userId: number | null;
    ticketUser: TicketUser;
    /** Whether the caller may spend on paid backends now (budget, cost quota); absent = yes. */
    paidAllowed?: () => boolean;
  };
  /** Estimated prompt tokens (prompt-estimate.ts), for the scheduler's prefill term; absent = unknown. */
  promptTokens?: number;
  /** The call's conversation (routing/conversation-affinity.ts), computed only while affinity is on; absent = none. */
  conversationKey?: () => string | undefined;
  /** Re-resolves the candidates against the current fleet while the call is parked. */
  refreshCandidates?: () => Resolution['candidates'];
  /** The longest park for this call, seconds, in place of the alias's (background Responses wait longer). */
  parkSeconds?: number;
  /** Where the call's outcome goes: the route's once-only settle (stats/outcome-once.ts); else `deps.onOutcome`. */
  report?: (outcome: CallOutcome) => void;
}

/** What every outcome of a call shares, known when it starts. */
type OutcomeBase = Pick<
  CallOutcome,
  'requestId' | 'endpoint' | 'requestedModel' | 'startedAt' | 'source' | 'userId' | 'requestBody'
>;

/** One call on its way through the gateway, across all of its attempts. */
interface CallState {
  readonly call: ProxyCall;
  readonly cfg: GatewayConfig;
  readonly alias: string;
  /** Aborts upstream work when the client leaves or an attempt's deadline passes. */
  readonly upstream: UpstreamSignal;
  /** The client's stream, for stream calls (shared by every attempt and the keep-alive). */
  readonly sse?: SseResponse;
  readonly base: OutcomeBase;
  /** When the call's park time runs out (failover may park again until then). */
  readonly parkDeadline: number;
  /** The call's candidates now (re-resolved against the current fleet when it can be). */
  readonly candidates: () => Candidate[];
  /** The ticket parked now or last, for the keep-alive's queue position. */
  ticket: Ticket;
  /** The call's conversation key, while affinity is on and the call has one. */
  readonly conversation?: string;
  /** Why the current attempt's backend was chosen (`Lease.route`): `x-gateway-route` and the call log. */
  route?: string;
}

/**
 * Forwards one call in its surface's wire format: a lease from the scheduler (parking when
 * every candidate is busy), one attempt per backend, failover to the next candidate (parking
 * again for the time left) while nothing reached the client, and the answer written back.
 * Every attempt is settled once (slot released, health, speed, outcome), and an attempt that
 * throws releases its slot before the error goes on; every answered call is reported through
 * `onOutcome`. A call refused before anything was sent comes back as a
 * thrown GatewayError, which the route renders and records.
 */
export class UpstreamProxy {
  constructor(private readonly deps: ProxyDeps) {
    if (deps.affinity) dropUnfitBoxes(deps.affinity, deps.registry);
  }

  async handle(call: ProxyCall): Promise<void> {
    const state = this.begin(call);
    const surface = call.surface;
    const keepalive =
      state.sse &&
      new StreamKeepalive(state.sse, state.cfg.stream_keepalive_s * 1000, () =>
        surface.keepaliveFrame(this.keepaliveText(state)),
      );
    try {
      await this.run(state);
    } finally {
      keepalive?.stop();
    }
  }

  private begin(call: ProxyCall): CallState {
    const { deps } = this;
    const cfg = deps.config();
    const startedAt = deps.now();
    const alias = call.resolution.alias ?? call.resolution.requested;
    const upstream = new UpstreamSignal(call.reply);
    const { surface } = call;
    const parkMs = (call.parkSeconds ?? parkSeconds(cfg, alias)) * 1000;
    const refresh = call.refreshCandidates;
    const fixed = call.resolution.candidates;
    const candidates = refresh ?? (() => fixed);
    // a call that one backend alone serves now has no box to choose: no key to hash
    const affinityOn = cfg.affinity_ttl_s > 0 && deps.affinity !== undefined && fixed.length > 1;
    const conversation = affinityOn ? call.conversationKey?.() : undefined;
    return {
      call,
      cfg,
      alias,
      upstream,
      sse: surface.stream ? new SseResponse(call.reply, { 'x-request-id': String(call.req.id) }) : undefined,
      base: {
        requestId: String(call.req.id),
        endpoint: surface.endpoint,
        requestedModel: call.resolution.requested,
        startedAt,
        source: call.caller.source,
        userId: call.caller.userId,
        requestBody: cfg.capture_bodies ? surface.rawBody : undefined,
      },
      parkDeadline: startedAt + parkMs,
      candidates,
      ticket: {
        alias,
        candidates: fixed,
        parkMs,
        signal: upstream.signal,
        refresh: refresh && candidates,
        promptTokens: call.promptTokens,
        user: call.caller.ticketUser,
        stickTo: conversation === undefined ? undefined : deps.affinity!.backendFor(conversation, startedAt),
        spillAfterMs: spillAfterMs(cfg, alias),
        paidAllowed: call.caller.paidAllowed,
      },
      conversation,
    };
  }

  /** The failover loop: lease, attempt, settle (the slot comes back there); next candidate or park again. */
  private async run(state: CallState): Promise<void> {
    const tried = new Set<string>();
    let last: AttemptFailure | undefined;
    let lease = await this.firstLease(state);
    if (!lease) return; // refused or abandoned while parked: answered and reported already
    while (lease) {
      tried.add(lease.backend);
      state.route = lease.route;
      let end: AttemptEnd;
      try {
        end = await this.attempt(state, lease);
      } catch (err) {
        lease.release();
        // once the stream's head is out (a keep-alive wrote it) the route can no longer answer:
        // a refusal ends the stream here, in the surface's shape, and is on record
        if (err instanceof GatewayError && state.sse?.headWritten) return this.refuse(state, err, lease.backend);
        throw err;
      }
      this.settle(state, lease, end);
      if (!end.failover) return;
      last = {
        backend: lease.backend,
        error: end.error!,
        health: end.health,
        answer: end.answer,
        badAnswer: end.badAnswer,
      };
      this.deps.log.warn(
        { backend: last.backend, reqId: state.call.req.id, error: last.error },
        'upstream attempt failed; trying the next candidate',
      );
      lease = state.upstream.clientGone ? null : await this.nextLease(state, tried);
    }
    if (state.upstream.clientGone) {
      this.report(state, { backend: last?.backend ?? null, status: 499, reason: 'client_closed' });
      return;
    }
    if (last?.answer) {
      this.sendUpstreamAnswer(state, last.backend, answerForCaller(last.answer, this.deps, state.call.req));
      this.report(state, {
        backend: last.backend,
        status: last.answer.status,
        reason: 'upstream_error',
        responseBody: state.cfg.capture_bodies ? last.answer.text : undefined,
      });
      return;
    }
    this.refuse(state, exhaustedError(last, this.deps.refusals?.seesNames(state.call.req)), last?.backend ?? null);
  }

  /** The call's first lease, parking if need be; null when it was refused (already answered). */
  private async firstLease(state: CallState): Promise<Lease | null> {
    try {
      return await this.deps.scheduler.acquire(state.ticket);
    } catch (err) {
      if (!(err instanceof SchedulerRejection)) throw err;
      if (err.reason === 'aborted') {
        this.report(state, { status: 499, reason: 'client_closed_while_parked' });
        return null;
      }
      this.refuse(state, rejectionError(err, state.alias, this.deps.refusals?.explain(state.call, err)), null);
      return null;
    }
  }

  /**
   * After a failed attempt: a free candidate not tried yet, else park on the busy ones for the
   * time the call has left; null when there is none or the wait ran out.
   */
  private async nextLease(state: CallState, tried: ReadonlySet<string>): Promise<Lease | null> {
    const { scheduler } = this.deps;
    const untried = () => state.candidates().filter((c) => !tried.has(c.backend));
    const candidates = untried();
    const now = scheduler.tryAcquireNow(candidates, tried, state.ticket);
    if (now) return now;
    const parkMs = state.parkDeadline - this.deps.now();
    if (parkMs <= 0 || scheduler.order(candidates).length === 0) return null;
    state.upstream.renew();
    const refresh = state.call.refreshCandidates && untried;
    state.ticket = failoverTicket(state.ticket, candidates, parkMs, state.upstream.signal, refresh, tried);
    try {
      return await scheduler.acquire(state.ticket);
    } catch (err) {
      if (err instanceof SchedulerRejection) return null;
      throw err;
    }
  }

  /** One try on the leased backend: forwards, writes what the client gets, says how it ended. */
  private async attempt(state: CallState, lease: Lease): Promise<AttemptEnd> {
    const { deps } = this;
    const { call, cfg } = state;
    const backend = deps.registry.get(lease.backend);
    if (!backend) return { health: 'none', error: { kind: 'error', detail: 'backend was removed' }, failover: true };
    const deadline = state.upstream;
    const attemptStartedAt = deps.now();
    try {
      if (state.sse)
        deadline.arm(
          cfg.first_byte_timeout_s * 1000,
          `no first byte within ${cfg.first_byte_timeout_s} s (first_byte_timeout_s)`,
        );
      else
        deadline.arm(cfg.request_timeout_s * 1000, `no answer within ${cfg.request_timeout_s} s (request_timeout_s)`);
      const wire = call.surface.attempt(backend.spec);
      const request = wire.upstreamRequest(lease.model, backend.modelsById.get(lease.model)?.context_length);
      const dispatch = deps.onDispatch?.(backend.name, lease.model);
      const result = await forward({
        dispatcher: deps.dispatcherFor(backend),
        path: backend.basePath + request.path,
        headers: wire.upstreamHeaders(call.req.headers, Buffer.byteLength(request.body)),
        body: request.body,
        signal: deadline.signal,
        stream: state.sse !== undefined,
        raw: call.surface.raw,
        // a body read whole (JSON, an error's text): the first-byte deadline ends with its first byte
        onFirstByte: () => deadline.clear(),
        bodyIdleMs: bodyDeadlines(cfg).idleTimeoutMs,
      });
      const served = { backend: backend.name, model: lease.model, reasoning: request.reasoning, route: lease.route };
      switch (result.kind) {
        case 'transport-error':
          return this.noAnswer(state, result.error);
        case 'bad-answer':
          return { health: 'failure', error: result.error, failover: true, badAnswer: true };
        case 'upstream-status': {
          const text = redactBackendText(result.text, backend.spec);
          const verdict = classifyStatus(result.status, text);
          const answer = {
            status: result.status,
            headers: result.headers,
            text,
            clientBody: wire.upstreamErrorBody(result.status, text),
          };
          if (verdict.action === 'failover')
            return {
              health: verdict.health,
              error: verdict.error,
              failover: true,
              answer: verdict.relayable ? answer : undefined,
            };
          this.sendUpstreamAnswer(state, backend.name, answer);
          return {
            health: 'ok',
            outcome: {
              backend: served.backend,
              model: served.model,
              reasoning: served.reasoning,
              status: answer.status,
              reason: 'upstream_error',
              responseBody: cfg.capture_bodies ? answer.text : undefined,
            },
          };
        }
        case 'ok-json': {
          const { body, usage, status = 200 } = wire.answer(result.raw, result.json);
          this.sendJson(state, backend.name, status, result.headers, body, served.reasoning);
          const reason = status === 200 ? null : 'untranslatable_answer';
          const seconds = (deps.now() - attemptStartedAt) / 1000;
          const speed = jsonSpeedSample(status, usage, result.json, served.model, seconds, dispatch);
          return {
            health: 'ok',
            speed,
            outcome: {
              backend: served.backend,
              model: served.model,
              reasoning: served.reasoning,
              status,
              reason,
              usage,
              responseBody: cfg.capture_bodies ? result.raw : undefined,
            },
          };
        }
        case 'ok-stream':
        case 'ok-raw': {
          const body = {
            cfg,
            requestId: String(call.req.id),
            startedAt: state.base.startedAt,
            attemptStartedAt,
            dispatch,
            served,
            response: result.response,
            onFirstByte: () => deadline.clear(),
            noAnswer: (error: AttemptFailure['error']) => this.noAnswer(state, error),
            now: deps.now,
          };
          if (result.kind === 'ok-raw') return await pipeRawBody(body, call.reply);
          return await relaySse(body, state.sse!, wire, (error) => call.surface.errorEvent(error));
        }
      }
    } finally {
      deadline.clear();
    }
  }

  /** The backend gave no answer (or none reached the client): fail over; its fault unless the client left. */
  private noAnswer(state: CallState, error: AttemptFailure['error']): AttemptEnd {
    const health = state.upstream.clientGone ? 'none' : error.kind === 'unreachable' ? 'unreachable' : 'failure';
    return { health, error, failover: true };
  }

  /**
   * The one place an attempt ends, once: its slot comes back, its backend's health and speed
   * learn from it, and an attempt that answered the client reports the call's outcome.
   */
  private settle(state: CallState, lease: Lease, end: AttemptEnd): void {
    lease.release();
    const backend = lease.backend;
    const { registry, scheduler } = this.deps;
    const error = end.error ?? { kind: 'error' as const, detail: 'attempt failed' };
    switch (end.health) {
      case 'ok':
        registry.recordSuccess(backend);
        break;
      case 'failure':
        if (registry.recordFailure(backend, this.deps.config().failure_threshold)) this.deps.probe(backend);
        break;
      case 'unreachable':
        registry.recordFailure(backend, this.deps.config().failure_threshold);
        this.deps.probe(backend);
        break;
      case 'auth':
        registry.markDown(backend, { ...error, kind: 'auth' });
        break;
      case 'none':
        break;
    }
    if (end.speed) scheduler.recordSpeed(backend, end.speed);
    if (state.conversation !== undefined) {
      learnAffinity(this.deps.affinity!, {
        key: state.conversation,
        backend,
        end,
        clientGone: state.upstream.clientGone,
        now: this.deps.now(),
        ttlMs: state.cfg.affinity_ttl_s * 1000,
      });
    }
    if (end.outcome) this.report(state, end.outcome);
  }

  /** A refusal: as an error event once the stream head is out, else thrown for the route. */
  private refuse(state: CallState, err: GatewayError, backend: string | null): void {
    if (!state.sse?.headWritten) throw err;
    state.sse.endWithEvent(state.call.surface.errorEvent({ kind: 'refused', error: err }));
    this.report(state, { backend, status: err.status, reason: err.reason });
  }

  private sendUpstreamAnswer(state: CallState, backend: string, answer: UpstreamAnswer): void {
    if (state.sse?.headWritten) {
      state.sse.endWithEvent(
        state.call.surface.errorEvent({ kind: 'upstream', status: answer.status, text: answer.text }),
      );
      return;
    }
    this.sendJson(state, backend, answer.status, answer.headers, answer.clientBody);
  }

  /** A JSON answer; as one last event when a keep-alive already opened the client's stream. */
  private sendJson(
    state: CallState,
    backend: string,
    status: number,
    headers: UpstreamHeaders,
    body: Buffer | string,
    reasoning?: string,
  ): void {
    if (state.sse?.headWritten) {
      state.sse.endWithEvent(formatSseData(Buffer.isBuffer(body) ? body.toString('utf8') : body));
      return;
    }
    state.call.reply
      .code(status)
      .headers(withGatewayHeaders(clientResponseHeaders(headers), backend, state.call.req.id, reasoning, state.route))
      .send(body);
  }

  private report(state: CallState, fields: OutcomeFields): void {
    // written out, not spread: spreading objects of varying shapes is slow on this path
    const base = state.base;
    (state.call.report ?? this.deps.onOutcome)({
      requestId: base.requestId,
      endpoint: base.endpoint,
      source: base.source,
      userId: base.userId,
      requestedModel: base.requestedModel,
      startedAt: base.startedAt,
      durationMs: this.deps.now() - base.startedAt,
      backend: fields.backend ?? null,
      model: fields.model ?? null,
      status: fields.status,
      reason: fields.reason,
      ttftMs: fields.ttftMs ?? null,
      usage: fields.usage,
      usageEstimated: fields.usageEstimated,
      reasoning: fields.reasoning,
      requestBody: base.requestBody,
      responseBody: fields.responseBody,
      route: fields.route ?? state.route,
    });
  }

  private keepaliveText(state: CallState): string {
    // its place in line, how long it has waited, and its predicted wait when the scheduler has one
    const where = this.deps.scheduler.queuePosition(state.ticket);
    if (where) {
      const waited = `queued position=${where.position} waited_s=${Math.round(where.waitedMs / 1000)}`;
      const eta = where.etaS;
      if (eta === undefined || !Number.isFinite(eta)) return waited;
      // whole seconds, but a wait under 10 s keeps its tenth (0.4 s is not "0")
      return `${waited} eta_s=${eta < 10 ? eta.toFixed(1) : Math.round(eta)}`;
    }
    return state.sse?.dataWritten ? 'keepalive' : 'waiting for first token';
  }
}
