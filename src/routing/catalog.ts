/**
 * What the fleet offers, per surface: `/v1/models` (built once per fleet or config change and
 * served from memory) and a requested model resolved to candidates. Routes see only this,
 * not the registry or the config behind it.
 */
import type { BackendRegistry } from '../backends/registry.ts';
import type { GatewayConfig } from '../config/types.ts';
import { buildModelListing, type ListingEntry } from './model-listing.ts';
import { aliasCollisions, resolveModel, SURFACE_TYPES, type AliasCollision, type Resolution, type Surface } from './resolve.ts';

export interface ModelCatalogView {
  listing(surface: Surface): ListingEntry[];
  resolve(requested: string, surface: Surface): Resolution | undefined;
}

export class ModelCatalog implements ModelCatalogView {
  private readonly listings = new Map<Surface, ListingEntry[]>();

  constructor(private readonly registry: BackendRegistry, private readonly config: () => GatewayConfig) {}

  /** The fleet or the aliases changed: listings are rebuilt on their next read. */
  invalidate(): void {
    this.listings.clear();
  }

  listing(surface: Surface): ListingEntry[] {
    let entries = this.listings.get(surface);
    if (!entries) {
      const cfg = this.config();
      entries = buildModelListing(this.registry.list(), cfg.virtual_models, {
        modelPrefix: cfg.model_prefix,
        surfaceTypes: SURFACE_TYPES[surface],
        resolveAlias: (alias) => this.resolve(alias, surface)?.candidates ?? [],
      });
      this.listings.set(surface, entries);
    }
    return entries;
  }

  resolve(requested: string, surface: Surface): Resolution | undefined {
    return resolveModel(requested, this.registry, this.config().virtual_models, surface);
  }

  /** Aliases that shadow a real model id (for /health and the console). */
  collisions(): AliasCollision[] {
    return aliasCollisions(this.config().virtual_models, this.registry);
  }
}
