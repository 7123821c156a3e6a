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
 */
import { prettyJson } from './format.ts';
import type { SecretSettingView, SettingView } from '../admin/config-service.ts';
import { configSchema } from '../config/schema.ts';
import { parseNumber } from './backends-form.ts';

export type InputKind = 'number' | 'bool' | 'enum' | 'lines' | 'proxy' | 'json' | 'none';

interface Info {
  label: string;
  help: string;
  unit?: string;
}

const INFO: Record<string, Info> = {
  park_timeout_s: {
    label: 'Park timeout',
    unit: 's',
    help: 'How long a call waits parked for a busy backend before a 503; 0 = no parking (refused at once).',
  },
  max_parked: { label: 'Max parked calls', help: 'At most this many parked calls; one more gets a 503.' },
  affinity_max_wait_s: {
    label: 'Affinity max wait',
    unit: 's',
    help: 'A parked call that waited this long takes the next free slot even if another would avoid a model reload.',
  },
  fast_probe_interval_s: {
    label: 'Fast probe interval',
    unit: 's',
    help: 'While calls are parked, re-probe unhealthy backends this often; 0 = off.',
  },
  max_concurrent: {
    label: 'Default max concurrent',
    help: 'In-flight cap of a backend that sets none; 0 = unlimited.',
  },
  failure_threshold: {
    label: 'Failure threshold',
    help: 'Consecutive failed calls that trigger a health probe (only a failed probe marks a backend down).',
  },
  health_check_interval: {
    label: 'Health check interval',
    unit: 's',
    help: 'Seconds between discovery polls of each backend (GET /v1/models; never loads a model).',
  },
  model_prefix: { label: 'Model prefix', help: 'List models as <backend>/<model> in /v1/models.' },
  first_byte_timeout_s: {
    label: 'First byte timeout',
    unit: 's',
    help: 'Streams: the first byte must arrive within this; 0 = no limit.',
  },
  stream_idle_timeout_s: {
    label: 'Stream idle timeout',
    unit: 's',
    help: 'Longest silence of a backend between body bytes after the first, streams and not; 0 = no limit.',
  },
  client_stall_timeout_s: {
    label: 'Client stall timeout',
    unit: 's',
    help: 'A client that stops reading this long is ended (499; the backend is not blamed); 0 = no limit.',
  },
  request_timeout_s: {
    label: 'Request timeout',
    unit: 's',
    help: 'Non-stream calls: the first byte of the answer must arrive within this; 0 = no limit.',
  },
  stream_keepalive_s: {
    label: 'Stream keep-alive',
    unit: 's',
    help: 'Waiting streams get an SSE comment this often; 0 = off.',
  },
  request_body_timeout_s: {
    label: 'Request receive timeout',
    unit: 's',
    help: 'Longest silence while a request (headers or body) is still arriving: 408 and the connection closed; never cuts an answer; 0 = off.',
  },
  allowed_hosts: {
    label: 'Allowed Host names',
    help: "While open, extra Host names the gateway answers to besides this machine's own names and addresses (DNS-rebinding guard).",
  },
  async_park_timeout_s: { label: 'Background park timeout', unit: 's', help: 'Longest park of a background Response.' },
  responses_ttl_h: {
    label: 'Stored Responses kept',
    unit: 'h',
    help: 'Hours a stored Response is kept for GET /v1/responses/{id} and previous_response_id.',
  },
  call_log: { label: 'Call log', help: 'Record every call (quota counters are kept either way).' },
  capture_bodies: {
    label: 'Capture bodies',
    help: 'Also store request and response bodies (large; may hold private data).',
  },
  retention_days: {
    label: 'Call retention',
    unit: 'days',
    help: 'Delete call-log rows older than this; 0 = keep forever.',
  },
  body_retention_days: {
    label: 'Body retention',
    unit: 'days',
    help: 'Delete captured bodies older than this (the rows stay).',
  },
  stats_flush_ms: { label: 'Call-log flush', unit: 'ms', help: 'Milliseconds between batched call-log writes.' },
  media_park_timeout_s: {
    label: 'Media park timeout',
    unit: 's',
    help: 'How long a media job may wait parked for a free ComfyUI; 0 = no parking.',
  },
  job_ttl_h: { label: 'Jobs kept', unit: 'h', help: 'Hours a media job and its files are kept.' },
  ref_url_allow_private: {
    label: 'Private reference URLs',
    help: "Admins' client-supplied URLs may point at private and loopback addresses (never other callers').",
  },
  max_upload_bytes_inflight: {
    label: 'Uploads in flight',
    unit: 'bytes',
    help: 'Bytes of uploads received at once, all requests together; past it 503. 0 = no limit.',
  },
  gpu_groups: {
    label: 'GPU groups',
    help: 'Shared GPUs by name: {"gpu1": {"max_concurrent": 1, "unload_llm": true, "free_media": true}}.',
  },
  api_key: {
    label: 'Master key',
    help: 'The key clients and the console use. Write-only; change it in config.yaml (users are managed in the Users tab).',
  },
  metrics_access: {
    label: 'Metrics access',
    help: 'Who may read /metrics: loopback, open (anyone) or key (master key).',
  },
  cors_origins: {
    label: 'CORS origins',
    help: 'Browser origins allowed to call the API, one per line; none = CORS off.',
  },
  expose_backend_names: {
    label: 'Backend names in refusals',
    help:
      'Who sees backend names when no backend can serve: true = everyone, false = admins only, ' +
      'auto = everyone until a user exists.',
  },
  trust_proxy: {
    label: 'Trusted proxies',
    help: 'Whose X-Forwarded-For is believed: false, true, or addresses/CIDRs (comma-separated).',
  },
  log_level: { label: 'Log level', help: 'fatal, error, warn, info, debug or trace.' },
  log_format: { label: 'Log format', help: 'auto (pretty on a terminal), pretty or json.' },
  store_dir: { label: 'Store folder', help: 'Where store.db, stats.db and secret.key live. Only config.yaml sets it.' },
  jobs_dir: { label: 'Jobs folder', help: 'Where media jobs and their files live. Only config.yaml sets it.' },
  virtual_models: { label: 'Aliases', help: 'The alias table.' },
  alias_park: { label: 'Per-alias park timeouts', help: 'Alias → seconds, overriding the park timeout.' },
  alias_defaults: { label: 'Alias defaults', help: 'Reasoning, sampling and voice defaults per alias.' },
  reasoning_rules: { label: 'Reasoning rules', help: 'The ordered reasoning rule list.' },
  image_models: { label: 'Generation aliases', help: 'ComfyUI workflows clients can ask for.' },
};

