import { typesAnswering } from '../backends/kinds/index.ts';
import type { BackendSpec, BackendType, VirtualModel } from '../config/types.ts';
import type { Candidate } from '../scheduler/types.ts';
import { exactAlias, patternAlias, type AliasMatch, type AliasTable } from './aliases.ts';

/** What resolution needs to know about the fleet (the registry satisfies it). */
export interface FleetView {
  get(name: string): { spec: BackendSpec; modelsById: { has(id: string): boolean } } | undefined;
  backendsServing(modelId: string): readonly string[];
}

export type { Candidate };

export interface Resolution {
  requested: string;
  /** Set when `requested` named a virtual model: its key (the pattern, for a glob alias). */
  alias?: string;
  candidates: Candidate[];
}

/**
 * Which backend kinds can answer on a surface: those that answer one of its APIs (natively or
 * translated). Anthropic backends answer only Messages, so they are reached only behind /v1/messages.
 */
export const SURFACE_TYPES = {
  openai: typesAnswering(['chat', 'completions', 'embeddings', 'audio', 'responses']),
  messages: typesAnswering(['messages']),
} as const satisfies Record<string, readonly BackendType[]>;
export type Surface = keyof typeof SURFACE_TYPES;

/**
 * Turns a requested model into candidates (ARCHITECTURE §3): an alias from `virtual_models`,
 * a `<backend>/<model>` pin, or a bare id served anywhere, and last a glob alias (so a pattern
 * such as `claude-*` never hides a model the fleet really serves under that name). Disabled
 * backends and backends of a kind the surface cannot reach are left out. Health is the
 * scheduler's business. Returns undefined when nothing matches (the caller answers 404).
 */
export function resolveModel(
  requested: string,
  fleet: FleetView,
  aliases: AliasTable,
  surface: Surface,
): Resolution | undefined {
  return resolveAmong(requested, fleet, aliases, (name) => reachable(fleet, name, surface, true));
}

/**
 * The candidates `resolveModel` leaves out because their backend is disabled, resolved the same
 * way (as if only disabled backends existed). For a refusal that names every candidate's reason;
 * never for routing. Undefined when no disabled backend serves `requested`.
 */
export function resolveDisabled(
  requested: string,
  fleet: FleetView,
  aliases: AliasTable,
  surface: Surface,
): Resolution | undefined {
  return resolveAmong(requested, fleet, aliases, (name) => reachable(fleet, name, surface, false));
}

/** The backend exists, is `enabled` (or not) as asked, and is of a kind the surface can reach. */
function reachable(fleet: FleetView, name: string, surface: Surface, enabled: boolean): boolean {
  const b = fleet.get(name);
  return !!b && b.spec.enabled === enabled && (SURFACE_TYPES[surface] as readonly BackendType[]).includes(b.spec.type);
}

function resolveAmong(
  requested: string,
  fleet: FleetView,
  aliases: AliasTable,
  usable: (backend: string) => boolean,
): Resolution | undefined {
  const exact = exactAlias(aliases, requested);
  if (exact) return aliasResolution(requested, exact, fleet, aliases, usable);
  const candidates = resolveTarget(requested, fleet).filter((c) => usable(c.backend));
  if (candidates.length) return { requested, candidates };
  const pattern = patternAlias(aliases, requested);
  return pattern && aliasResolution(requested, pattern, fleet, aliases, usable);
}

function aliasResolution(
  requested: string,
  match: AliasMatch,
  fleet: FleetView,
  aliases: AliasTable,
  usable: (backend: string) => boolean,
): Resolution | undefined {
  const target = viaAliases(match, aliases);
  const candidates =
    typeof target === 'string'
      ? resolveTarget(target, fleet).filter((c) => usable(c.backend))
      : Object.entries(target)
          .filter(([backend, model]) => usable(backend) && fleet.get(backend)!.modelsById.has(model))
          .map(([backend, model]) => ({ backend, model }));
  return candidates.length ? { requested, alias: match.alias, candidates } : undefined;
}

/** Most alias hops followed (`"claude-*": big`, `big` an alias itself); a cycle stops there too. */
const MAX_ALIAS_HOPS = 4;

/** The alias's target, followed through exact aliases it names (a pattern pointing at an alias). */
function viaAliases(match: AliasMatch, aliases: AliasTable): VirtualModel {
  let target = match.target;
  const seen = new Set([match.alias]);
  for (let hop = 0; hop < MAX_ALIAS_HOPS && typeof target === 'string' && !seen.has(target); hop++) {
    const next = exactAlias(aliases, target);
    if (!next) break;
    seen.add(target);
    target = next.target;
  }
  return target;
}

/** A `<backend>/<model>` pin when the prefix names a backend that lists the rest, else a bare id. */
function resolveTarget(id: string, fleet: FleetView): Candidate[] {
  const slash = id.indexOf('/');
  if (slash > 0) {
    const backend = id.slice(0, slash);
    const model = id.slice(slash + 1);
    if (fleet.get(backend)?.modelsById.has(model)) return [{ backend, model }];
  }
  return fleet.backendsServing(id).map((backend) => ({ backend, model: id }));
}

export interface AliasCollision {
  alias: string;
  /** Backends serving the real model id that the alias still reaches. */
  stillServedBy: string[];
  /** Backends serving the real id that become unreachable by the bare id (only by prefix). */
  unreachable: string[];
}

/** Aliases that shadow a real model id: who still serves that id through the alias, who does not. */
export function aliasCollisions(aliases: AliasTable, fleet: FleetView): AliasCollision[] {
  const out: AliasCollision[] = [];
  for (const alias of Object.keys(aliases.exact)) {
    const real = fleet.backendsServing(alias);
    if (!real.length) continue;
    const target = aliases.exact[alias];
    const reached = new Set(
      typeof target === 'string'
        ? resolveTarget(target, fleet)
            .filter((c) => c.model === alias)
            .map((c) => c.backend)
        : Object.entries(target)
            .filter(([, m]) => m === alias)
            .map(([b]) => b),
    );
    out.push({
      alias,
      stillServedBy: real.filter((b) => reached.has(b)),
      unreachable: real.filter((b) => !reached.has(b)),
    });
  }
  return out;
}
