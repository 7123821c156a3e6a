/**
 * What Ollama's native API says about models, answered from the gateway's memory: `GET
 * /api/tags` (what the caller may use: the `/v1/models` listing under its allow-list, without
 * the ids only `/v1/messages` reaches), `POST /api/show`, `GET /api/ps` (the models the fleet
 * holds loaded now, as far as the gateway knows) and `GET /api/version`. The gateway knows ids,
 * owners, dates and context windows; an Ollama server's file facts (size, digest, quantisation)
 * it does not, so those are empty, never made up — a digest is the id's hash, stable per id.
 */
import { createHash } from 'node:crypto';
import { visibleEntries } from '../auth/allow.ts';
import type { ModelCatalogView } from '../routing/catalog.ts';
import type { ListingEntry } from '../routing/model-listing.ts';
import type { CallerContext } from './caller.ts';

/** The Ollama release whose API this surface follows (docs/api.md of v0.32.8): what `/api/version` says. */
export const OLLAMA_API_VERSION = '0.32.8';

/** How long Ollama keeps a model loaded after a call by default; `/api/ps` shows expiry that far ahead. */
const DEFAULT_KEEP_ALIVE_MS = 5 * 60_000;

export interface ModelFacts {
  /** The model's context window on that backend, when it said. */
  contextLength(backend: string, model: string): number | undefined;
  /** Whether the backend holds the model loaded now (undefined: not known). */
  isResident(backend: string, model: string): boolean | undefined;
}

/** The entries of `/v1/models` the caller may use on `/api/*`. */
export function visibleModels(catalog: ModelCatalogView, ctx: CallerContext): ListingEntry[] {
  return visibleEntries(ctx.caller.allow, catalog.listing('openai'));
}

const NO_DETAILS = Object.freeze({
  parent_model: '',
  format: '',
  family: '',
  families: [] as string[],
  parameter_size: '',
  quantization_level: '',
});

/** One `/api/tags` entry. */
export function tagOf(entry: ListingEntry): Record<string, unknown> {
  const id = entry.model.id;
  return {
    name: id,
    model: id,
    modified_at: new Date((entry.model.created || 0) * 1000).toISOString(),
    size: 0,
    digest: digestOf(id),
    details: NO_DETAILS,
  };
}

/** One `/api/ps` entry, or undefined when none of the entry's backends holds the model loaded. */
export function runningOf(entry: ListingEntry, facts: ModelFacts, now: number): Record<string, unknown> | undefined {
  const loaded = entry.candidates.find((c) => facts.isResident(c.backend, c.model) === true);
  if (!loaded) return undefined;
  const id = entry.model.id;
  const running: Record<string, unknown> = {
    name: id,
    model: id,
    size: 0,
    digest: digestOf(id),
    details: NO_DETAILS,
    expires_at: new Date(now + DEFAULT_KEEP_ALIVE_MS).toISOString(),
    size_vram: 0,
  };
  const context = facts.contextLength(loaded.backend, loaded.model);
  if (context !== undefined) running.context_length = context;
  return running;
}

/**
 * `/api/show`: what the gateway knows of the model. The capabilities are what the gateway can
 * serve for any chat model (tools go through its bridge); `thinking` is not claimed, since the
 * `ollama` CLI turns `think` on for every model that claims it.
 */
export function showOf(entry: ListingEntry, facts: ModelFacts): Record<string, unknown> {
  const first = entry.candidates[0];
  const context = first ? facts.contextLength(first.backend, first.model) : undefined;
  const info: Record<string, unknown> = { 'general.architecture': '', 'general.basename': entry.model.id };
  if (context !== undefined) info['general.context_length'] = context;
  return {
    modelfile: '',
    parameters: '',
    template: '',
    details: NO_DETAILS,
    model_info: info,
    capabilities: ['completion', 'tools'],
    modified_at: new Date((entry.model.created || 0) * 1000).toISOString(),
  };
}

function digestOf(id: string): string {
  return createHash('sha256').update(id).digest('hex');
}
