/**
 * The one place that decides which configuration the gateway runs on: config.yaml merged
 * with the SQLite store, the store winning per entity.
 */
import { TOP_LEVEL_KEYS } from './schema.ts';
import type { BackendSpec, GatewayConfig } from './types.ts';

/** What the store contributes: settings rows (key → JSON value) and backend rows. */
export interface StoreOverlay {
  settings: Record<string, unknown>;
  backends: BackendSpec[];
}

/**
 * Keys only config.yaml sets: the folders the gateway writes to (never a path from the console or
 * the API), `backends`, and `alerts` (its URLs may hold webhook secrets, which the store's settings
 * would keep in clear).
 */
const FILE_ONLY_KEYS: readonly string[] = ['store_dir', 'jobs_dir', 'backup_dir', 'backends', 'alerts', 'cluster'];

/** Top-level keys a store setting may override: all but the file-only ones. */
export const STORE_SETTING_KEYS: readonly (keyof GatewayConfig)[] = Object.freeze(
  TOP_LEVEL_KEYS.filter((k) => !FILE_ONLY_KEYS.includes(k)),
);

/**
 * Pure merge of the file's configuration with the store:
 * - a store backend replaces the same-named file backend entirely (keeping the file's
 *   position); store-only backends follow the file's, in store order;
 * - a setting whose key is in `STORE_SETTING_KEYS` replaces the file's value as a whole
 *   (so a stored `virtual_models` is the complete alias table); other keys and null values
 *   are ignored;
 * - `store_dir`, `jobs_dir` and `backup_dir` always come from the file.
 * Neither input is mutated.
 */
export function computeEffectiveConfig(file: GatewayConfig, store: StoreOverlay): GatewayConfig {
  const effective: GatewayConfig = { ...file };
  const overrides = effective as unknown as Record<string, unknown>;
  for (const key of STORE_SETTING_KEYS) {
    if (Object.hasOwn(store.settings, key) && store.settings[key] != null) overrides[key] = store.settings[key];
  }
  effective.backends = mergeBackends(file.backends, store.backends);
  return effective;
}

function mergeBackends(fromFile: readonly BackendSpec[], fromStore: readonly BackendSpec[]): BackendSpec[] {
  const stored = new Map(fromStore.map((b) => [b.name, b]));
  const merged = fromFile.map((b) => stored.get(b.name) ?? b);
  const fileNames = new Set(fromFile.map((b) => b.name));
  for (const b of fromStore) if (!fileNames.has(b.name)) merged.push(b);
  return merged;
}
