/**
 * Explains a refused call: gathers, only when the scheduler refuses, what each candidate's
 * backend is doing (registry state, the disabled candidates routing left out, the queue ahead)
 * and words it for this caller. Admins see backend names; other callers see them only when
 * `expose_backend_names` says so (see `seesBackendNames`).
 */
import type { FastifyRequest } from 'fastify';
import type { Caller } from '../auth/authenticator.ts';
import { filterAllowed } from '../auth/allow.ts';
import { ownerKind } from '../auth/owner.ts';
import type { BackendRegistry } from '../backends/registry.ts';
import type { GatewayConfig } from '../config/types.ts';
import type { AheadCount, Candidate, RejectReason } from '../scheduler/types.ts';
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
  config(): GatewayConfig;
}

/** What explaining a set of backends needs: their live state and the settings. */
export type FleetSources = Pick<RefusalSources, 'registry' | 'config'>;

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
  ahead?: AheadCount;
}

export interface RefusalExplanation {
  /** One sentence for one candidate, a short list for several. */
  message: string;
  /** `error.candidates`: one reason per candidate, with `backend` only if the caller may see names. */
  candidates: CandidateReason[];
}

/** What the proxy asks when it refuses a call. */
export interface RefusalExplainer {
  /** Each candidate's reason, worded for the caller, when the scheduler refused the call. */
  explain(call: RefusedCall, verdict: RefusalVerdict): RefusalExplanation | undefined;
  /** Whether the caller of `req` may see backend names (for the other refusals' messages). */
  seesNames(req: FastifyRequest): boolean;
}

/** The explainer the proxy calls when it refuses a call. */
export function refusalExplainer(sources: RefusalSources): RefusalExplainer {
  const seesNames = (req: FastifyRequest) =>
    seesBackendNames(callerOf(sources, req), sources.config().expose_backend_names);
  const explain = (call: RefusedCall, verdict: RefusalVerdict) => {
    const candidates = call.refreshCandidates?.() ?? call.resolution.candidates;
    const caller = callerOf(sources, call.req);
    const requested = call.resolution.requested;
    const surface = call.surface.endpoint === 'messages' ? 'messages' : 'openai';
    const disabled = sources.catalog.resolveDisabled(requested, surface);
    const left = disabled && caller ? filterAllowed(caller.allow, disabled) : [];
    const backends = [...candidates, ...left].map((c) => c.backend);
    const alias = call.resolution.alias ?? requested;
    const parkS = call.parkSeconds ?? parkSeconds(sources.config(), alias);
    return explainBackends(sources, backends, verdict, { requested, alias, caller, parkS });
  };
  return { explain, seesNames };
}

/** As much of a caller as name visibility needs. */
export type CallerKind = Pick<Caller, 'kind' | 'isAdmin'>;

/** Who asks and about what, for `explainBackends`. */
export interface RefusalSubject {
  requested: string;
  /** The alias the request matched (else `requested`), for the verdict's sentence. */
  alias: string;
  /** Undefined when the key no longer passes: no names then, unless every caller sees them. */
  caller: CallerKind | undefined;
  /** How long the call could wait, seconds. */
  parkS?: number;
}

/** Each backend's reason, worded for the caller; undefined when none of them is known. */
export function explainBackends(
  sources: FleetSources,
  backends: readonly string[],
  verdict: RefusalVerdict,
  subject: RefusalSubject,
): RefusalExplanation | undefined {
  const cfg = sources.config();
  const now = sources.registry.now();
  const reasons = candidateReasons({
    backends: [...new Set(backends)].map((name) => sources.registry.get(name)),
    rejection: verdict,
    now,
  });
  if (reasons.length === 0) return undefined;
  const shown = seesBackendNames(subject.caller, cfg.expose_backend_names);
  const text = refusalText(reasons, { requested: subject.requested, names: shown, parkS: subject.parkS, now });
  return { message: withVerdict(verdict.reason, text, subject.alias), candidates: visibleReasons(reasons, shown) };
}

/** The candidates' sentence, with what the scheduler's verdict adds. */
function withVerdict(reason: RejectReason, text: string, alias: string): string {
  switch (reason) {
    case 'parking_off':
      return `${text} Parking is off for \`${alias}\`; retry shortly.`;
    case 'queue_full':
      return `Too many calls are waiting for a backend; retry shortly. ${text}`;
    case 'park_timeout':
      return `${text} Retry shortly.`;
    default:
      return text;
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
 * always do. Others do when `expose_backend_names` is true, never when it is false. With
 * `auto` (the default) they do while the gateway is single-user: no user exists, so the only
 * other caller is the anonymous one of an open gateway (an anonymous caller exists only while
 * there is no user and no master key); once a user exists, plain users see no names.
 */
export function seesBackendNames(caller: CallerKind | undefined, setting: boolean | 'auto'): boolean {
  if (caller && (caller.kind === 'master' || (caller.kind === 'user' && caller.isAdmin))) return true;
  if (setting !== 'auto') return setting;
  return caller?.kind === 'anonymous';
}

/**
 * A media caller as a refusal subject: its owner says what kind of caller it is (auth/owner.ts
 * `ownerKind`), `admin` whether it is one.
 */
export function mediaSubject(alias: string, caller: { owner: string; admin: boolean }): RefusalSubject {
  return { requested: alias, alias, caller: { kind: ownerKind(caller.owner), isAdmin: caller.admin } };
}