const GROUPS: readonly { id: string; title: string; keys: readonly string[] }[] = [
  {
    id: 'scheduler',
    title: 'Scheduler and parking',
    keys: [
      'park_timeout_s',
      'max_parked',
      'affinity_max_wait_s',
      'fast_probe_interval_s',
      'max_concurrent',
      'failure_threshold',
    ],
  },
  { id: 'discovery', title: 'Discovery and listing', keys: ['health_check_interval', 'model_prefix'] },
  {
    id: 'timeouts',
    title: 'Timeouts and streaming',
    keys: [
      'first_byte_timeout_s',
      'stream_idle_timeout_s',
      'client_stall_timeout_s',
      'request_timeout_s',
      'stream_keepalive_s',
      'async_park_timeout_s',
      'request_body_timeout_s',
    ],
  },
  {
    id: 'retention',
    title: 'Call log and retention',
    keys: ['call_log', 'capture_bodies', 'retention_days', 'body_retention_days', 'responses_ttl_h', 'stats_flush_ms'],
  },
  {
    id: 'media',
    title: 'Media',
    keys: ['media_park_timeout_s', 'job_ttl_h', 'ref_url_allow_private', 'max_upload_bytes_inflight', 'gpu_groups'],
  },
  {
    id: 'access',
    title: 'Access and exposure',
    keys: ['api_key', 'metrics_access', 'cors_origins', 'allowed_hosts', 'trust_proxy', 'expose_backend_names'],
  },
  { id: 'logging', title: 'Logging', keys: ['log_level', 'log_format'] },
  { id: 'paths', title: 'Folders (config.yaml only)', keys: ['store_dir', 'jobs_dir'] },
];

/** Settings another tab edits: shown here with their source, changed there. */
export const ELSEWHERE: Record<string, { tab: string; path: string }> = {
  virtual_models: { tab: 'Aliases & routing', path: '/ui/aliases' },
  alias_park: { tab: 'Aliases & routing', path: '/ui/aliases' },
  alias_defaults: { tab: 'Aliases & routing', path: '/ui/aliases' },
  reasoning_rules: { tab: 'Reasoning', path: '/ui/reasoning' },
  image_models: { tab: 'Mapping', path: '/ui/mapping' },
};

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
  const placed = new Set<string>();
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
