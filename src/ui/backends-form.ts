/**
 * The backend form: what the browser posts (strings, checkboxes) turned into the JSON a
 * backend is saved as through services.admin, and a backend's spec turned back into form values.
 * Only reading happens here; the rules are the config validator's: a number that does not
 * parse is passed on as typed, so the validator names it (decimal comma accepted: "0,5").
 * The API key is write-only: never put back into the form.
 */
import type { ConfigProblem } from '../config/problems.ts';
import type { BackendType } from '../config/types.ts';
import type { MaskedBackendSpec } from '../admin/config-service.ts';
import { ALL_TYPES, FIELDS, FIELD_KEYS, type FieldMeta } from './backends-fields.ts';
import { one, type FormBody } from './form-values.ts';

/** The form as typed: strings for inputs, booleans for checkboxes. Never holds the key. */
export type BackendForm = Record<string, string | boolean>;

export type { FormBody };

export interface ReadBackend {
  form: BackendForm;
  /** The body for ConfigService.saveBackend / testBackend. */
  input: Record<string, unknown>;
  /** What could not even be read (JSON that does not parse), by field. */
  problems: ConfigProblem[];
  /** A new key was typed (it must be typed again if the form is refused). */
  typedKey: boolean;
}

export function typeOf(value: unknown): BackendType {
  return (ALL_TYPES as readonly unknown[]).includes(value) ? (value as BackendType) : 'openai';
}

export function emptyForm(type: BackendType = 'openai'): BackendForm {
  const form: BackendForm = {};
  for (const f of FIELDS) form[f.key] = f.kind === 'check' ? false : '';
  form.type = type;
  form.enabled = true;
  form.api_key_clear = false;
  return form;
}

/** A backend's spec (key masked) as form values. */
export function formOf(spec: MaskedBackendSpec): BackendForm {
  const form = emptyForm(spec.type);
  const rec = spec as unknown as Record<string, unknown>;
  for (const f of FIELDS) {
    const v = rec[f.key];
    if (f.kind === 'secret' || v === undefined || v === null) continue;
    if (f.kind === 'check') form[f.key] = v === true;
    else if (f.kind === 'lines') form[f.key] = Array.isArray(v) ? v.join('\n') : String(v);
    else if (f.kind === 'json') form[f.key] = JSON.stringify(v, null, 2);
    else form[f.key] = String(v);
  }
  return form;
}

const checked = (body: FormBody, key: string) => ['on', 'true', '1'].includes(one(body, key));

/** "0,5" → 0.5, "12" → 12; anything else stays the string typed (the validator says why). */
export function parseNumber(raw: string): number | string {
  const s = raw.trim().replace(/\s+/g, '');
  const normal = /^[+-]?(\d+([.,]\d*)?|[.,]\d+)$/.test(s) ? s.replace(',', '.') : s;
  const n = Number(normal);
  return normal !== '' && Number.isFinite(n) ? n : raw.trim();
}

/** Reads a posted backend form. */
export function readBackendForm(body: FormBody): ReadBackend {
  const form = emptyForm();
  const input: Record<string, unknown> = {};
  const problems: ConfigProblem[] = [];
  let typedKey = false;
  for (const f of FIELDS) readField(f, body, form, input, problems);
  const key = one(body, 'api_key').trim();
  const clear = checked(body, 'api_key_clear');
  form.api_key_clear = clear;
  if (key && clear)
    problems.push({ path: 'api_key', message: 'either type a new key or clear the one in force, not both' });
  if (key) {
    input.api_key = key;
    typedKey = true;
  } else if (clear) input.api_key = { clear: true };
  return { form, input, problems, typedKey };
}

function readField(
  f: FieldMeta,
  body: FormBody,
  form: BackendForm,
  input: Record<string, unknown>,
  problems: ConfigProblem[],
): void {
  if (f.kind === 'secret') return;
  if (f.kind === 'check') {
    const on = checked(body, f.key);
    form[f.key] = on;
    if (f.explicit || on) input[f.key] = on;
    return;
  }
  const raw = one(body, f.key);
  form[f.key] = raw;
  const text = raw.trim();
  if (f.key === 'name' || f.key === 'url') {
    input[f.key] = text;
    return;
  }
  if (f.key === 'type') {
    input.type = text || 'openai';
    form.type = text || 'openai';
    return;
  }
  if (!text) return;
  if (f.kind === 'number') input[f.key] = parseNumber(text);
  else if (f.kind === 'lines') {
    const list = text
      .split(/[\n,]/)
      .map((s) => s.trim())
      .filter(Boolean);
    if (list.length) input[f.key] = list;
  } else if (f.kind === 'json') {
    try {
      input[f.key] = JSON.parse(text);
    } catch (err) {
      problems.push({
        path: f.key,
        message: `is not valid JSON (${(err as Error).message.replace(/^JSON\.parse: /, '')})`,
      });
      input[f.key] = text; // refused by the validator too: nothing can be saved
    }
  } else input[f.key] = text;
}

/**
 * Problems as field → message for the template: a path inside a field (`sampling_defaults.model`)
 * goes to that field; one about the rest of the configuration (an alias naming the old name)
 * to `_form`, with its path. Our own reading problems win over the validator's for a field.
 */
export function errorsOf(
  problems: readonly ConfigProblem[],
  own: readonly ConfigProblem[] = [],
): Record<string, string> {
  const errors: Record<string, string[]> = {};
  const add = (field: string, message: string) => {
    (errors[field] ??= []).includes(message) || errors[field].push(message);
  };
  const ownFields = new Set(own.map((p) => fieldOf(p.path)));
  for (const p of own) add(fieldOf(p.path) ?? '_form', p.message);
  for (const p of problems) {
    const field = fieldOf(p.path);
    if (field && ownFields.has(field)) continue;
    if (field)
      add(field, p.path === field ? p.message : `${p.path.slice(field.length).replace(/^\./, '')}: ${p.message}`);
    else add('_form', p.path ? `${p.path}: ${p.message}` : p.message);
  }
  return Object.fromEntries(Object.entries(errors).map(([k, v]) => [k, v.join('; ')]));
}

/** Our own reading problems, then the service's on the other fields (a field we could not read has only ours). */
export function withOwn(own: readonly ConfigProblem[], problems: readonly ConfigProblem[]): ConfigProblem[] {
  const ownFields = new Set(own.flatMap((p) => fieldOf(p.path) ?? []));
  return [
    ...own,
    ...problems.filter((p) => {
      const field = fieldOf(p.path);
      return field === undefined || !ownFields.has(field);
    }),
  ];
}

function fieldOf(path: string): string | undefined {
  const head = path.split(/[.[]/)[0];
  return FIELD_KEYS.has(head) ? head : undefined;
}

/**
 * For the page: which kinds of backend show a field. A value set on another kind stays visible, so
 * saving never drops it unseen.
 */
export function shownFor(f: FieldMeta, form: BackendForm): string {
  const type = typeOf(form.type);
  const v = form[f.key];
  const set = v === true || (typeof v === 'string' && v.trim() !== '');
  return (set && !f.types.includes(type) ? [...f.types, type] : f.types).join(' ');
}
