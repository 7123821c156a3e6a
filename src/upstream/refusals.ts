/** The errors a call gets when the scheduler or the fleet cannot serve it. */
import type { FastifyRequest } from 'fastify';
import type { BackendError } from '../backends/types.ts';
import { GatewayError } from '../errors.ts';
import type { RefusalExplainer, RefusalExplanation } from '../routing/refusal-explainer.ts';
import type { SchedulerRejection } from '../scheduler/index.ts';
import type { HealthEffect } from './classify.ts';

/** Why the last candidate tried did not answer. */
export interface AttemptFailure {
  backend: string;
  error: Omit<BackendError, 'since'>;
  health: HealthEffect;
  /** The backend's own answer (a 5xx, 429 or 408), relayed as it was if no one does better. */
  answer?: UpstreamAnswer;
  /** The backend answered but its body could not be read (not JSON, or it stopped halfway). */
  badAnswer?: boolean;
}

/** A backend's non-200 answer: its text (scrubbed of the backend's key) and the client's body for it. */
export interface UpstreamAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** `text` in the client's wire format (the surface's error shape). */
  clientBody: string;
}

/** The proxy's optional dependency: says why each candidate of a refused call is out (routing/refusal-explainer.ts). */
export interface RefusalDeps {
  refusals?: RefusalExplainer;
}

/** The scheduler's refusal as the client gets it; `explained`: each candidate's reason, worded for this caller. */
export function rejectionError(err: SchedulerRejection, alias: string, explained?: RefusalExplanation): GatewayError {
  if (err.reason === 'paid_budget') {
    return new GatewayError({
      status: 429,
      code: 'paid_budget_reached',
      type: 'insufficient_quota',
      reason: err.reason,
      message: `Only paid backends serve \`${alias}\`, and the paid budget allows no more calls to them now.`,
    });
  }
  if (err.reason === 'cluster_unavailable') {
    return new GatewayError({
      status: 503,
      code: err.reason,
      type: 'api_error',
      reason: err.reason,
      message: 'The cluster store (Redis) is unreachable, so this gateway takes no new calls; retry shortly.',
      retryAfter: 2,
    });
  }
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
    message: explained?.message || (messages[err.reason] ?? err.message),
    retryAfter: retryAfterSeconds(err.retryAfter ?? restEndsIn(explained)),
    reason: err.reason,
    candidates: explained?.candidates,
  });
}

/** Every candidate rests (its keys rate-limited or refused): seconds until the first comes back. */
function restEndsIn(explained: RefusalExplanation | undefined): number | undefined {
  const reasons = explained?.candidates ?? [];
  if (reasons.length === 0 || reasons.some((r) => r.reason !== 'keys_muted' || r.until === undefined)) return undefined;
  return Math.max(0, (Math.min(...reasons.map((r) => Date.parse(r.until!))) - Date.now()) / 1000);
}

/**
 * Retry-After as HTTP has it, whole seconds (at least 1): a park timeout's is the predicted
 * wait (`eta_s`), which is rarely whole.
 */
export function retryAfterSeconds(seconds: number | undefined): number | undefined {
  return seconds === undefined || !Number.isFinite(seconds) ? undefined : Math.max(1, Math.ceil(seconds));
}

/**
 * Every candidate failed (or the rest stayed busy): what the last failure tells the client.
 * `names`: whether the caller may see backend names (routing/refusal-explainer.ts). A caller
 * who may not gets the reason in the gateway's words only: the upstream's own text
 * (`ECONNREFUSED 127.0.0.1:8001`, an HTML error page) says where the backend is.
 */
export function exhaustedError(failure: AttemptFailure | undefined, names = true): GatewayError {
  const error = failure?.error;
  const backend = failure && names ? `The backend \`${failure.backend}\`` : 'The backend';
  const detail = (shown: string | undefined, hidden: string) => (names && shown ? shown : hidden);
  if (failure?.health === 'auth') {
    return new GatewayError({
      status: 502,
      code: 'upstream_auth_failed',
      reason: 'upstream_auth',
      message:
        `${backend} refused the gateway's own credential for it (HTTP ${error?.status ?? '401'}); ` +
        "your key is fine. The gateway's operator must fix that backend's api_key (or api_keys).",
    });
  }
  if (error?.kind === 'timeout') {
    return new GatewayError({
      status: 504,
      code: 'upstream_timeout',
      type: 'timeout_error',
      message: `The backend did not answer in time (${detail(error.detail, ownDeadline(error.detail))}).`,
    });
  }
  if (failure?.badAnswer || error?.status === 200) {
    const unread = `answered ${error?.status ?? 200} with a body the gateway could not read`;
    return new GatewayError({
      status: 502,
      code: 'upstream_bad_response',
      message: `${backend} ${detail(error?.detail, unread)}`,
    });
  }
  if (error?.status === 503 || error?.status === 502) {
    return new GatewayError({
      status: 503,
      code: 'backend_unavailable',
      retryAfter: 2,
      message: `No backend could take the call: ${detail(error.detail, `the backend answered HTTP ${error.status}`)}`,
    });
  }
  const unreached = error?.kind === 'unreachable' ? 'the connection to the backend failed' : 'the attempt failed';
  return new GatewayError({
    status: 502,
    code: 'upstream_unreachable',
    message: `No backend could be reached: ${detail(error?.detail, names ? 'unknown error' : unreached)}`,
  });
}

/** The gateway's own deadline in a timeout's detail (`no first byte within 30 s (first_byte_timeout_s)`). */
function ownDeadline(detail: string): string {
  return /no (?:first byte|complete answer|answer) within [\d.]+ s \([a-z_]+\)/.exec(detail)?.[0] ?? 'timed out';
}

/**
 * The last candidate's own answer (a 5xx, 429 or 408, relayed as it was) for a caller who may
 * not see names: its status, headers and wording stay, but URLs and addresses in its text are
 * replaced. A backend that is itself a proxy (llama-swap, LiteLLM) says where it forwards to:
 * `dial tcp 127.0.0.1:5801: connect: connection refused`.
 */
export function answerForCaller(answer: UpstreamAnswer, deps: RefusalDeps, req: FastifyRequest): UpstreamAnswer {
  if (deps.refusals?.seesNames(req) ?? true) return answer;
  const text = withoutAddresses(answer.text);
  return text === answer.text ? answer : { ...answer, text, clientBody: withoutAddresses(answer.clientBody) };
}

const HIDDEN = '[upstream address]';
/** `http://…`, also JSON-escaped (`http:\/\/…`), up to a quote, a space, a bracket or another escape. */
const URLS = /\b[a-z][a-z0-9+.-]*:(?:\\?\/){2}(?:\\\/|[^\s"'<>\\])+/gi;
const HOST_PORTS =
  /(?:\[[0-9a-f:.]+\]|\b(?:\d{1,3}(?:\.\d{1,3}){3}|localhost|(?:[a-z0-9-]+\.)+[a-z][a-z0-9-]*)):\d{1,5}\b/gi;
const IPV4 = /\b\d{1,3}(?:\.\d{1,3}){3}\b/g;

export function withoutAddresses(text: string): string {
  return text.replace(URLS, HIDDEN).replace(HOST_PORTS, HIDDEN).replace(IPV4, HIDDEN);
}
