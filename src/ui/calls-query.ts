/**
 * The LLM calls tab's filter: the query string as typed (kept for the form), the call-log
 * filter it means, and a message per field that does not parse. Times are UTC, as the table
 * shows them. Pure.
 */
import type { CallQuery } from '../stats/call-log.ts';

/** Rows per page. */
export const CALLS_PAGE = 50;

/** The filter's fields as the form sends them (always strings, '' when blank). */
export interface CallsInput {
  status: string;
  backend: string;
  model: string;
  source: string;
  since: string;
  until: string;
  beforeId: string;
}

export const CALLS_FIELDS = [
  'status',
  'backend',
  'model',
  'source',
  'since',
  'until',
  'beforeId',
] as const satisfies readonly (keyof CallsInput)[];

export interface ParsedCalls {
  input: CallsInput;
  /** Null when a field is refused (`errors` says which). */
  filter: Omit<CallQuery, 'beforeTs' | 'limit'> | null;
  errors: Record<string, string>;
}

const MAX_TEXT = 200;

export function parseCallsQuery(query: unknown): ParsedCalls {
  const raw = (query && typeof query === 'object' ? query : {}) as Record<string, unknown>;
  const input = Object.fromEntries(CALLS_FIELDS.map((k) => [k, oneString(raw[k]).trim()])) as unknown as CallsInput;
  const errors: Record<string, string> = {};
  const filter: Omit<CallQuery, 'beforeTs' | 'limit'> = {};

  if (input.status) {
    const cls = /^([1-5])xx$/i.exec(input.status);
    if (cls) filter.statusClass = Number(cls[1]);
    else if (/^[1-5]\d\d$/.test(input.status)) filter.status = Number(input.status);
    else errors.status = 'A status code (404) or a class: 2xx, 4xx or 5xx.';
  }
  for (const k of ['backend', 'model', 'source'] as const) {
    if (input[k].length > MAX_TEXT) errors[k] = `At most ${MAX_TEXT} characters.`;
    else if (input[k]) filter[k] = input[k];
  }
  for (const k of ['since', 'until'] as const) {
    if (!input[k]) continue;
    const t = parseUtcTime(input[k]);
    if (t === undefined) errors[k] = `"${input[k].slice(0, 40)}" is not a date and time (UTC) like 2026-03-15 14:30.`;
    else filter[k] = t;
  }
  if (filter.since !== undefined && filter.until !== undefined && filter.since >= filter.until) {
    errors.until = 'Must be after "From".';
  }
  if (input.beforeId) {
    if (/^\d{1,15}$/.test(input.beforeId) && Number(input.beforeId) > 0) filter.beforeId = Number(input.beforeId);
    else errors.beforeId = 'Not a page of this list: start from the newest calls.';
  }
  return { input, filter: Object.keys(errors).length ? null : filter, errors };
}

/**
 * A time as typed or linked, in UTC: `YYYY-MM-DD`, `YYYY-MM-DD HH:MM[:SS]` (or with `T`, as a
 * datetime-local input sends it), ISO 8601 with a zone, or unix milliseconds.
 */
export function parseUtcTime(text: string): number | undefined {
  const s = text.trim();
  if (/^\d{10,15}$/.test(s)) return Number(s);
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?)?$/.exec(s);
  if (m) {
    const [y, mo, d, h = '0', mi = '0', sec = '0'] = m.slice(1);
    const t = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(sec));
    // Date.UTC rolls 2026-02-30 over into March: refuse what does not read back the same
    const back = new Date(t);
    if (
      back.getUTCDate() !== Number(d) ||
      back.getUTCMonth() !== Number(mo) - 1 ||
      Number(h) > 23 ||
      Number(mi) > 59 ||
      Number(sec) > 59
    )
      return undefined;
    return t;
  }
  if (/^\d{4}-\d{2}-\d{2}T.+(Z|[+-]\d{2}:?\d{2})$/.test(s)) {
    const t = Date.parse(s);
    return Number.isFinite(t) ? t : undefined;
  }
  return undefined;
}

/** A unix-ms time as a datetime-local input shows it (UTC, minutes). */
export function utcInputValue(ms: number): string {
  return new Date(ms).toISOString().slice(0, 16);
}

/** The query string of a filter (blank fields left out), for links that keep it. */
export function callsQueryString(input: Partial<CallsInput>, over: Partial<CallsInput> = {}): string {
  const params = new URLSearchParams();
  for (const k of CALLS_FIELDS) {
    const v = k in over ? over[k] : input[k];
    if (v) params.set(k, v);
  }
  const s = params.toString();
  return s ? `?${s}` : '';
}

function oneString(v: unknown): string {
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && typeof v[0] === 'string') return v[0];
  return '';
}
