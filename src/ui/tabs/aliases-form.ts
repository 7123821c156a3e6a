/**
 * The alias form of the console: what the browser posts (strings, repeated backend / model
 * rows) read into one alias — its `virtual_models` target, `alias_park` seconds and
 * `alias_defaults` entry — and back. Only reading happens here (a number that is no number,
 * JSON that does not parse, a JSON key that has its own input); whether the values are valid
 * is config.yaml's validation, whose problem paths (`virtual_models.fast.gpu1`) are mapped back
 * to the fields they are about.
 */
import { childPath, type ConfigProblem } from '../../config/problems.ts';
import type { AliasDefaults, GatewayConfig, VirtualModel } from '../../config/types.ts';
import { isObject } from '../../json.ts';
import { one, type FormBody } from '../form-values.ts';

/** The samplers with an input of their own, in the order of the form. */
export const SAMPLERS = [
  'temperature',
  'top_p',
  'top_k',
  'min_p',
  'repetition_penalty',
  'presence_penalty',
  'frequency_penalty',
] as const;
export type Sampler = (typeof SAMPLERS)[number];
const INTEGER_SAMPLERS: ReadonlySet<string> = new Set(['top_k']);
const SAMPLER_SET: ReadonlySet<string> = new Set(SAMPLERS);

export const SAMPLER_HINTS: Record<Sampler, string> = {
  temperature: 'e.g. 0.7',
  top_p: 'e.g. 0.8',
  top_k: 'e.g. 20',
  min_p: 'e.g. 0.05',
  repetition_penalty: 'e.g. 1.05',
  presence_penalty: 'e.g. 1.5',
  frequency_penalty: 'e.g. 0',
};

export const REASONING_CHOICES = ['', 'on', 'off', 'auto'] as const;

/** The form as the user typed it (re-rendered as is when refused). */
export interface AliasForm {
  /** The alias's name before this edit ('' for a new one). */
  original: string;
  name: string;
  mode: 'single' | 'map';
  single: string;
  rows: { backend: string; model: string }[];
  park_s: string;
  reasoning: string;
  sampling: Record<Sampler, string>;
  sampling_json: string;
  voice: string;
}

export interface AliasValue {
  name: string;
  target: VirtualModel;
  park?: number;
  defaults?: AliasDefaults;
}

export type { FormBody };
export type FieldErrors = Record<string, string>;

/** Blank rows shown under the filled ones (without script, the way to add a backend). */
const SPARE_ROWS = 1;

const blankSampling = (): Record<Sampler, string> =>
  Object.fromEntries(SAMPLERS.map((s) => [s, ''])) as Record<Sampler, string>;

export function emptyForm(pattern = false): AliasForm {
  return {
    original: '',
    name: '',
    mode: pattern ? 'single' : 'map',
    single: '',
    rows: [{ backend: '', model: '' }],
    park_s: '',
    reasoning: '',
    sampling: blankSampling(),
    sampling_json: '',
    voice: '',
  };
}

/** The form of an alias in force. */
export function formOf(cfg: GatewayConfig, name: string): AliasForm | undefined {
  if (!Object.hasOwn(cfg.virtual_models, name)) return undefined;
  const target = cfg.virtual_models[name];
  const defaults = Object.hasOwn(cfg.alias_defaults, name) ? cfg.alias_defaults[name] : undefined;
  const sampling = blankSampling();
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(defaults?.sampling_defaults ?? {})) {
    if (SAMPLER_SET.has(k) && typeof v === 'number') sampling[k as Sampler] = String(v);
    else rest[k] = v;
  }
  const rows = typeof target === 'string' ? [] : Object.entries(target).map(([backend, model]) => ({ backend, model }));
  for (let i = 0; i < SPARE_ROWS; i++) rows.push({ backend: '', model: '' });
  return {
    original: name,
    name,
    mode: typeof target === 'string' ? 'single' : 'map',
    single: typeof target === 'string' ? target : '',
    rows,
    park_s: Object.hasOwn(cfg.alias_park, name) ? String(cfg.alias_park[name]) : '',
    reasoning: defaults?.reasoning ?? '',
    sampling,
    sampling_json: Object.keys(rest).length ? JSON.stringify(rest, null, 2) : '',
    voice: defaults?.voice ?? '',
  };
}

function all(raw: FormBody, name: string): string[] {
  const v = raw?.[name];
  return (Array.isArray(v) ? v : [v]).map((x) => (typeof x === 'string' ? x : ''));
}

