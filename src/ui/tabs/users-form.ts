/**
 * The user form of the console: what the browser posts (strings, repeated `allow` fields, a
 * checkbox) turned into the JSON body the admin API takes, and back. Only reading is done
 * here: the rules are the users service's (its schemas say what is valid), except that a
 * quota which is not a number at all is reported here. Blank quotas mean none; the cost quota
 * takes a decimal comma ("2,50") and a leading "$". A blank share is the default (1), a blank
 * `max_inflight` no cap.
 */
import {
  DEFAULT_USER_SHARE,
  type FieldProblem,
  type NewUser,
  type User,
  type UserPatch,
} from '../../admin/users-service.ts';
import { one, type FormBody } from '../form-values.ts';

/** The form as the user typed it (re-rendered as is when refused). */
export interface UserForm {
  name: string;
  role: string;
  enabled: boolean;
  allow: string[];
  quota_req_day: string;
  quota_cost_month: string;
  share: string;
  max_inflight: string;
  note: string;
}

export type { FormBody };

export function emptyForm(): UserForm {
  return {
    name: '',
    role: 'user',
    enabled: true,
    allow: [],
    quota_req_day: '',
    quota_cost_month: '',
    share: '',
    max_inflight: '',
    note: '',
  };
}

export function formOf(user: User): UserForm {
  return {
    name: user.name,
    role: user.role,
    enabled: user.enabled,
    allow: [...user.allow],
    quota_req_day: user.quota_req_day === null ? '' : String(user.quota_req_day),
    quota_cost_month: user.quota_cost_month === null ? '' : String(user.quota_cost_month),
    share: user.share === DEFAULT_USER_SHARE ? '' : String(user.share),
    max_inflight: user.max_inflight === null ? '' : String(user.max_inflight),
    note: user.note,
  };
}

export interface ReadUser {
  form: UserForm;
  /** The admin API's body (fields that could not be read are left out: their problem is in `problems`). */
  body: UserPatch & { name: string };
  /** A pasted key (create and rotate), never re-rendered. */
  key?: string;
  /** What could not even be read (a quota that is no number). */
  problems: FieldProblem[];
}

export function readUserForm(raw: FormBody): ReadUser {
  const form: UserForm = {
    name: one(raw, 'name').trim(),
    role: one(raw, 'role'),
    enabled: isOn(one(raw, 'enabled')),
    allow: allowOf(raw),
    quota_req_day: one(raw, 'quota_req_day').trim(),
    quota_cost_month: one(raw, 'quota_cost_month').trim(),
    share: one(raw, 'share').trim(),
    max_inflight: one(raw, 'max_inflight').trim(),
    note: one(raw, 'note').replace(/\r\n/g, '\n').trim(),
  };
  const problems: FieldProblem[] = [];
  const body: ReadUser['body'] = {
    name: form.name,
    role: form.role as User['role'],
    enabled: form.enabled,
    allow: form.allow,
    note: form.note,
  };
  const day = readNumber(form.quota_req_day, false);
  if (day === undefined)
    problems.push({ field: 'quota_req_day', message: 'A whole number of requests, or blank for no limit.' });
  else body.quota_req_day = day;
  const cost = readNumber(form.quota_cost_month, true);
  if (cost === undefined)
    problems.push({ field: 'quota_cost_month', message: 'An amount in USD like 2.50 or 2,50, or blank for no limit.' });
  else body.quota_cost_month = cost;
  const share = readNumber(form.share, true);
  if (share === undefined) {
    problems.push({ field: 'share', message: 'A number above 0, like 1, 2 or 0.5; blank for 1.' });
  } else body.share = share ?? DEFAULT_USER_SHARE;
  const cap = readNumber(form.max_inflight, false);
  if (cap === undefined) {
    problems.push({ field: 'max_inflight', message: 'A whole number of calls, or blank for no cap.' });
  } else body.max_inflight = cap;
  const key = one(raw, 'key').trim();
  return { form, body, key: key || undefined, problems };
}

/** The create body: the fields, plus a pasted key when one was given. */
export function newUserOf(read: ReadUser): NewUser {
  return read.key === undefined ? read.body : { ...read.body, key: read.key };
}

function isOn(v: string): boolean {
  return v === 'on' || v === 'true' || v === '1';
}

/**
 * The allow-list: chips and picker choices (repeated `allow`), plus free text (`allow_text`,
 * one entry per line or comma-separated), trimmed, without duplicates, in order.
 */
function allowOf(raw: FormBody): string[] {
  const picked = raw?.allow;
  const values = (Array.isArray(picked) ? picked : [picked]).filter((v): v is string => typeof v === 'string');
  const typed = one(raw, 'allow_text').split(/[\n,]/);
  return [...new Set([...values, ...typed].map((v) => v.trim()).filter(Boolean))];
}

/**
 * null for blank, a number the schema then judges (range, whole or not), or undefined for
 * text that is no number. `decimalComma`: "2,50" is 2.5, "1,234.50" is 1234.5, "$" is dropped.
 */
export function readNumber(text: string, decimalComma: boolean): number | null | undefined {
  let t = text.replace(/[\s_]/g, '');
  if (t === '') return null;
  if (decimalComma) {
    t = t.replace(/^\$/, '');
    if (t.includes(',') && t.includes('.')) t = t.replace(/,/g, '');
    else if ((t.match(/,/g) ?? []).length === 1) t = t.replace(',', '.');
  }
  if (!/^-?(\d+(\.\d*)?|\.\d+)$/.test(t)) return undefined;
  const n = Number(t);
  return Number.isFinite(n) && Math.abs(n) <= Number.MAX_SAFE_INTEGER ? n : undefined;
}

/** Field problems as the page's `errors` (field → message), the first per field. */
export function errorsOf(problems: FieldProblem[]): Record<string, string> {
  const errors: Record<string, string> = {};
  for (const p of problems) errors[p.field] ??= p.message;
  return errors;
}
