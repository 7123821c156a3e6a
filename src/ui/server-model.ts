/**
 * The server tab's view of the runtime settings: services.admin.settingsView() grouped for
 * people, each with what it does, the value in force shown in words, where it comes from, and
 * the input to change it, its kind chosen from config.yaml's schema (a choice for an enum or a
 * boolean, a text box for a number, lines for a list, a JSON box for the rest; none for a
 * string, the master key, or what only config.yaml sets). `parseSetting` reads the posted text:
 * a number that does not parse (decimal comma accepted) is passed on as typed so the validator
 * names it, while a JSON box that is not JSON is refused here; every other rule is the
 * validator's. Settings owned by other tabs (aliases, reasoning rules, generation aliases,
 * `ELSEWHERE`) are shown with their source and a link there; the tab refuses to change them.
 * The words for each setting and the groups are server-settings.ts'.
 */
import { prettyJson } from './format.ts';
import type { SecretSettingView, SettingView } from '../admin/config-service.ts';
import { configSchema } from '../config/schema.ts';
import { parseNumber } from './backends-form.ts';
import { APART, ELSEWHERE, GROUPS, INFO } from './server-settings.ts';

export type InputKind = 'number' | 'bool' | 'enum' | 'lines' | 'proxy' | 'json' | 'none';

export interface SettingRow {
  key: string;
  label: string;
  help: string;
  unit?: string;
  input: InputKind;
  options: string[];
  min?: number;
  integer: boolean;
  /** The value in force, in words. */
  shown: string;
  /** What the input holds (the typed text when refused). */
  text: string;
  source: SettingView['source'];
  /** Where the value comes from, in a sentence. */
  origin: string;
  overridden: boolean;
  restartOnly: boolean;
  storable: boolean;
  /** A store value exists: reset goes back to config.yaml or the default. */
  resettable: boolean;
  elsewhere?: { tab: string; path: string };
  error?: string;
}

export interface ServerModel {
  groups: { id: string; title: string; rows: SettingRow[] }[];
  elsewhere: SettingRow[];
  stored: number;
}

type AnyView = SettingView | SecretSettingView;
type PropSchema = { type?: string | string[]; enum?: unknown[]; minimum?: number; exclusiveMinimum?: number };

function schemaOf(key: string): PropSchema {
  return (configSchema.properties as unknown as Record<string, PropSchema>)[key] ?? {};
}

export function inputOf(key: string): InputKind {
  if (key === 'trust_proxy') return 'proxy';
  const s = schemaOf(key);
  if (s.enum) return 'enum';
  const t = Array.isArray(s.type) ? s.type[0] : s.type;
  if (t === 'number' || t === 'integer') return 'number';
  if (t === 'boolean') return 'bool';
  if (t === 'array' && key === 'cors_origins') return 'lines';
  if (t === 'string') return 'none';
  return 'json';
}

/** A value for people: on/off, a number with its unit, a list, JSON for the rest. */
export function showValue(value: unknown, unit?: string): string {
  if (value === undefined || value === null) return 'not set';
  if (typeof value === 'boolean') return value ? 'on' : 'off';
  if (typeof value === 'number') return unit ? `${value} ${unit}` : String(value);
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((v) => typeof v === 'string'))
    return value.length ? value.join(', ') : 'none';
  if (typeof value === 'object' && Object.keys(value).length === 0) return 'none';
  const json = prettyJson(value, 0);
  return json.length > 160 ? `${json.slice(0, 157)}…` : json;
}

/** The input's text for a value. */
export function textOf(value: unknown, input: InputKind): string {
  if (value === undefined || value === null) return '';
  if (input === 'lines') return Array.isArray(value) ? value.join('\n') : String(value);
  if (input === 'proxy') return Array.isArray(value) ? value.join(', ') : String(value);
  if (input === 'json') return prettyJson(value);
  return String(value);
}