/**
 * A number as people type it: "0,7" is 0.7 (a decimal comma), "1e-3" is fine, blank is null;
 * text that is no number is undefined.
 */
export function readDecimal(text: string): number | null | undefined {
  let t = text.trim().replace(/\s+/g, '');
  if (t === '') return null;
  if (!t.includes('.') && (t.match(/,/g) ?? []).length === 1) t = t.replace(',', '.');
  if (!/^[+-]?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$/i.test(t)) return undefined;
  const n = Number(t);
  return Number.isFinite(n) ? n : undefined;
}

export interface ReadAlias {
  form: AliasForm;
  /** Set when everything could be read (config validation is still to come). */
  value?: AliasValue;
  errors: FieldErrors;
}

export function readAliasForm(raw: FormBody): ReadAlias {
  const backends = all(raw, 'map_backend');
  const models = all(raw, 'map_model');
  const rows = backends.map((backend, i) => ({ backend: backend.trim(), model: (models[i] ?? '').trim() }));
  const sampling = blankSampling();
  for (const s of SAMPLERS) sampling[s] = one(raw, `s_${s}`).trim();
  const form: AliasForm = {
    original: one(raw, 'original'),
    name: one(raw, 'name').trim(),
    mode: one(raw, 'mode') === 'single' ? 'single' : 'map',
    single: one(raw, 'single').trim(),
    rows: rows.length ? rows : [{ backend: '', model: '' }],
    park_s: one(raw, 'park_s').trim(),
    reasoning: one(raw, 'reasoning'),
    sampling,
    sampling_json: one(raw, 'sampling_json').replace(/\r\n/g, '\n').trim(),
    voice: one(raw, 'voice').trim(),
  };
  const errors: FieldErrors = {};
  if (!form.name) errors.name = 'Give the alias a name (what clients send as "model").';
  else if (form.name === '__proto__')
    errors.name = '“__proto__” cannot be the key of a table in this gateway: pick another name.';

  let target: VirtualModel;
  if (form.mode === 'single') target = form.single;
  else {
    const map: Record<string, string> = {};
    form.rows.forEach((r, i) => {
      if (!r.backend && !r.model) return;
      if (!r.backend) errors[`map.${i}.backend`] = 'Pick the backend that serves this model.';
      else if (r.backend === '__proto__')
        errors[`map.${i}.backend`] = '“__proto__” cannot be the key of a table in this gateway.';
      else if (Object.hasOwn(map, r.backend))
        errors[`map.${i}.backend`] = `${r.backend} is mapped above already: one model per backend.`;
      else map[r.backend] = r.model;
    });
    target = map;
  }

  let park: number | undefined;
  const parkRead = readDecimal(form.park_s);
  if (parkRead === undefined) errors.park_s = 'Seconds, like 30 or 2,5; blank for the global park timeout.';
  else if (parkRead !== null) park = parkRead;

  if (!(REASONING_CHOICES as readonly string[]).includes(form.reasoning))
    errors.reasoning = 'Pick on, off, auto, or no default.';

  const samplingDefaults: Record<string, unknown> = {};
  for (const s of SAMPLERS) {
    const n = readDecimal(form.sampling[s]);
    if (n === undefined)
      errors[`sampling.${s}`] = `A number, like ${SAMPLER_HINTS[s].slice(5)}; a decimal comma is fine.`;
    else if (n !== null && INTEGER_SAMPLERS.has(s) && !Number.isInteger(n)) errors[`sampling.${s}`] = 'A whole number.';
    else if (n !== null) samplingDefaults[s] = n;
  }
  if (form.sampling_json) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(form.sampling_json);
    } catch (err) {
      errors.sampling_json = `Not valid JSON: ${(err as Error).message}.`;
    }
    if (parsed !== undefined && !isObject(parsed))
      errors.sampling_json = 'A JSON object of request fields, like {"seed": 42}.';
    else if (parsed !== undefined) {
      const own = Object.keys(parsed).filter((k) => SAMPLER_SET.has(k));
      if (own.length) {
        errors.sampling_json =
          `${own.map((k) => `"${k}"`).join(', ')} ` +
          `${own.length === 1 ? 'has its own input' : 'have their own inputs'} above: set ` +
          `${own.length === 1 ? 'it' : 'them'} there, not here.`;
      } else Object.assign(samplingDefaults, parsed);
    }
  }

  if (Object.keys(errors).length) return { form, errors };
  const defaults: AliasDefaults = {};
  if (form.reasoning) defaults.reasoning = form.reasoning as AliasDefaults['reasoning'];
  if (Object.keys(samplingDefaults).length) defaults.sampling_defaults = samplingDefaults;
  if (form.voice) defaults.voice = form.voice;
  const value: AliasValue = { name: form.name, target };
  if (park !== undefined) value.park = park;
  if (Object.keys(defaults).length) value.defaults = defaults;
  return { form, value, errors };
}

