/**
 * Which prices a call on a backend's model is billed at, and where they came from. Pure.
 *
 * Order, first that has a price wins:
 * 1. `config`: the backend's `pricing:` (config.yaml, or the store through the admin API /
 *    console), a map of model id or glob pattern to prices;
 * 2. `discovered`: what the backend's `/v1/models` publishes (OpenRouter, Together);
 * 3. `built-in`: price-table.ts, for paid backends of kind openai / anthropic only (OpenAI's and
 *    Anthropic's own APIs publish no prices);
 * 4. none: the call is logged with cost 0 (and an upstream-reported cost still counts).
 *
 * Within one table the exact model id wins, else the longest matching pattern (`*` any run of
 * characters, `?` one); equal lengths: the first in the table. The same rule as glob aliases.
 * A table entry replaces the other sources whole: a config entry without `cache_read` bills
 * cache reads at its `input` price, not at a discovered cache price (stats/cost.ts).
 */
import type { BackendSpec } from '../config/types.ts';
import { compileAliases, exactAlias, patternAlias, type AliasTable } from '../config/name-patterns.ts';
import { BUILT_IN_PRICES } from './price-table.ts';
import { kindOf } from './kinds/index.ts';
import type { ModelInfo, ModelPricing } from './types.ts';

export type PriceSource = 'config' | 'discovered' | 'built-in';

export interface ResolvedPrice {
  pricing: ModelPricing;
  source: PriceSource;
  /** The table key that matched (config and built-in): the model id itself or a pattern. */
  matched?: string;
}

/** What resolvePrice reads of a backend's spec. */
export type PricedSpec = Pick<BackendSpec, 'type' | 'paid' | 'pricing'>;

/** A price table: exact ids and glob patterns, longest first (routing/aliases.ts's rule and code). */
type PriceTable = AliasTable<ModelPricing>;

function lookup(table: PriceTable, model: string): { pricing: ModelPricing; matched: string } | undefined {
  const hit = exactAlias(table, model) ?? patternAlias(table, model);
  return hit && { pricing: hit.target, matched: hit.alias };
}

const BUILT_IN = compileAliases(Object.fromEntries(BUILT_IN_PRICES));

/** Compiled once per `pricing:` object (a reload brings new objects; old ones are collected). */
const compiled = new WeakMap<object, PriceTable>();

function configTable(pricing: Readonly<Record<string, ModelPricing>>): PriceTable {
  let table = compiled.get(pricing);
  if (!table) {
    table = compileAliases(pricing);
    compiled.set(pricing, table);
  }
  return table;
}

/** Backends the built-in table prices: the paid LLM kinds. */
export function usesBuiltInPrices(spec: PricedSpec): boolean {
  return spec.paid && kindOf(spec).pricedPerToken;
}

/** The prices of `model` on the backend, or undefined when nothing prices it. */
export function resolvePrice(spec: PricedSpec, model: string, discovered?: ModelPricing): ResolvedPrice | undefined {
  const own = spec.pricing ? lookup(configTable(spec.pricing), model) : undefined;
  if (own) return { pricing: own.pricing, source: 'config', matched: own.matched };
  if (discovered) return { pricing: discovered, source: 'discovered' };
  const builtIn = usesBuiltInPrices(spec) ? lookup(BUILT_IN, model) : undefined;
  if (builtIn) return { pricing: builtIn.pricing, source: 'built-in', matched: builtIn.matched };
  return undefined;
}

/** What callPricing reads of a backend (registry.ts's BackendState). */
export interface PricedBackend {
  spec: PricedSpec;
  modelsById: ReadonlyMap<string, ModelInfo>;
}

/**
 * A backend's resolved call prices by model (null: none), valid for one spec and one model list:
 * the registry replaces `spec` on a config change and `modelsById` on a discovery, never mutating
 * either, so a new object of either is a new cache.
 */
interface CallPrices {
  spec: PricedSpec;
  modelsById: ReadonlyMap<string, ModelInfo>;
  byModel: Map<string, ModelPricing | null>;
}

/** Models a backend's cache holds before it starts over (a pass-through glob alias takes any name). */
export const CALL_PRICES_PER_BACKEND = 1024;

const callPrices = new WeakMap<PricedBackend, CallPrices>();

/**
 * The prices a call's log row is costed at: `model` as the backend knows it. Once per call, so
 * resolved once per backend and model (the glob tables are not matched per call).
 */
export function callPricing(
  backend: PricedBackend | undefined,
  model: string | null | undefined,
): ModelPricing | undefined {
  if (!backend || !model) return undefined;
  let cache = callPrices.get(backend);
  if (!cache || cache.spec !== backend.spec || cache.modelsById !== backend.modelsById) {
    cache = { spec: backend.spec, modelsById: backend.modelsById, byModel: new Map() };
    callPrices.set(backend, cache);
  }
  let pricing = cache.byModel.get(model);
  if (pricing === undefined) {
    pricing = resolvePrice(backend.spec, model, backend.modelsById.get(model)?.pricing)?.pricing ?? null;
    if (cache.byModel.size >= CALL_PRICES_PER_BACKEND) cache.byModel.clear();
    cache.byModel.set(model, pricing);
  }
  return pricing ?? undefined;
}

/** One model's prices as /health and the console show them. */
export type ModelPriceView = ({ source: PriceSource; matched?: string } & ModelPricing) | { source: 'none' };

export type PriceSourceCounts = Record<PriceSource | 'none', number>;

export interface PricingReport {
  /** How many of the backend's models take their prices from each source. */
  sources: PriceSourceCounts;
  /** Per model id. */
  models: Record<string, ModelPriceView>;
}

export function priceView(spec: PricedSpec, model: ModelInfo): ModelPriceView {
  const resolved = resolvePrice(spec, model.id, model.pricing);
  if (!resolved) return { source: 'none' };
  return { source: resolved.source, ...resolved.pricing, ...(resolved.matched ? { matched: resolved.matched } : {}) };
}

/** Where each of the backend's models gets its prices, with the counts per source. */
export function pricingReport(spec: PricedSpec, models: readonly ModelInfo[]): PricingReport {
  const sources: PriceSourceCounts = { config: 0, discovered: 0, 'built-in': 0, none: 0 };
  const byModel: Record<string, ModelPriceView> = {};
  for (const m of models) {
    const view = priceView(spec, m);
    sources[view.source]++;
    byModel[m.id] = view;
  }
  return { sources, models: byModel };
}
