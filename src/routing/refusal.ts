/**
 * Why no candidate could serve a call: one reason per candidate backend, read off the state the
 * registry keeps (enabled, draining, healthy, last error with its status and since when) and
 * the scheduler's verdict. Pure: computed only when a call is refused, never on the way of an
 * answered one. `refusal-text.ts` turns the reasons into the error's sentence.
 */
import type { AheadCount, RejectReason } from '../scheduler/types.ts';

/** Stable codes of `error.candidates[].reason` (README, docs/decisions.md). */
export type CandidateReasonCode =
  | 'disabled'
  | 'draining'
  | 'credential_refused'
  | 'keys_muted'
  | 'unreachable'
  | 'loading'
  | 'circuit_open'
  | 'unchecked'
  | 'busy'
  | 'park_timeout';

/** One candidate's reason, as `error.candidates[]` carries it (`backend` only for callers who may see names). */
export interface CandidateReason {
  backend?: string;
  reason: CandidateReasonCode;
  /** The HTTP status the backend answered with (credential_refused, loading, circuit_open). */
  status?: number;
  /** Seconds since the backend has been out for this reason (or draining). */
  since_s?: number;
  /**
   * circuit_open: when the gateway's next regular health check of it is due, at the latest; keys_muted: when its
   * first key comes back (ISO 8601, UTC).
   */
  until?: string;
  /** park_timeout: calls still queued ahead of this one on that backend when the wait ended. */
  ahead?: number;
  /** With `ahead`: counting stopped at its limit (100 older calls looked at), so `ahead` is a lower bound. */
  ahead_at_least?: true;
}

/** What the reasons are read from: a backend as the registry knows it (BackendState satisfies it). */
export interface BackendOutState {
  readonly name: string;
  readonly spec: { readonly enabled: boolean };
  readonly healthy: boolean;
  /** Set once a health check (or the model cache) has spoken. */
  readonly known: boolean;
  readonly draining?: boolean;
  readonly drainingSince?: number;
  readonly error?: { readonly kind: string; readonly status?: number; readonly detail: string; readonly since: number };
  /** While down after a failed health check: when the next one is due (unix ms). */
  readonly nextCheckAt?: number;
  /** Rate-limited or every pooled key muted, until then (the status that muted it). */
  readonly resting?: { readonly until: number; readonly reason: number };
}

export interface RefusalFacts {
  /** The candidates' backends, each once, in candidate order; unknown names are skipped. */
  backends: readonly (BackendOutState | undefined)[];
  /** The scheduler's verdict; undefined when the call never reached it (every candidate disabled). */
  rejection?: { reason: RejectReason; ahead?: AheadCount };
  now: number;
}

/** llama.cpp's answer while its model loads (kept in the probe's error detail). */
const LOADING = /loading model/i;

/** One reason per known candidate backend, in candidate order. */
export function candidateReasons(facts: RefusalFacts): CandidateReason[] {
  const out: CandidateReason[] = [];
  const seen = new Set<string>();
  for (const backend of facts.backends) {
    if (!backend || seen.has(backend.name)) continue;
    seen.add(backend.name);
    out.push({ backend: backend.name, ...reasonOf(backend, facts) });
  }
  return out;
}

/**
 * Why a backend takes no new work right now (disabled, draining, or down and why), for /health
 * and the console; undefined while it is in service.
 */
export function outReason(b: BackendOutState, now: number): Omit<CandidateReason, 'backend'> | undefined {
  if (b.spec.enabled && !b.draining && b.healthy && !b.resting) return undefined;
  return reasonOf(b, { backends: [], now });
}

function reasonOf(b: BackendOutState, facts: RefusalFacts): Omit<CandidateReason, 'backend'> {
  const sinceS = (at: number | undefined) => (at === undefined ? undefined : secondsBetween(at, facts.now));
  if (!b.spec.enabled) return { reason: 'disabled' };
  if (b.draining) return withDefined({ reason: 'draining', since_s: sinceS(b.drainingSince) });
  if (!b.healthy) {
    const error = b.error;
    if (!b.known || !error) return { reason: 'unchecked' };
    const since_s = sinceS(error.since);
    if (error.kind === 'auth') return withDefined({ reason: 'credential_refused', status: error.status, since_s });
    if (error.kind === 'unreachable' || error.kind === 'timeout') {
      return withDefined({ reason: 'unreachable', since_s });
    }
    if (error.status === 503 && LOADING.test(error.detail)) {
      return withDefined({ reason: 'loading', status: 503, since_s });
    }
    const until = b.nextCheckAt === undefined ? undefined : new Date(Math.max(facts.now, b.nextCheckAt)).toISOString();
    return withDefined({ reason: 'circuit_open', status: error.status, since_s, until });
  }
  if (b.resting && b.resting.until > facts.now) {
    const until = new Date(b.resting.until).toISOString();
    return { reason: 'keys_muted', status: b.resting.reason, until };
  }
  if (facts.rejection?.reason === 'park_timeout') {
    const ahead = facts.rejection.ahead;
    const count = { reason: 'park_timeout' as const, ahead: ahead?.byBackend.get(b.name) ?? 0 };
    return ahead?.atLeast ? { ...count, ahead_at_least: true } : count;
  }
  return { reason: 'busy' };
}

function secondsBetween(from: number, to: number): number {
  return Math.max(0, Math.round((to - from) / 1000));
}

/** The object without its undefined fields (so JSON and deepEqual see only what is known). */
function withDefined<T extends object>(value: T): T {
  for (const key of Object.keys(value) as (keyof T)[]) if (value[key] === undefined) delete value[key];
  return value;
}
