/**
 * An attempt's 200 body relayed to its client as it arrives, under the two deadlines that
 * own the time after the first byte: the backend's silence (`stream_idle_timeout_s`: 502, the
 * backend blamed) and the client's back-pressure (`client_stall_timeout_s`: 499
 * `client_stalled`, the backend not blamed). The backend's clock stops while the gateway waits
 * for its client (idle-watch.ts), so each stall has one owner. What the relay came to is
 * turned into the attempt's end: outcome, health, speed.
 */
import type { FastifyReply } from 'fastify';
import type { Dispatcher } from 'undici';
import type { GatewayConfig } from '../config/types.ts';
import type { AttemptEnd, OutcomeFields, Served } from './attempt-end.ts';
import { gatewayHeaders, withGatewayHeaders } from './gateway-headers.ts';
import { rawHead, relayRaw } from './raw-relay.ts';
import type { AttemptFailure } from './refusals.ts';
import { relayStream } from './relay.ts';
import type { SseResponse } from '../wire/sse-response.ts';
import type { DispatchFacts } from '../backends/dispatch-facts.ts';
import { speedSample } from './speed-sample.ts';
import type { AttemptSurface, StreamError } from './surface.ts';

/** What the call inspector keeps of a streamed answer (the call log caps it again). */
const CAPTURE_BYTES = 256 * 1024;

/** One attempt's body, and what the call around it offers the relay. */
export interface BodyRelayCall {
  cfg: GatewayConfig;
  requestId: string;
  startedAt: number;
  /** When this attempt started (its slot was taken just before), for the speed sample. */
  attemptStartedAt: number;
  /** What the gateway knew of the box as it sent the attempt (a load, a busy box), for the speed sample. */
  dispatch?: DispatchFacts;
  served: Served;
  response: Dispatcher.ResponseData;
  /** The first body byte arrived: the attempt's first-byte deadline is met. */
  onFirstByte: () => void;
  /** Nothing reached the client: the attempt fails over (the proxy decides the blame). */
  noAnswer: (error: AttemptFailure['error']) => AttemptEnd;
  now: () => number;
}

/** The relays' deadlines, from the configuration in force when the attempt started. */
export function bodyDeadlines(cfg: GatewayConfig): { idleTimeoutMs: number; clientStallMs: number } {
  return { idleTimeoutMs: cfg.stream_idle_timeout_s * 1000, clientStallMs: cfg.client_stall_timeout_s * 1000 };
}

/** An SSE answer relayed event by event to the client's stream `sse`. */
export async function relaySse(
  call: BodyRelayCall,
  sse: SseResponse,
  wire: AttemptSurface,
  errorEvent: (error: StreamError) => string,
): Promise<AttemptEnd> {
  const { served, cfg } = call;
  const result = await relayStream({
    upstream: call.response,
    sse,
    headers: gatewayHeaders(served.backend, call.requestId, served.reasoning, served.route),
    translator: wire.streamTranslator(call.now),
    errorEvent,
    onFirstByte: call.onFirstByte,
    ...bodyDeadlines(cfg),
    captureBytes: cfg.capture_bodies ? CAPTURE_BYTES : 0,
    framing: wire.upstreamFraming,
  });
  if (result.kind === 'failover') return call.noAnswer(result.error);
  const { summary } = result;
  const outcome: OutcomeFields = {
    backend: served.backend,
    model: served.model,
    reasoning: served.reasoning,
    status: statusOf(result.kind),
    reason: result.kind === 'complete' ? null : result.kind,
    ttftMs: summary.firstTokenAt !== undefined ? summary.firstTokenAt - call.startedAt : null,
    usage: summary.usage,
    usageEstimated: summary.usageSource === 'estimated',
    responseBody: result.captured,
  };
  if (result.kind === 'upstream_failed') return { health: 'failure', error: result.error, outcome };
  if (result.kind === 'client_stalled') return { health: 'none', outcome };
  // every complete stream teaches speed; decode is timed from its first token, never a park
  const speed =
    result.kind === 'complete' && summary.firstTokenAt !== undefined
      ? speedSample({
          status: 200,
          usage: summary.usage,
          timings: summary.timings,
          model: served.model,
          seconds: (call.now() - call.attemptStartedAt) / 1000,
          firstTokenSeconds: (summary.firstTokenAt - call.attemptStartedAt) / 1000,
          dispatch: call.dispatch,
        })
      : undefined;
  return { health: 'ok', speed, outcome };
}

/** A 200 of bytes (audio, a text transcript) piped to the client; failover only while none reached it. */
export async function pipeRawBody(call: BodyRelayCall, reply: FastifyReply): Promise<AttemptEnd> {
  const { served, cfg } = call;
  const result = await relayRaw({
    upstream: call.response,
    reply,
    headers: withGatewayHeaders(
      rawHead(call.response.headers),
      served.backend,
      call.requestId,
      served.reasoning,
      served.route,
    ),
    onFirstByte: call.onFirstByte,
    ...bodyDeadlines(cfg),
    captureBytes: cfg.capture_bodies ? CAPTURE_BYTES : 0,
    now: call.now,
  });
  if (result.kind === 'failover') return call.noAnswer(result.error);
  const outcome: OutcomeFields = {
    backend: served.backend,
    model: served.model,
    reasoning: served.reasoning,
    status: statusOf(result.kind),
    reason: result.kind === 'complete' ? null : result.kind,
    ttftMs: result.firstByteAt !== undefined ? result.firstByteAt - call.startedAt : null,
    responseBody: result.captured,
  };
  if (result.kind === 'upstream_failed') return { health: 'failure', error: result.error, outcome };
  return { health: result.kind === 'client_stalled' ? 'none' : 'ok', outcome };
}

function statusOf(kind: 'complete' | 'client_closed' | 'client_stalled' | 'upstream_failed'): number {
  return kind === 'complete' ? 200 : kind === 'upstream_failed' ? 502 : 499;
}
