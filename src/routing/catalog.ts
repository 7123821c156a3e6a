/**
 * What the fleet offers, per surface: `/v1/models` (built once per fleet or config change and
 * served from memory) and a requested model resolved to candidates. Routes see only this,
 * not the registry or the config behind it.
 */
import type { BackendRegistry } from '../backends/registry.ts';
import type { GatewayConfig } from '../config/types.ts';
import { compileAliases, type AliasTable } from './aliases.ts';
import { buildModelListing, type ListingEntry } from './model-listing.ts';
/** The refusal explainer reads the catalog's disabled candidates; the Gateway builds it with the catalog. */
import {
  aliasCollisions,
  resolveDisabled,
  resolveModel,
  SURFACE_TYPES,
  type AliasCollision,
  type Resolution,
  type Surface,
} from './resolve.ts';

export interface ModelCatalogView {
  listing(surface: Surface): ListingEntry[];
  resolve(requested: string, surface: Surface): Resolution | undefined;
}

export class ModelCatalog implements ModelCatalogView {
  private readonly listings = new Map<Surface, ListingEntry[]>();
  /** The compiled alias table and the config table it was compiled from. */
  private compiled?: { from: GatewayConfig['virtual_models']; table: AliasTable };

  constructor(
    private readonly registry: BackendRegistry,
    private readonly config: () => GatewayConfig,
  ) {}

  /** The fleet or the aliases changed: listings are rebuilt on their next read. */
  invalidate(): void {
    this.listings.clear();
  }

  listing(surface: Surface): ListingEntry[] {
    let entries = this.listings.get(surface);
    if (!entries) {
      const cfg = this.config();
      entries = buildModelListing(this.registry.list(), Object.keys(this.aliases().exact), {
        modelPrefix: cfg.model_prefix,
        surfaceTypes: SURFACE_TYPES[surface],
        resolveAlias: (alias) => this.resolve(alias, surface)?.candidates ?? [],
      });
      if (surface === 'messages') markMessagesOnly(entries, this.listing('openai'));
      this.listings.set(surface, entries);
    }
    return entries;
  }

  resolve(requested: string, surface: Surface): Resolution | undefined {
    return resolveModel(requested, this.registry, this.aliases(), surface);
  }

  /** The candidates routing leaves out as disabled (for a refusal's reasons, never for routing). */
  resolveDisabled(requested: string, surface: Surface): Resolution | undefined {
    return resolveDisabled(requested, this.registry, this.aliases(), surface);
  }

  /** Aliases that shadow a real model id (for /health and the console). */
  collisions(): AliasCollision[] {
    return aliasCollisions(this.aliases(), this.registry);
  }

  /** The glob aliases, most specific first (for /health). */
  patterns(): { pattern: string; target: GatewayConfig['virtual_models'][string] }[] {
    return this.aliases().patterns.map((p) => ({ pattern: p.pattern, target: p.target }));
  }

  private aliases(): AliasTable {
    const from = this.config().virtual_models;
    if (this.compiled?.from !== from) this.compiled = { from, table: compileAliases(from) };
    return this.compiled.table;
  }
}

/** Marks the entries the OpenAI endpoints cannot reach (their only backends are anthropic ones). */
function markMessagesOnly(entries: ListingEntry[], openai: readonly ListingEntry[]): void {
  const reachable = new Set(openai.map((e) => e.model.id));
  for (const e of entries) {
    if (reachable.has(e.model.id)) continue;
    e.messagesOnly = true;
    e.model = Object.assign({}, e.model, { endpoints: ['/v1/messages'] });
  }
}
