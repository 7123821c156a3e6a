/**
 * Validating one store setting before it is written (the console, the admin API): the value
 * must be what config.yaml's key of the same name accepts, with the same key paths, checked
 * against the backends the gateway runs on (file and store). `image_models` is checked as a
 * stored value: every entry carries its workflow in `workflow_json` (a relative `workflow`
 * path cannot be resolved from the store; it may stay beside it as a label).
 */
import { STORE_SETTING_KEYS } from './effective.ts';
import type { ConfigProblem } from './problems.ts';
import type { ConfigValidator } from './schema.ts';
import type { BackendSpec, GatewayConfig } from './types.ts';

export type SettingResult = { ok: true; value: unknown } | { ok: false; problems: ConfigProblem[] };

/** `value` validated (defaults filled in) as setting `key`; `value` itself is not mutated. */
export function validateSetting(
  validator: ConfigValidator,
  key: string,
  value: unknown,
  backends: readonly BackendSpec[],
): SettingResult {
  if (!(STORE_SETTING_KEYS as readonly string[]).includes(key)) {
    return { ok: false, problems: [{ path: key, message: 'is not a setting the store may hold' }] };
  }
  const raw: Record<string, unknown> = { [key]: structuredClone(value), backends: structuredClone(backends) };
  const result = validator.validate(raw, { source: 'store' });
  if (result.ok) return { ok: true, value: result.config[key as keyof GatewayConfig] };
  const own = result.problems.filter(
    (p) => p.path === key || p.path.startsWith(`${key}.`) || p.path.startsWith(`${key}[`),
  );
  // a problem elsewhere would be the backends' own (already validated when stored): not this setting's
  return own.length > 0 ? { ok: false, problems: own } : { ok: true, value: (raw as Record<string, unknown>)[key] };
}
