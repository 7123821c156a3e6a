/**
 * One attempt of a call on its leased backend: the deadline for its first byte (or its whole
 * answer), the request in the surface's wire format for that backend, and what the answer means
 * (relayed to the client, or a failover with the blame placed).
 */
import type { Lease } from '../scheduler/index.ts';
import { redactBackendText } from '../backends/secret-scrub.ts';
import type { AttemptEnd } from './attempt-end.ts';
import { bodyDeadlines, pipeRawBody, relaySse } from './body-relays.ts';
import { sendJson, sendUpstreamAnswer } from './call-answers.ts';
import { classifyStatus } from './classify.ts';
import { forward } from './forward.ts';
import type { CallState, ProxyDeps } from './proxy-call.ts';
import type { AttemptFailure } from './refusals.ts';
import { jsonSpeedSample } from './speed-sample.ts';
import { withKey } from '../backends/credentials.ts';
import { keyRefused, keyServed, keysExhausted, refusesKey } from './key-turn.ts';

/** One try on the leased backend: forwards, writes what the client gets, says how it ended. */
export async function runAttempt(deps: ProxyDeps, state: CallState, lease: Lease): Promise<AttemptEnd> {
  const { call, cfg } = state;
  const backend = deps.registry.get(lease.backend);
  if (!backend) return { health: 'none', error: { kind: 'error', detail: 'backend was removed' }, failover: true };
  const deadline = state.upstream;
  const attemptStartedAt = deps.now();
  // a pooled backend: this attempt's key (every key muted since the lease: leave it for another)
  const key = backend.keys?.next(attemptStartedAt);
  if (backend.keys && key === undefined) return keysExhausted(deps.registry, backend, attemptStartedAt);
  try {
    if (state.sse)
      deadline.arm(
        cfg.first_byte_timeout_s * 1000,
        `no first byte within ${cfg.first_byte_timeout_s} s (first_byte_timeout_s)`,
      );
    else deadline.arm(cfg.request_timeout_s * 1000, `no answer within ${cfg.request_timeout_s} s (request_timeout_s)`);
    const wire = call.surface.attempt(key === undefined ? backend.spec : withKey(backend.spec, key));
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
    if ((key !== undefined || backend.restStrikes) && result.kind.startsWith('ok-')) keyServed(backend, key);
    switch (result.kind) {
      case 'transport-error':
        return noAnswer(state, result.error);
      case 'bad-answer':
        return { health: 'failure', error: result.error, failover: true, badAnswer: true };
      case 'upstream-status': {
        const text = redactBackendText(result.text, backend.spec);
        const verdict = classifyStatus(result.status, text);
        const turn = refusesKey(result.status, backend, key)
          ? keyRefused(deps.registry, backend, key, result.status, result.headers, deps.now())
          : undefined;
        // another key of the same backend comes first; the refusal never reaches the client
        if (turn?.rotate && verdict.action === 'failover')
          return { health: 'none', error: verdict.error, failover: true, rotateKey: true };
        const answer = {
          status: result.status,
          headers: result.headers,
          text,
          clientBody: wire.upstreamErrorBody(result.status, text),
        };
        if (verdict.action === 'failover')
          return {
            health: turn?.health ?? verdict.health,
            error: verdict.error,
            failover: true,
            answer: verdict.relayable ? answer : undefined,
          };
        sendUpstreamAnswer(state, backend.name, answer);
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
        sendJson(state, backend.name, status, result.headers, body, served.reasoning);
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
          requestId: state.base.requestId,
          startedAt: state.base.startedAt,
          attemptStartedAt,
          dispatch,
          served,
          response: result.response,
          onFirstByte: () => deadline.clear(),
          noAnswer: (error: AttemptFailure['error']) => noAnswer(state, error),
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
export function noAnswer(state: CallState, error: AttemptFailure['error']): AttemptEnd {
  const health = state.upstream.clientGone ? 'none' : error.kind === 'unreachable' ? 'unreachable' : 'failure';
  return { health, error, failover: true };
}
