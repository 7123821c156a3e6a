/**
 * What the backends list shows, from services.admin's views: one row per backend with its state
 * in words (up / down / draining / disabled / not probed yet), where its entry comes from and,
 * when the store overrides config.yaml, which options differ. Pure over the views; no I/O.
 */
import type { BackendView, MaskedBackendSpec } from '../admin/config-service.ts';
import type { BackendType } from '../config/types.ts';
import type { ModelPriceView, PricingReport } from '../backends/pricing.ts';
import type { BackendSlotsSnapshot, ServiceFiguresSnapshot } from '../scheduler/index.ts';

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
  /** LLM backends that completed a call: what the scheduler learnt of their speed. */
  learnt?: RowLearnt;
  /** A key pool: how many keys, how many muted now. */
  keys?: { total: number; muted: number };
  /** Out of rotation until then (unix ms): rate-limited, or every pooled key muted. */
  resting?: { until: number; reason: number };
}

/** Learnt figures as shown (absent = never measured). */
export interface LearntText {
  /** Output tokens per second while decoding, e.g. `42.3 tok/s`. */
  decode?: string;
  /** Prompt tokens per second while prefilling. */
  prefill?: string;
  /** Mean seconds a call holds its slot (model loads left out), e.g. `2.4 s`. */
  service?: string;
  /** What a model load adds to a call: the model's figure; for the backend, the mean over its models. */
  swap?: string;
  /** Completed calls learnt from. */
  calls: number;
}

/** What completed calls taught about one backend, and about each model on it. */
export interface RowLearnt extends LearntText {
  /** Most calls first; the first LEARNT_MODELS (the rest is counted; all of them are in /health). */
  models: ({ id: string } & LearntText)[];
  more: number;
}

/** What the Cost column says of a backend's prices. */
export interface RowPrices {
  /** Sources in a fixed order (config, discovered, built-in, none), those with models only. */
  counts: { source: ModelPriceView['source']; models: number }[];
  /** The first PRICE_PREVIEW models, each with its prices' source; the rest is counted. */
  models: ({ id: string } & ModelPriceView)[];
  more: number;
}

/** Models listed in a backend's learnt figures (all of them are in /health). */
export const LEARNT_MODELS = 50;

/** Tokens per second, as shown: whole above 100, else one decimal. */
export function tokPerS(n: number): string {
  return `${n >= 100 ? Math.round(n) : n.toFixed(1)} tok/s`;
}

/** Seconds, as shown: `12 s`, `2.4 s`, `0.35 s`, `< 0.01 s`. */
export function seconds(n: number): string {
  if (n < 0.01) return '< 0.01 s';
  return `${n >= 10 ? Math.round(n) : n >= 1 ? n.toFixed(1) : n.toFixed(2)} s`;
}

function learntText(f: ServiceFiguresSnapshot | undefined, swap: number | undefined): LearntText {
  const text: LearntText = { calls: f?.samples ?? 0 };
  if (f?.decodeRate !== undefined) text.decode = tokPerS(f.decodeRate);
  if (f?.prefillRate !== undefined) text.prefill = tokPerS(f.prefillRate);
  if (f?.serviceSeconds !== undefined) text.service = seconds(f.serviceSeconds);
  if (swap !== undefined) text.swap = seconds(swap);
  return text;
}

/** A backend's learnt figures from its slots' snapshot; undefined before its first completed call. */
export function rowLearnt(s: BackendSlotsSnapshot | undefined): RowLearnt | undefined {
  if (!s?.service || s.kind === 'media') return undefined;
  const swaps = s.swapSeconds ?? {};
  const byModel = s.serviceByModel ?? {};
  const ids = [...new Set([...Object.keys(byModel), ...Object.keys(swaps)])];
  const calls = (id: string) => byModel[id]?.samples ?? 0;
  ids.sort((a, b) => calls(b) - calls(a) || a.localeCompare(b));
  const swapValues = Object.values(swaps);
  const mean = swapValues.length ? swapValues.reduce((sum, v) => sum + v, 0) / swapValues.length : undefined;
  const models = ids.slice(0, LEARNT_MODELS).map((id) => ({ id, ...learntText(byModel[id], swaps[id]) }));
  return { ...learntText(s.service, mean), models, more: ids.length - models.length };
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
  const counts = order
    .filter((s) => report.sources[s] > 0)
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

/** One backend's row; `slots`: its scheduler snapshot, for what was learnt of its speed. */
export function backendRow(b: BackendView, slots?: BackendSlotsSnapshot): BackendRow {
  const row: BackendRow = {
    name: b.name,
    type: b.type,
    state: stateOf(b),
    drained: b.draining && b.inflight === 0,
    source: b.source,
    overrides: b.fileSpec ? differingKeys(b.spec, b.fileSpec) : [],
    enabled: b.enabled,
    draining: b.draining,
    models: b.models,
    modelIds: b.modelIds.slice(0, MODEL_PREVIEW),
    inflight: b.inflight,
    cap: b.cap,
    paid: b.paid,
    url: b.spec.url,
  };
  if (b.error && !b.healthy)
    row.error = {
      kind: b.error.kind,
      detail: b.error.detail,
      since: b.error.since,
      ...(b.error.status !== undefined ? { status: b.error.status } : {}),
    };
  if (b.inventory) row.inventory = b.inventory;
  if (b.spec.host) row.host = b.spec.host;
  if (b.group) row.group = b.group;
  if (b.discoveredAt !== undefined) row.discoveredAt = b.discoveredAt;
  if (b.prices && b.models > 0) row.prices = rowPrices(b.prices);
  if (b.keys) row.keys = { total: b.keys.length, muted: b.keys.filter((k) => k.state === 'muted').length };
  if (b.resting) row.resting = b.resting;
  const learnt = rowLearnt(slots);
  if (learnt) row.learnt = learnt;
  return row;
}

/** The list; `slots`: the scheduler's snapshot of the backends, for what was learnt of their speed. */
export function backendsModel(
  views: readonly BackendView[],
  now = Date.now(),
  slots: readonly BackendSlotsSnapshot[] = [],
): BackendsModel {
  const byName = new Map(slots.map((s) => [s.name, s]));
  const rows = views.map((v) => backendRow(v, byName.get(v.name)));
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

  constructor(
    private readonly ttlMs = 120_000,
    private readonly max = 200,
  ) {}

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
