/**
 * Saving a change that spans several settings (an alias is a `virtual_models` entry, its
 * `alias_park` seconds and its `alias_defaults`): all or nothing, through
 * `ConfigService.setSettings`. Unchanged settings are not written (a config.yaml value does
 * not become a store override by being looked at).
 */
import type { Result } from '../../admin/config-service.ts';
import type { UiServices } from '../services.ts';

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** The settings of `next` that differ from the configuration in force. */
export function changedSettings(services: UiServices, next: Record<string, unknown>): [string, unknown][] {
  const cfg = services.config() as unknown as Record<string, unknown>;
  return Object.entries(next).filter(([key, value]) => !same(cfg[key], value));
}

/** Writes every setting of `next` that changed, or none of them (ConfigService.setSettings). */
export function saveSettings(services: UiServices, next: Record<string, unknown>): Result {
  const changes = changedSettings(services, next);
  if (changes.length === 0) return { ok: true, note: 'nothing changed' };
  return services.admin.setSettings(Object.fromEntries(changes));
}
