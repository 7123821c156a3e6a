/**
 * What the backends list shows, from gateway.admin's views: one row per backend with its state
 * in words (up / down / draining / disabled / not probed yet), where its entry comes from and,
 * when the store overrides config.yaml, which options differ. Pure over the views; no I/O.
 */
import type { BackendView, MaskedBackendSpec } from '../admin/config-service.ts';
import type { BackendType } from '../config/types.ts';
import type { ModelPriceView, PricingReport } from '../backends/pricing.ts';

export type BackendState = 'up' | 'down' | 'draining' | 'disabled' | 'pending';

export interface BackendRow {
  name: string;
  type: BackendType;
  state: BackendState;
  /** Draining with nothing left in flight. */
  drained: boolean;
  error?: { kind: string; status?: number; detail: string; since: number };
  source: BackendView['source'];
  /** source 'both': the options the store's entry changes (config.yaml's entry is what a reset restores). */
  overrides: string[];
  enabled: boolean;
  draining: boolean;
  models: number;
  modelIds: string[];
  inventory?: BackendView['inventory'];
  inflight: number;
  cap: number;
  paid: boolean;
  url: string;
  host?: string;
  group?: string;
  discoveredAt?: number;
  /** LLM backends: where their models' prices come from. */
  prices?: RowPrices;
}

/** What the Cost column says of a backend's prices. */
export interface RowPrices {
  /** Sources in a fixed order (config, discovered, built-in, none), those with models only. */
  counts: { source: ModelPriceView['source']; models: number }[];
  /** The first PRICE_PREVIEW models, each with its prices' source; the rest is counted. */
  models: ({ id: string } & ModelPriceView)[];
  more: number;
}

export interface BackendsModel {
  now: number;
  rows: BackendRow[];
  counts: Record<BackendState, number> & { total: number };
}

/** Model ids shown on a row; the rest is counted. */
export const MODEL_PREVIEW = 4;

/** Models listed in a row's price details (all of them are in /health). */
export const PRICE_PREVIEW = 50;

export function rowPrices(report: PricingReport): RowPrices {
  const order = ['config', 'discovered', 'built-in', 'none'] as const;
  const counts = order.filter((s) => report.sources[s] > 0)
    .map((source) => ({ source, models: report.sources[source] }));
  const all = Object.entries(report.models);
  const models = all.slice(0, PRICE_PREVIEW).map(([id, view]) => ({ id, ...view }));
  return { counts, models, more: all.length - models.length };
}

export function stateOf(b: BackendView): BackendState {
  if (!b.enabled) return 'disabled';
  if (b.draining) return 'draining';
  if (b.healthy) return 'up';
  return b.known || b.error ? 'down' : 'pending';
}

export function backendRow(b: BackendView): BackendRow {
  const row: BackendRow = {
    name: b.name, type: b.type, state: stateOf(b), drained: b.draining && b.inflight === 0,
    source: b.source, overrides: b.fileSpec ? differingKeys(b.spec, b.fileSpec) : [],
    enabled: b.enabled, draining: b.draining, models: b.models, modelIds: b.modelIds.slice(0, MODEL_PREVIEW),
    inflight: b.inflight, cap: b.cap, paid: b.paid, url: b.spec.url,
  };
  if (b.error && !b.healthy) row.error = { kind: b.error.kind, detail: b.error.detail, since: b.error.since, ...(b.error.status !== undefined ? { status: b.error.status } : {}) };
  if (b.inventory) row.inventory = b.inventory;
  if (b.spec.host) row.host = b.spec.host;
  if (b.group) row.group = b.group;
  if (b.discoveredAt !== undefined) row.discoveredAt = b.discoveredAt;
  if (b.prices && b.models > 0) row.prices = rowPrices(b.prices);
  return row;
}

export function backendsModel(views: readonly BackendView[], now = Date.now()): BackendsModel {
  const rows = views.map(backendRow);
  const counts = { total: rows.length, up: 0, down: 0, draining: 0, disabled: 0, pending: 0 };
  for (const r of rows) counts[r.state]++;
  return { now, rows, counts };
}

/** Options whose value differs between two specs (the key compared by its masked hint). */
export function differingKeys(a: MaskedBackendSpec, b: MaskedBackendSpec): string[] {
  const ra = a as unknown as Record<string, unknown>;
  const rb = b as unknown as Record<string, unknown>;
  const keys = new Set([...Object.keys(ra), ...Object.keys(rb)]);
  return [...keys].filter((k) => JSON.stringify(ra[k]) !== JSON.stringify(rb[k])).sort();
}

/**
 * One-shot notes carried across a POST-redirect-GET (the service's remarks, e.g. "comes from
 * config.yaml: disabled"): kept server-side under a random id, so a crafted link cannot put
 * words on the page. Short-lived and bounded.
 */
export class Flash {
  private readonly notes = new Map<string, { text: string; at: number }>();

  constructor(private readonly ttlMs = 120_000, private readonly max = 200) {}

  put(text: string, now = Date.now()): string {
    for (const [id, n] of this.notes) if (now - n.at > this.ttlMs || this.notes.size >= this.max) this.notes.delete(id);
    const id = crypto.randomUUID();
    this.notes.set(id, { text, at: now });
    return id;
  }

  take(id: string | undefined, now = Date.now()): string | undefined {
    if (!id) return undefined;
    const n = this.notes.get(id);
    this.notes.delete(id);
    return n && now - n.at <= this.ttlMs ? n.text : undefined;
  }
}
