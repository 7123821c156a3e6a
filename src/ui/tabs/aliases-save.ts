/**
 * Saving a change that spans several settings (an alias is a `virtual_models` entry, its
 * `alias_park` seconds and its `alias_defaults`): all or nothing. Every changed setting is
 * first checked with the function `ConfigService.setSetting` itself validates with
 * (`validateSetting`, config.yaml's rules, against the backends in force), so every problem of
 * the form is found at once and nothing is written while one remains; then each is written
 * through `gateway.admin.setSetting` (stored and applied live). Unchanged settings are not
 * written (a config.yaml value does not become a store override by being looked at).
 */
import type { Result } from '../../admin/config-service.ts';
import type { ConfigProblem } from '../../config/problems.ts';
import { createConfigValidator, type ConfigValidator } from '../../config/schema.ts';
import { validateSetting } from '../../config/settings-validate.ts';
import type { Gateway } from '../../gateway.ts';

let shared: ConfigValidator | undefined;

/** One compiled validator for the console's dry runs (compiling is the costly part). */
function validator(): ConfigValidator {
  shared ??= createConfigValidator();
  return shared;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** The settings of `next` that differ from the configuration in force. */
export function changedSettings(gateway: Gateway, next: Record<string, unknown>): [string, unknown][] {
  const cfg = gateway.config() as unknown as Record<string, unknown>;
  return Object.entries(next).filter(([key, value]) => !same(cfg[key], value));
}

/** Writes every setting of `next` that changed, or none of them. */
export function saveSettings(gateway: Gateway, next: Record<string, unknown>): Result {
  const changes = changedSettings(gateway, next);
  if (changes.length === 0) return { ok: true, note: 'nothing changed' };
  const backends = gateway.config().backends;
  const problems: ConfigProblem[] = [];
  for (const [key, value] of changes) {
    const checked = validateSetting(validator(), key, value, backends);
    if (!checked.ok) problems.push(...checked.problems);
  }
  if (problems.length) return { ok: false, problems };

  const before = new Map(changes.map(([key]) => [key, gateway.admin.settingView(key)]));
  const done: string[] = [];
  for (const [key, value] of changes) {
    const result = gateway.admin.setSetting(key, value);
    if (!result.ok) {
      // cannot happen after the dry run (the same rules, nothing in between); never leave half of it
      for (const k of done.reverse()) {
        const view = before.get(k);
        const stored = view && !view.secret ? view.storeValue : undefined;
        if (stored === undefined) gateway.admin.resetSetting(k);
        else gateway.admin.setSetting(k, stored);
      }
      return result;
    }
    done.push(key);
  }
  return { ok: true };
}
