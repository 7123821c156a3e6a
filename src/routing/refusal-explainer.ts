/**
 * Explains a refused call: gathers, only when the scheduler refuses, what each candidate's
 * backend is doing (registry state, the disabled candidates routing left out, the queue ahead)
 * and words it for this caller. Admins see backend names; other callers see them only when
 * `expose_backend_names` says so (see `seesBackendNames`).
 */
import type { FastifyRequest } from 'fastify';
import type { Caller } from '../auth/authenticator.ts';
import { filterAllowed } from '../auth/allow.ts';
import type { BackendRegistry } from '../backends/registry.ts';
import type { GatewayConfig } from '../config/types.ts';
import type { Candidate, RejectReason } from '../scheduler/types.ts';
import { parkSeconds } from './aliases.ts';
import { candidateReasons, type CandidateReason } from './refusal.ts';
import { refusalText, visibleReasons } from './refusal-text.ts';
import type { ModelCatalog } from './catalog.ts';

/** What an explanation reads, once per refusal (the Gateway has all of it). */
export interface RefusalSources {
  readonly registry: BackendRegistry;
  readonly catalog: Pick<ModelCatalog, 'resolveDisabled'>;
  /** Who is calling (throws for a key that no longer passes). */
  readonly callers: { identify(req: FastifyRequest): { caller: Caller } };
  readonly users: { count(): number };
  config(): GatewayConfig;
}

/** The refused call, as the proxy knows it. */
export interface RefusedCall {
  req: FastifyRequest;
  /** The call's candidates as routed (enabled backends), and re-resolved against the fleet now. */
  resolution: { requested: string; alias?: string; candidates: readonly Candidate[] };
  refreshCandidates?: () => readonly Candidate[];
  /** The call's own park time in seconds, when it overrides the alias's. */
  parkSeconds?: number;
  surface: { endpoint: string };
}

/** The scheduler's verdict, as much as the wording needs. */
export interface RefusalVerdict {
  reason: RejectReason;
  aheadByBackend?: ReadonlyMap<string, number>;
}

export interface RefusalExplanation {
  /** One sentence for one candidate, a short list for several. */
  message: string;
  /** `error.candidates`: one reason per candidate, with `backend` only if the caller may see names. */
  candidates: CandidateReason[];
}

export type RefusalExplainer = (call: RefusedCall, verdict: RefusalVerdict) => RefusalExplanation | undefined;

/** The explainer the proxy calls when the scheduler refuses a call. */
export function refusalExplainer(sources: RefusalSources): RefusalExplainer {
  return (call, verdict) => {
    const candidates = call.refreshCandidates?.() ?? call.resolution.candidates;
    const cfg = sources.config();
    const caller = callerOf(sources, call.req);
    const requested = call.resolution.requested;
    const surface = call.surface.endpoint === 'messages' ? 'messages' : 'openai';
    const disabled = sources.catalog.resolveDisabled(requested, surface);
    const left = disabled && caller ? filterAllowed(caller.allow, disabled) : [];
    const names = new Set([...candidates, ...left].map((c) => c.backend));
    const reasons = candidateReasons({
      backends: [...names].map((name) => sources.registry.get(name)),
      rejection: verdict,
      now: sources.registry.now(),
      checkIntervalS: cfg.health_check_interval,
    });
    if (reasons.length === 0) return undefined;
    const shown = seesBackendNames(caller, cfg.expose_backend_names, () => sources.users.count());
    const alias = call.resolution.alias ?? requested;
    const parkS = call.parkSeconds ?? parkSeconds(cfg, alias);
    const text = refusalText(reasons, { requested, names: shown, parkS, now: sources.registry.now() });
    return { message: withVerdict(verdict.reason, text, alias), candidates: visibleReasons(reasons, shown) };
  };
}

/** The candidates' sentence, with what the scheduler's verdict adds. */
function withVerdict(reason: RejectReason, text: string, alias: string): string {
  switch (reason) {
    case 'parking_off': return `${text} Parking is off for \`${alias}\`; retry shortly.`;
    case 'queue_full': return `Too many calls are waiting for a backend; retry shortly. ${text}`;
    case 'park_timeout': return `${text} Retry shortly.`;
    default: return text;
  }
}

/** The caller of a request, authenticated again (only when refusing); undefined if its key no longer passes. */
function callerOf(sources: RefusalSources, req: FastifyRequest): Caller | undefined {
  try {
    return sources.callers.identify(req).caller;
  } catch {
    return undefined;
  }
}

/**
 * Whether a caller may see backend names in a refusal. Admins (the master key, admin users)
 * always do. Others do when `expose_backend_names` is true; with `auto` (the default) when the
 * gateway is single-user: no user exists, so every caller is its owner (open, or the master key).
 * With false, only admins do (an open gateway's anonymous callers too see no names then).
 */
export function seesBackendNames(
  caller: Caller | undefined, setting: boolean | 'auto', userCount: () => number,
): boolean {
  if (caller && (caller.kind === 'master' || (caller.kind === 'user' && caller.isAdmin))) return true;
  if (setting !== 'auto') return setting;
  return userCount() === 0;
}
