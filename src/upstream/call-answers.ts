/**
 * What the client gets when the proxy answers it itself (a refusal, a backend's error passed on,
 * a JSON body), and the call's outcome reported once it has been answered. Once a keep-alive
 * has opened the client's stream, each answer goes as one last event instead.
 */
import type { GatewayError } from '../errors.ts';
import type { OutcomeFields } from './attempt-end.ts';
import type { UpstreamHeaders } from './forward.ts';
import { withGatewayHeaders } from './gateway-headers.ts';
import { clientResponseHeaders } from './headers.ts';
import type { CallState, ProxyDeps } from './proxy-call.ts';
import type { UpstreamAnswer } from './refusals.ts';
import { formatSseData } from '../wire/sse.ts';

/** What reporting an outcome needs of the proxy's deps. */
export type OutcomeDeps = Pick<ProxyDeps, 'onOutcome' | 'now'>;

/** A refusal: as an error event once the stream head is out, else thrown for the route. */
export function refuse(deps: OutcomeDeps, state: CallState, err: GatewayError, backend: string | null): void {
  if (!state.sse?.headWritten) throw err;
  state.sse.endWithEvent(state.call.surface.errorEvent({ kind: 'refused', error: err }));
  reportOutcome(deps, state, { backend, status: err.status, reason: err.reason });
}

export function sendUpstreamAnswer(state: CallState, backend: string, answer: UpstreamAnswer): void {
  if (state.sse?.headWritten) {
    state.sse.endWithEvent(
      state.call.surface.errorEvent({ kind: 'upstream', status: answer.status, text: answer.text }),
    );
    return;
  }
  sendJson(state, backend, answer.status, answer.headers, answer.clientBody);
}

/** A JSON answer; as one last event when a keep-alive already opened the client's stream. */
export function sendJson(
  state: CallState,
  backend: string,
  status: number,
  headers: UpstreamHeaders,
  body: Buffer | string,
  reasoning?: string,
): void {
  if (state.sse?.headWritten) {
    const json = Buffer.isBuffer(body) ? body.toString('utf8') : body;
    state.sse.endWithEvent(state.call.surface.jsonStreamFrame?.(json) ?? formatSseData(json));
    return;
  }
  state.call.reply
    .code(status)
    .headers(withGatewayHeaders(clientResponseHeaders(headers), backend, state.call.req.id, reasoning, state.route))
    .send(body);
}

/** The call's outcome, to the route's once-only settle when it has one, else to `onOutcome`. */
export function reportOutcome(deps: OutcomeDeps, state: CallState, fields: OutcomeFields): void {
  // written out, not spread: spreading objects of varying shapes is slow on this path
  const base = state.base;
  (state.call.report ?? deps.onOutcome)({
    requestId: base.requestId,
    endpoint: base.endpoint,
    source: base.source,
    userId: base.userId,
    requestedModel: base.requestedModel,
    startedAt: base.startedAt,
    durationMs: deps.now() - base.startedAt,
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
