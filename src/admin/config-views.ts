/**
 * What the admin API and the console show of the configuration: every setting with the value
 * in force and where it comes from, every backend with its spec (secrets masked) and its live
 * state. Pure functions of the file config, the store and the live views; no I/O.
 */
import { writeJson } from '../media/compiler/index.ts';
import { keyHint } from '../store/keys.ts';
import { maskUrl } from '../backends/secret-scrub.ts';
import { maskAlertUrl } from '../alerts/mask.ts';
import type { BackendRegistry } from '../backends/registry.ts';
import type { KeyStateView } from '../backends/key-pool.ts';
import { pricingReport, type PricingReport } from '../backends/pricing.ts';
import type { BackendError } from '../backends/types.ts';
import { RESTART_ONLY_KEYS } from '../config/defaults.ts';
import { STORE_SETTING_KEYS } from '../config/effective.ts';
import type { ConfigProblem } from '../config/problems.ts';
import { configSchema, TOP_LEVEL_KEYS } from '../config/schema.ts';
import type { BackendSpec, BackendType, GatewayConfig } from '../config/types.ts';
import type { MediaInventory } from '../media/compiler/inventory.ts';
import type { SchedulerSnapshot } from '../scheduler/index.ts';
import { kindOf } from '../backends/kinds/index.ts';

/** Outcome of a change: written and applied (with a remark), or refused with nothing written. */
export type Result =
  | { ok: true; note?: string }
  | { ok: false; problems: ConfigProblem[]; /** the named backend or setting does not exist */ notFound?: boolean };

export type SettingSource = 'default' | 'config.yaml' | 'store';

/** One top-level setting (not `backends`, not `api_key`). */
export interface SettingView {
  key: string;
  secret: false;
  /** The value in force (for a restart-only key: the one the next start will use). */
  value: unknown;
  source: SettingSource;
  /** What config.yaml says, when it sets the key to something else than the default. */
  fileValue?: unknown;
  /** The store's row, when there is one. */
  storeValue?: unknown;
  /** The built-in default, when the key has one. */
  defaultValue?: unknown;
  restartOnly: boolean;
  /** The store holds a value and config.yaml sets one too (the store's wins). */
  overridden: boolean;
  /** False for store_dir and jobs_dir: only config.yaml sets them. */
  storable: boolean;
}

/** The master key: whether one is set and where from, never its value. */
export interface SecretSettingView {
  key: 'api_key';
  secret: true;
  set: boolean;
  source: SettingSource;
  restartOnly: false;
  overridden: boolean;
  storable: true;
}

/** A secret as shown: that it is set and its last characters (at most 4). */
export interface MaskedSecret {
  set: true;
  hint: string;
}

export type MaskedBackendSpec = Omit<BackendSpec, 'api_key' | 'api_keys'> & {
  api_key?: MaskedSecret;
  api_keys?: MaskedSecret[];
};

/** config.yaml only, the store only, or both (the store's entry replaces the file's). */
export type BackendSource = 'config.yaml' | 'store' | 'both';

export interface InventoryCounts {
  checkpoints: number;
  unets: number;
  vaes: number;
  clips: number;
  loras: number;
  classes: number;
}

export interface BackendView {
  name: string;
  type: BackendType;
  source: BackendSource;
  /** The spec in force, api_key masked. */
  spec: MaskedBackendSpec;
  /** With source 'both': config.yaml's entry (what a reset goes back to), api_key masked. */
  fileSpec?: MaskedBackendSpec;
  enabled: boolean;
  /** Discovery (or the model cache) has spoken. */
  known: boolean;
  healthy: boolean;
  error?: BackendError;
  /** Number of models discovered. */
  models: number;
  modelIds: string[];
  discoveredAt?: number;
  /** Leases out now (calls and media jobs). */
  inflight: number;
  /** In-flight cap; 0 = unlimited. */
  cap: number;
  /** Runtime only: no new work while in-flight work finishes. */
  draining: boolean;
  /** The scheduler may give it new work (enabled, healthy, not draining). */
  available: boolean;
  /** Output tokens per second (EWMA), when measured. */
  speed?: number;
  paid: boolean;
  group?: string;
  /** ComfyUI: counts of what its /object_info offers. */
  inventory?: InventoryCounts;
  /** LLM backends: where each model's prices come from (config, discovered, built-in, none). */
  prices?: PricingReport;
  /** A key pool's states, masked (backends/key-pool.ts). */
  keys?: KeyStateView[];
  /** Out of rotation until then (unix ms): a sole key rate-limited, or every pooled key muted. */
  resting?: { until: number; reason: number };
}

/** `sk-…abcd`: at most the last 4 characters, fewer for short keys (none under 8). */
export function secretHint(key: string): string {
  if (key.length >= 16) return keyHint(key);
  return `…${key.length >= 8 ? key.slice(-2) : ''}`;
}

/** The spec as shown: api_key as a hint, the URL's password as `***`. */
export function maskSpec(spec: BackendSpec): MaskedBackendSpec {
  const { api_key, api_keys, ...rest } = spec;
  const shown: MaskedBackendSpec = { ...rest, url: maskUrl(rest.url) };
  if (api_keys) shown.api_keys = api_keys.map((key) => ({ set: true, hint: secretHint(key) }));
  return api_key === undefined ? shown : { ...shown, api_key: { set: true, hint: secretHint(api_key) } };
}

