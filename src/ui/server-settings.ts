/**
 * What the server tab shows of each runtime setting besides its value: the label, the unit and
 * a line of help, the groups the page shows them in, and the settings another tab owns
 * (`ELSEWHERE`: shown on the server tab with their source, changed there), and those the tab
 * shows in a section of their own (`APART`).
 */

export interface Info {
  label: string;
  help: string;
  unit?: string;
}

export const INFO: Record<string, Info> = {
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
    help:
      'Longest silence while a request (headers or body) is still arriving: 408 and the connection closed; ' +
      'never cuts an answer; 0 = off.',
  },
  allowed_hosts: {
    label: 'Allowed Host names',
    help:
      "While open, extra Host names the gateway answers to besides this machine's own names and addresses " +
      '(DNS-rebinding guard).',
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
    help:
      'The key clients and the console use. Write-only; change it in config.yaml ' +
      '(users are managed in the Users tab).',
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
  backup_dir: {
    label: 'Backup folder',
    help: 'Where backups are written (default <store_dir>/backups). Only config.yaml sets it.',
  },
  virtual_models: { label: 'Aliases', help: 'The alias table.' },
  alias_park: { label: 'Per-alias park timeouts', help: 'Alias → seconds, overriding the park timeout.' },
  alias_defaults: { label: 'Alias defaults', help: 'Reasoning, sampling and voice defaults per alias.' },
  reasoning_rules: { label: 'Reasoning rules', help: 'The ordered reasoning rule list.' },
  image_models: { label: 'Generation aliases', help: 'ComfyUI workflows clients can ask for.' },
};

export const GROUPS: readonly { id: string; title: string; keys: readonly string[] }[] = [
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
  { id: 'paths', title: 'Folders (config.yaml only)', keys: ['store_dir', 'jobs_dir', 'backup_dir'] },
];

/** Settings another tab edits: shown here with their source, changed there. */
export const ELSEWHERE: Record<string, { tab: string; path: string }> = {
  virtual_models: { tab: 'Aliases & routing', path: '/ui/aliases' },
  alias_park: { tab: 'Aliases & routing', path: '/ui/aliases' },
  alias_defaults: { tab: 'Aliases & routing', path: '/ui/aliases' },
  reasoning_rules: { tab: 'Reasoning', path: '/ui/reasoning' },
  image_models: { tab: 'Mapping', path: '/ui/mapping' },
};

/** Settings with a section of their own on the server tab, not a row: `alerts` (each target, a test button). */
export const APART: ReadonlySet<string> = new Set(['alerts']);