/** What a posted text means for `key`; a JSON box that does not parse is a problem of ours. */
export function parseSetting(key: string, raw: string): { ok: true; value: unknown } | { ok: false; message: string } {
  const input = inputOf(key);
  const text = raw.trim();
  switch (input) {
    case 'number':
      return { ok: true, value: text === '' ? raw : parseNumber(text) };
    case 'bool':
      return { ok: true, value: text === 'true' ? true : text === 'false' ? false : text };
    // a choice among mixed values (expose_backend_names: auto, true, false) posts the one named
    case 'enum':
      return { ok: true, value: schemaOf(key).enum!.find((option) => String(option) === text) ?? text };
    case 'lines':
      return {
        ok: true,
        value: text
          .split(/[\n,]/)
          .map((s) => s.trim())
          .filter(Boolean),
      };
    case 'proxy': {
      if (text === 'true' || text === 'false') return { ok: true, value: text === 'true' };
      const list = text
        .split(/[\n,]/)
        .map((s) => s.trim())
        .filter(Boolean);
      return { ok: true, value: list.length > 1 ? list : (list[0] ?? '') };
    }
    case 'json':
      try {
        return { ok: true, value: JSON.parse(text) };
      } catch (err) {
        return { ok: false, message: `is not valid JSON (${(err as Error).message})` };
      }
    default:
      return { ok: true, value: text };
  }
}

function originOf(v: AnyView, unit?: string): string {
  if (v.secret) {
    if (v.source === 'store') return v.overridden ? "The store overrides config.yaml's api_key." : 'Set in the store.';
    return v.source === 'config.yaml' ? 'Set in config.yaml.' : 'None set: the gateway is open unless users exist.';
  }
  const def = v.defaultValue !== undefined ? showValue(v.defaultValue, unit) : undefined;
  if (v.source === 'store') {
    if (v.overridden) return `The store overrides config.yaml's ${showValue(v.fileValue, unit)}.`;
    return `Set in the console (the store)${def !== undefined ? `; the default is ${def}` : ''}.`;
  }
  if (v.source === 'config.yaml') return `From config.yaml${def !== undefined ? ` (the default is ${def})` : ''}.`;
  return 'The built-in default.';
}

function rowOf(v: AnyView, typed: Record<string, string>, errors: Record<string, string>): SettingRow {
  const info = INFO[v.key] ?? { label: v.key, help: '' };
  const s = schemaOf(v.key);
  const input = v.secret || !v.storable || ELSEWHERE[v.key] ? 'none' : inputOf(v.key);
  const value = v.secret ? undefined : v.value;
  const row: SettingRow = {
    key: v.key,
    label: info.label,
    help: info.help,
    input,
    options: (s.enum ?? (input === 'bool' ? [true, false] : [])).map(String),
    integer: s.type === 'integer',
    shown: v.secret ? (v.set ? 'set' : 'not set') : showValue(value, info.unit),
    text: Object.hasOwn(typed, v.key) ? typed[v.key] : textOf(value, input),
    source: v.source,
    origin: originOf(v, info.unit),
    overridden: v.overridden,
    restartOnly: v.restartOnly,
    storable: v.storable,
    resettable: v.source === 'store' && !ELSEWHERE[v.key] && !v.secret,
  };
  if (info.unit) row.unit = info.unit;
  const min = s.minimum ?? s.exclusiveMinimum;
  if (min !== undefined) row.min = min;
  if (ELSEWHERE[v.key]) row.elsewhere = ELSEWHERE[v.key];
  if (errors[v.key]) row.error = errors[v.key];
  return row;
}

export function serverModel(
  views: readonly AnyView[],
  typed: Record<string, string> = {},
  errors: Record<string, string> = {},
): ServerModel {
  const byKey = new Map(views.map((v) => [v.key, v]));
  const placed = new Set<string>(APART);
  const groups = GROUPS.map((g) => ({
    id: g.id,
    title: g.title,
    rows: g.keys.flatMap((k) => {
      const v = byKey.get(k);
      if (!v) return [];
      placed.add(k);
      return [rowOf(v, typed, errors)];
    }),
  }));
  const elsewhere = views
    .filter((v) => ELSEWHERE[v.key])
    .map((v) => {
      placed.add(v.key);
      return rowOf(v, typed, errors);
    });
  // a key added to config.yaml later still shows up (as JSON), never silently missing
  const rest = views.filter((v) => !placed.has(v.key)).map((v) => rowOf(v, typed, errors));
  if (rest.length) groups.push({ id: 'other', title: 'Other', rows: rest });
  return {
    groups: groups.filter((g) => g.rows.length),
    elsewhere,
    stored: views.filter((v) => v.source === 'store').length,
  };
}

/** `gpu_groups.gpu1.max_concurrent: must be…` → the setting's field, its inner path kept. */
export function settingErrors(
  key: string,
  problems: readonly { path: string; message: string }[],
): Record<string, string> {
  const text = problems.map((p) =>
    p.path === key || !p.path ? p.message : `${p.path.replace(new RegExp(`^${key}\\.?`), '')}: ${p.message}`,
  );
  return { [key]: text.join('; ') };
}