export function inventoryCounts(inv: MediaInventory): InventoryCounts {
  return {
    checkpoints: inv.checkpoints.length,
    unets: inv.unets.length,
    vaes: inv.vaes.length,
    clips: inv.clips.length,
    loras: inv.loras.length,
    classes: inv.classes.length,
  };
}

const sameJson = (a: unknown, b: unknown) => writeJson(a) === writeJson(b);

function defaultOf(key: string): unknown {
  return (configSchema.properties as Record<string, { default?: unknown }>)[key]?.default;
}

/** Every top-level key but `backends`, in schema order; `api_key` as a SecretSettingView. */
export function settingsView(
  file: GatewayConfig,
  effective: GatewayConfig,
  stored: Record<string, unknown>,
): (SettingView | SecretSettingView)[] {
  const storable = new Set<string>(STORE_SETTING_KEYS);
  const fileRec = file as unknown as Record<string, unknown>;
  const effRec = effective as unknown as Record<string, unknown>;
  return TOP_LEVEL_KEYS.filter((k) => k !== 'backends').map((key) => {
    const inStore = storable.has(key) && Object.hasOwn(stored, key) && stored[key] != null;
    if (key === 'api_key') {
      const inFile = !!file.api_key?.trim();
      return {
        key,
        secret: true,
        set: !!effective.api_key?.trim(),
        source: inStore ? 'store' : inFile ? 'config.yaml' : 'default',
        restartOnly: false,
        overridden: inStore && inFile,
        storable: true,
      } satisfies SecretSettingView;
    }
    const defaultValue = defaultOf(key);
    const fileValue = shownValue(key, fileRec[key]);
    const inFile = fileValue !== undefined && !sameJson(fileValue, defaultValue);
    const view: SettingView = {
      key,
      secret: false,
      value: shownValue(key, effRec[key]),
      source: inStore ? 'store' : inFile ? 'config.yaml' : 'default',
      restartOnly: (RESTART_ONLY_KEYS as readonly string[]).includes(key),
      overridden: inStore && inFile,
      storable: storable.has(key),
    };
    if (inFile) view.fileValue = fileValue;
    if (inStore) view.storeValue = stored[key];
    if (defaultValue !== undefined) view.defaultValue = defaultValue;
    return view;
  });
}

/** `alerts` as shown: each URL masked (its path and userinfo may hold a webhook's secret). */
function shownValue(key: string, value: unknown): unknown {
  if (key !== 'alerts' || !Array.isArray(value)) return value;
  return value.map((t: { url?: unknown }) => (typeof t?.url === 'string' ? { ...t, url: maskAlertUrl(t.url) } : t));
}

export interface BackendViewInputs {
  file: readonly BackendSpec[];
  stored: readonly BackendSpec[];
  effective: readonly BackendSpec[];
  registry: BackendRegistry;
  snapshot: SchedulerSnapshot;
  inventory: (name: string) => MediaInventory | undefined;
}

export function sourceOf(
  name: string,
  file: readonly BackendSpec[],
  stored: readonly BackendSpec[],
): BackendSource | undefined {
  const inFile = file.some((b) => b.name === name);
  const inStore = stored.some((b) => b.name === name);
  return inFile && inStore ? 'both' : inFile ? 'config.yaml' : inStore ? 'store' : undefined;
}

/** Every effective backend, in fleet order, with its live state. */
export function backendsView(v: BackendViewInputs): BackendView[] {
  const slots = new Map(v.snapshot.backends.map((s) => [s.name, s]));
  return v.effective.map((spec) => {
    const source = sourceOf(spec.name, v.file, v.stored) ?? 'config.yaml';
    const live = v.registry.get(spec.name);
    const slot = slots.get(spec.name);
    const view: BackendView = {
      name: spec.name,
      type: spec.type,
      source,
      spec: maskSpec(spec),
      enabled: spec.enabled,
      known: live?.known ?? false,
      healthy: live?.healthy ?? false,
      models: live?.models.length ?? 0,
      modelIds: live?.models.map((m) => m.id) ?? [],
      inflight: slot?.inflight ?? 0,
      cap: live?.cap ?? slot?.cap ?? 0,
      draining: live?.draining ?? false,
      available: slot?.available ?? false,
      paid: spec.paid,
    };
    if (source === 'both') view.fileSpec = maskSpec(v.file.find((b) => b.name === spec.name)!);
    if (live?.error) view.error = live.error;
    if (live?.discoveredAt !== undefined) view.discoveredAt = live.discoveredAt;
    if (slot?.speed !== undefined) view.speed = slot.speed;
    if (spec.gpu_group) view.group = spec.gpu_group;
    const inv = kindOf(spec).isMedia ? v.inventory(spec.name) : undefined;
    if (inv) view.inventory = inventoryCounts(inv);
    if (live?.keys) view.keys = live.keys.states(v.registry.now());
    if (live?.resting) view.resting = { ...live.resting };
    if (kindOf(spec).pricedPerToken) view.prices = pricingReport(spec, live?.models ?? []);
    return view;
  });
}
