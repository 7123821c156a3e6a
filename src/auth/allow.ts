/**
 * Allow-lists (pure). An entry may name a chat or generation alias, a backend (all its
 * models, including aliases that map onto it), a `<backend>/<model>` pair, or a bare model id.
 * An empty list allows everything. Callers turn "nothing allowed" into the same 404
 * `model_not_found` an unknown model gets, so nobody can enumerate what they may not use.
 */

import type { Candidate } from '../scheduler/types.ts';

export interface AllowContext {
  /** What the client asked for. */
  requested: string;
  /** Set when `requested` is an alias (then equal to it). */
  alias?: string;
  /** Resolved candidates, in routing order. */
  candidates: Candidate[];
}

/** The candidates `allow` permits, in their original order. */
export function filterAllowed(allow: readonly string[], ctx: AllowContext): Candidate[] {
  if (allow.length === 0) return ctx.candidates;
  if (ctx.alias !== undefined && allow.includes(ctx.alias)) return ctx.candidates;
  const entries = new Set(allow);
  return ctx.candidates.filter(
    (c) => entries.has(c.backend) || entries.has(c.model) || entries.has(`${c.backend}/${c.model}`),
  );
}

/** What visibility reads of an entry of `GET /v1/models` (routing/model-listing.ts `ListingEntry`). */
export interface ListedEntry {
  model: { id: string };
  alias: boolean;
  candidates: AllowContext['candidates'];
}

/** Whether an entry of `GET /v1/models` is visible under `allow` (same rules as `filterAllowed`). */
export function isListedModelVisible(allow: readonly string[], entry: ListedEntry): boolean {
  const id = entry.model.id;
  if (allow.length === 0 || allow.includes(id)) return true;
  const ctx: AllowContext = { requested: id, alias: entry.alias ? id : undefined, candidates: entry.candidates };
  return filterAllowed(allow, ctx).length > 0;
}

/** The entries of a model listing visible under `allow` (all of them for an empty list): `/v1/models`, `/api/tags`. */
export function visibleEntries<T extends ListedEntry>(allow: readonly string[], entries: T[]): T[] {
  return allow.length ? entries.filter((e) => isListedModelVisible(allow, e)) : entries;
}
