/**
 * One call through the proxy: what a route hands it (`ProxyCall`), what the proxy is built with
 * (`ProxyDeps`), and the state the call carries across its attempts (`CallState`).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Dispatcher } from 'undici';
import type { BackendRegistry, BackendState } from '../backends/registry.ts';
import type { GatewayConfig } from '../config/types.ts';
import { parkSeconds } from '../routing/aliases.ts';
import type { ConversationAffinity } from '../routing/conversation-affinity.ts';
import type { Resolution } from '../routing/resolve.ts';
import type { Candidate, Scheduler, Ticket, TicketUser } from '../scheduler/index.ts';
import { spillAfterMs } from './call-ticket.ts';
import { UpstreamSignal } from './deadline.ts';
import type { CallOutcome } from '../stats/call-outcome.ts';
import type { RefusalDeps } from './refusals.ts';
import type { DispatchFacts } from '../backends/dispatch-facts.ts';
import type { CallSurface } from './surface.ts';
import type { WakeHook } from '../backends/wake/waker.ts';
import { SseResponse } from '../wire/sse-response.ts';

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
  /** Wake-on-LAN of sleeping boxes (wake-wait.ts); absent = a call for down boxes is refused. */
  wake?: WakeHook;
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
export type OutcomeBase = Pick<
  CallOutcome,
  'requestId' | 'endpoint' | 'requestedModel' | 'startedAt' | 'source' | 'userId' | 'requestBody'
>;

/** One call on its way through the gateway, across all of its attempts. */
export interface CallState {
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
  /** The boxes with `wake` it is parked for while they boot (wake-wait.ts). */
  waking?: readonly string[];
}

/** The call's state as it starts: its deadlines, its stream, its first ticket, its conversation. */
export function beginCall(deps: ProxyDeps, call: ProxyCall): CallState {
  const cfg = deps.config();
  const startedAt = deps.now();
  const alias = call.resolution.alias ?? call.resolution.requested;
  const requestId = String(call.req.id);
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
    sse: surface.stream
      ? new SseResponse(call.reply, { 'x-request-id': requestId }, surface.streamContentType)
      : undefined,
    base: {
      requestId,
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