/** `table` with `name` set to `value` (undefined: removed), `replacing` dropped; the key keeps its place. */
export function withEntry<T>(
  table: Readonly<Record<string, T>>,
  name: string,
  value: T | undefined,
  replacing?: string,
): Record<string, T> {
  const out: Record<string, T> = {};
  let placed = false;
  for (const [k, v] of Object.entries(table)) {
    if (k === name || (replacing !== undefined && k === replacing)) {
      if (!placed && value !== undefined) out[name] = value;
      placed = true;
      continue;
    }
    out[k] = v;
  }
  if (!placed && value !== undefined) out[name] = value;
  return out;
}

/** The three settings after saving `value` (over `original` when renaming). */
export function tablesWith(
  cfg: GatewayConfig,
  value: AliasValue,
  original: string,
): Pick<GatewayConfig, 'virtual_models' | 'alias_park' | 'alias_defaults'> {
  const replacing = original && original !== value.name ? original : undefined;
  return {
    virtual_models: withEntry(cfg.virtual_models, value.name, value.target, replacing),
    alias_park: withEntry(cfg.alias_park, value.name, value.park, replacing),
    alias_defaults: withEntry(cfg.alias_defaults, value.name, value.defaults, replacing),
  };
}

/** The three settings with `name` gone. */
export function tablesWithout(
  cfg: GatewayConfig,
  name: string,
): Pick<GatewayConfig, 'virtual_models' | 'alias_park' | 'alias_defaults'> {
  return {
    virtual_models: withEntry<VirtualModel>(cfg.virtual_models, name, undefined),
    alias_park: withEntry<number>(cfg.alias_park, name, undefined),
    alias_defaults: withEntry<AliasDefaults>(cfg.alias_defaults, name, undefined),
  };
}

/**
 * A problem of config validation as a field of the form: `virtual_models.<alias>.<backend>`
 * is that backend's row, `alias_defaults.<alias>.sampling_defaults.top_k` its input, a key
 * without an input of its own the JSON box. Anything else is the whole form's.
 */
export function fieldOf(p: ConfigProblem, form: AliasForm): string {
  const alias = form.name;
  const vm = childPath('virtual_models', alias);
  const defaults = childPath('alias_defaults', alias);
  const sampling = childPath(defaults, 'sampling_defaults');
  if (p.path === vm) return form.mode === 'single' ? 'single' : 'map';
  if (form.mode === 'map') {
    const i = form.rows.findIndex((r) => r.backend && childPath(vm, r.backend) === p.path);
    if (i >= 0) return /names no backend/.test(p.message) ? `map.${i}.backend` : `map.${i}.model`;
  }
  if (p.path === childPath('alias_park', alias)) return 'park_s';
  if (p.path === childPath(defaults, 'reasoning')) return 'reasoning';
  if (p.path === childPath(defaults, 'voice')) return 'voice';
  for (const s of SAMPLERS) if (p.path === childPath(sampling, s)) return `sampling.${s}`;
  if (p.path === sampling || p.path.startsWith(`${sampling}.`) || p.path.startsWith(`${sampling}[`))
    return 'sampling_json';
  return '_form';
}

/** Problems as the page's errors (field → message, the first per field); whole-form ones keep their path. */
export function errorsOf(problems: readonly ConfigProblem[], form: AliasForm): FieldErrors {
  const errors: FieldErrors = {};
  for (const p of problems) {
    const field = fieldOf(p, form);
    const message = field === '_form' ? `${p.path}: ${p.message}` : sentence(p.message);
    errors[field] = errors[field] && field === '_form' ? `${errors[field]}; ${message}` : (errors[field] ?? message);
  }
  return errors;
}

/** A validation message as a sentence for the form ("names no backend …" → "Names no backend …."). */
export function sentence(message: string): string {
  const s = message.charAt(0).toUpperCase() + message.slice(1);
  return /[.!?)]$/.test(s) ? s : `${s}.`;
}
