/**
 * What the Media jobs tab shows, read off the media service and the call log as the console
 * (an admin) sees them: the filtered job list, the media requests refused before any job
 * existed, and one job in detail (its parameter summary, the pins of the box it ran on).
 * Plain data; the templates render it.
 */
import type { UiServices } from './services.ts';
import type { JobStatus } from '../media/jobs/job-types.ts';
import type { JobView } from '../media/service-types.ts';
import type { CallRow } from '../stats/call-log.ts';
import { CONSOLE_CALLER } from './dashboard-model.ts';
import { fmt, prettyJson } from './format.ts';

export const JOB_STATUSES: readonly JobStatus[] = ['queued', 'running', 'done', 'failed', 'cancelled'];
export const LIMIT_CHOICES: readonly number[] = [25, 50, 100, 200, 500];
export const DEFAULT_LIMIT = 50;
/** How many newest jobs a model filter looks through (the service lists by status only). */
const MODEL_SCAN = 500;
/** Refused media requests shown under the list. */
const REFUSED_SHOWN = 20;
/** Refused rows read to find them (LLM refusals share the `(refused)` backend). */
const REFUSED_SCAN = 200;
const MODEL_RE = /^[^\u0000-\u001f\u007f]{1,200}$/;

export interface JobFilters {
  status: JobStatus | '';
  model: string;
  limit: number;
}

/** What the user typed, for re-rendering the form as it was. */
export interface FilterInput {
  status: string;
  model: string;
  limit: string;
}

/** Reads `?status=&model=&limit=`: the filters to apply (defaults where a value is refused) and field errors. */
export function parseFilters(query: Record<string, unknown>): {
  filters: JobFilters;
  input: FilterInput;
  errors: Record<string, string>;
} {
  const text = (v: unknown): string => (typeof v === 'string' ? v.trim() : Array.isArray(v) ? '' : '');
  const input: FilterInput = { status: text(query.status), model: text(query.model), limit: text(query.limit) };
  const errors: Record<string, string> = {};
  const filters: JobFilters = { status: '', model: '', limit: DEFAULT_LIMIT };
  if (input.status !== '') {
    if ((JOB_STATUSES as readonly string[]).includes(input.status)) filters.status = input.status as JobStatus;
    else errors.status = `Pick one of ${JOB_STATUSES.join(', ')}.`;
  }
  if (input.model !== '') {
    if (MODEL_RE.test(input.model)) filters.model = input.model;
    else errors.model = 'A model name is 1 to 200 characters, no control characters.';
  }
  if (input.limit !== '') {
    const n = Number(input.limit);
    if (/^\d{1,3}$/.test(input.limit) && n >= 1 && n <= 500) filters.limit = n;
    else errors.limit = 'Show 1 to 500 jobs.';
  }
  return { filters, input, errors };
}

export interface JobsListModel {
  now: number;
  jobs: JobView[];
  /** True when a model filter looked through only the newest MODEL_SCAN jobs. */
  scanned: boolean;
  models: string[];
  refused: CallRow[];
}

export function jobsListModel(services: UiServices, filters: JobFilters, now = Date.now()): JobsListModel {
  const status = filters.status === '' ? {} : { status: filters.status };
  let jobs: JobView[];
  let scanned = false;
  if (filters.model !== '') {
    const pool = services.media.list(CONSOLE_CALLER, { ...status, limit: MODEL_SCAN });
    jobs = pool.filter((j) => j.model === filters.model).slice(0, filters.limit);
    scanned = pool.length === MODEL_SCAN;
  } else {
    jobs = services.media.list(CONSOLE_CALLER, { ...status, limit: filters.limit });
  }
  const models = new Set(services.generations.names());
  for (const j of jobs) models.add(j.model);
  if (filters.model !== '') models.add(filters.model);
  return { now, jobs, scanned, models: [...models].sort(), refused: refusedMedia(services) };
}

/** Media requests the gateway refused before any job existed (auth, validation, unknown alias, quota). */
export function refusedMedia(services: UiServices): CallRow[] {
  return services.callLog
    .recent({ backend: '(refused)', limit: REFUSED_SCAN })
    .filter((r) => isMediaEndpoint(r.endpoint))
    .slice(0, REFUSED_SHOWN);
}

export function isMediaEndpoint(endpoint: string): boolean {
  return endpoint.startsWith('/v1/images/') || endpoint === '/v1/generations';
}

export interface PinRow {
  backend: string;
  node: string;
  field: string;
  value: string;
}

export interface FailoverRow {
  backend: string;
  code: string;
  message: string;
}

export interface JobDetailModel {
  now: number;
  job: JobView;
  seed: string | null;
  removed: string[];
  bypassed: string[];
  notes: string[];
  outputs: string[];
  failovers: FailoverRow[];
  /** Summary keys the console has no row for, as JSON text. */
  extra: [string, string][];
  /** The alias's pins (fixed values) on the job's box, or on every box while it has none; from the current config. */
  pins: PinRow[];
  params: [string, string][];
  /** How long it ran / waited, to the second (the job's times are Unix seconds). */
  ran: string;
  waited: string;
  unfinished: boolean;
}

const KNOWN_SUMMARY = new Set(['seed', 'removed', 'bypassed', 'notes', 'outputs', 'failovers']);

export function jobDetailModel(services: UiServices, job: JobView, now = Date.now()): JobDetailModel {
  const s = job.summary ?? {};
  const strings = (v: unknown): string[] =>
    Array.isArray(v) ? v.map((x) => (typeof x === 'string' ? x : prettyJson(x, 0))) : [];
  const failovers = Array.isArray(s.failovers)
    ? (s.failovers as unknown[]).map((f): FailoverRow => {
        const o = (f ?? {}) as Record<string, unknown>;
        return { backend: String(o.backend ?? '?'), code: String(o.code ?? ''), message: String(o.message ?? '') };
      })
    : [];
  const model = services.generations.get(job.model);
  const candidates = (model?.candidates ?? []).filter((c) => job.backend === null || c.backend === job.backend);
  const pins = candidates.flatMap((c) =>
    (c.alias.fixed ?? []).map((p): PinRow => ({
      backend: c.backend,
      node: p.node,
      field: p.field,
      value: short(prettyJson(p.value, 0)),
    })),
  );
  const ms = (sec: number | null) => (sec === null ? null : sec * 1000);
  const started = ms(job.started_at);
  const finished = ms(job.finished_at);
  return {
    now,
    job,
    seed: job.seed,
    removed: strings(s.removed),
    bypassed: strings(s.bypassed),
    notes: strings(s.notes),
    outputs: strings(s.outputs),
    failovers,
    extra: Object.entries(s)
      .filter(([k]) => !KNOWN_SUMMARY.has(k))
      .map(([k, v]) => [k, short(prettyJson(v, 0))]),
    pins,
    params: Object.entries(job.params)
      .filter(([k, v]) => !(k === 'prompt' && v === job.prompt)) // shown as the prompt
      .map(([k, v]) => [k, short(typeof v === 'string' ? v : prettyJson(v, 0))]),
    ran: started !== null ? seconds((finished ?? now) - started) : '–',
    waited: seconds((started ?? finished ?? now) - job.created_at * 1000),
    unfinished: job.status === 'queued' || job.status === 'running',
  };
}

/** A span known to the second: `< 1 s`, `12 s`, `3 min 4 s`. */
export function seconds(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return '–';
  if (ms < 1000) return '< 1 s';
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s} s` : fmt.duration(s * 1000);
}

/** Long values (a pasted prompt in a param) are cut for the table; the API has them whole. */
function short(text: string, max = 600): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
