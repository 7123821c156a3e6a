import type { BackendState } from '../backends/registry.ts';
import type { Candidate } from '../scheduler/types.ts';

export interface ListedModel {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  /** Set on ids reachable only through these endpoints (anthropic backends: `["/v1/messages"]`). */
  endpoints?: string[];
}

/** A listed id plus what it routes to, so allow-lists can filter the listing. */
export interface ListingEntry {
  model: ListedModel;
  alias: boolean;
  candidates: Candidate[];
  /** The backend's name for people, when it gave one (Anthropic's listing shows it). */
  displayName?: string;
  /** Reachable only through POST /v1/messages (anthropic backends: the licence boundary). */
  messagesOnly?: true;
}

/**
 * Builds the `/v1/models` listing: every model as `<backend>/<model>` when `modelPrefix`,
 * bare ids for `local: true` backends (first backend wins a duplicate), plus aliases.
 * Computed once per fleet change and served from memory.
 */
export function buildModelListing(
  backends: readonly BackendState[],
  /** The exact alias names (glob patterns are never listed). */
  aliases: readonly string[],
  opts: {
    modelPrefix: boolean;
    surfaceTypes: readonly string[];
    resolveAlias: (alias: string) => { backend: string; model: string }[];
  },
): ListingEntry[] {
  const byId = new Map<string, ListingEntry>();
  const add = (e: ListingEntry) => {
    const existing = byId.get(e.model.id);
    if (!existing) byId.set(e.model.id, e);
    else if (!existing.alias) existing.candidates.push(...e.candidates);
  };
  for (const alias of aliases) {
    const candidates = opts.resolveAlias(alias);
    if (!candidates.length) continue;
    add({ model: { id: alias, object: 'model', created: 0, owned_by: 'llm-gateway' }, alias: true, candidates });
  }
  const usable = backends.filter((b) => b.spec.enabled && opts.surfaceTypes.includes(b.spec.type));
  for (const b of usable) {
    for (const m of b.models) {
      const model = { object: 'model' as const, created: m.created ?? 0, owned_by: m.owned_by ?? b.name };
      const candidates = [{ backend: b.name, model: m.id }];
      const displayName = m.display_name;
      if (opts.modelPrefix)
        add({ model: { id: `${b.name}/${m.id}`, ...model }, alias: false, candidates, displayName });
      if (b.spec.local || !opts.modelPrefix)
        add({ model: { id: m.id, ...model }, alias: false, candidates: [...candidates], displayName });
    }
  }
  return [...byId.values()];
}
