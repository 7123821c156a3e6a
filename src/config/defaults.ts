/**
 * Default values of every configuration key, and the configuration the gateway runs on when
 * there is no config.yaml at all. `schema.ts` reads these defaults; `config.example.yaml`
 * documents them (keep the three in step).
 */
import type { BackendSpec, GatewayConfig, GpuGroupSpec } from './types.ts';

/** Defaults of the top-level keys that have one (everything but `api_key` and `backends`). */
export const DEFAULTS = Object.freeze({
  store_dir: 'store',
  jobs_dir: 'jobs',
  log_level: 'info',
  log_format: 'auto',
  health_check_interval: 30,
  model_prefix: true,
  max_concurrent: 0,
  park_timeout_s: 60,
  max_parked: 100,
  affinity_max_wait_s: 120,
  spill_after_s: 0,
  paid_budget_usd_month: 0,
  affinity_ttl_s: 300,
  fast_probe_interval_s: 3,
  stream_idle_timeout_s: 180,
  client_stall_timeout_s: 180,
  first_byte_timeout_s: 300,
  request_timeout_s: 600,
  stream_keepalive_s: 10,
  failure_threshold: 3,
  metrics_access: 'loopback',
  retention_days: 90,
  capture_bodies: false,
  body_retention_days: 14,
  stats_flush_ms: 1000,
  call_log: true,
  trust_proxy: false,
  cors_origins: [],
  ready_requires_backend: true,
  allowed_hosts: [],
  request_body_timeout_s: 60,
  expose_backend_names: 'auto',
  async_park_timeout_s: 600,
  responses_ttl_h: 24,
  image_models: {},
  media_park_timeout_s: 600,
  job_ttl_h: 24,
  ref_url_allow_private: true,
  max_upload_bytes_inflight: 512 * 1024 * 1024,
  gpu_groups: {},
  alerts: [],
} as const satisfies Partial<GatewayConfig>);

/** Defaults of the optional fields of one `alerts[]` target (`events` left out = every event). */
export const ALERT_DEFAULTS = Object.freeze({ format: 'json', min_interval_s: 300 } as const);

/**
 * Defaults of the limits of one `image_models` alias: the most pixels (width × height) one
 * result may have — 4 MiP, 2048×2048 fits exactly — and the most results one request may ask for.
 */
export const IMAGE_MODEL_DEFAULTS = Object.freeze({ max_pixels: 4 * 1024 * 1024, max_n: 10 } as const);

/** Defaults of the optional fields of one `backends[]` entry. */
export const BACKEND_DEFAULTS = Object.freeze({
  type: 'openai',
  enabled: true,
  paid: false,
  local: false,
  chat_only: false,
  serverless_only: false,
} as const satisfies Partial<BackendSpec>);

/** Defaults of a backend's `wake` (Wake-on-LAN) and `idle_sleep`. */
export const WAKE_DEFAULTS = Object.freeze({
  address: '255.255.255.255',
  port: 9,
  boot_timeout_s: 120,
  cooldown_s: 300,
  idle_sleep_method: 'POST',
} as const);

/**
 * `resident` when a backend sets none: a swapping box (llama-swap, Ollama, LM Studio) holds one
 * model at a time, unless it is seen holding more (backends/residency.ts).
 */
export const DEFAULT_RESIDENT = 1;

/** Defaults of the options only comfyui backends read (seconds unless named otherwise). */
export const COMFY_DEFAULTS = Object.freeze({
  stuck_after_s: 90,
  poll_interval: 1,
  max_wait: 600,
  read_timeout: 60,
  disconnect_grace: 30,
  auto_restart: false,
  restart_cooldown_s: 600,
} as const satisfies Partial<BackendSpec>);

/** A comfyui backend's knobs, defaults filled in, durations in milliseconds. */
export interface ComfyKnobs {
  pollMs: number;
  maxWaitMs: number;
  readTimeoutMs: number;
  disconnectGraceMs: number;
  autoRestart: boolean;
  restartCooldownMs: number;
  stuckAfterMs: number;
}

export function comfyKnobs(spec: BackendSpec): ComfyKnobs {
  const s = (value: number | undefined, fallback: number) => (value ?? fallback) * 1000;
  return {
    pollMs: s(spec.poll_interval, COMFY_DEFAULTS.poll_interval),
    maxWaitMs: s(spec.max_wait, COMFY_DEFAULTS.max_wait),
    readTimeoutMs: s(spec.read_timeout, COMFY_DEFAULTS.read_timeout),
    disconnectGraceMs: s(spec.disconnect_grace, COMFY_DEFAULTS.disconnect_grace),
    autoRestart: spec.auto_restart ?? COMFY_DEFAULTS.auto_restart,
    restartCooldownMs: s(spec.restart_cooldown_s, COMFY_DEFAULTS.restart_cooldown_s),
    stuckAfterMs: s(spec.stuck_after_s, COMFY_DEFAULTS.stuck_after_s),
  };
}

/** Defaults of one `gpu_groups` entry; a group no entry describes has all of them. */
export const GPU_GROUP_DEFAULTS = Object.freeze({
  max_concurrent: 1,
  unload_llm: false,
  free_media: false,
} as const satisfies GpuGroupSpec);

/** The settings of GPU group `name`, defaults filled in (an unconfigured name is an implicit group). */
export function gpuGroupSettings(config: Pick<GatewayConfig, 'gpu_groups'>, name: string): Required<GpuGroupSpec> {
  const spec: GpuGroupSpec = Object.hasOwn(config.gpu_groups, name) ? config.gpu_groups[name] : {};
  return {
    max_concurrent: spec.max_concurrent ?? GPU_GROUP_DEFAULTS.max_concurrent,
    unload_llm: spec.unload_llm ?? GPU_GROUP_DEFAULTS.unload_llm,
    free_media: spec.free_media ?? GPU_GROUP_DEFAULTS.free_media,
  };
}

/** Keys that only take effect at start-up; a reload that changes them needs a restart. */
export const RESTART_ONLY_KEYS: readonly (keyof GatewayConfig)[] = Object.freeze([
  'store_dir',
  'jobs_dir',
  'stats_flush_ms',
  'trust_proxy',
  'log_format',
  'cluster',
]);

/** Printed when the gateway starts without a config file. */
export const howToWriteConfigHint =
  'To configure your fleet, copy config.example.yaml to config.yaml and edit it; changes ' +
  'are picked up without a restart.';

function loopbackBackend(name: string, url: string, type: BackendSpec['type'] = 'openai'): BackendSpec {
  return { ...BACKEND_DEFAULTS, name, url, type, local: type === 'openai' };
}

/**
 * The configuration used when no config file exists: every default, and a fleet that probes
 * the usual loopback ports of common local servers (unreachable ones simply stay unhealthy).
 */
export function embeddedDefaultConfig(): GatewayConfig {
  return {
    ...DEFAULTS,
    backends: [
      loopbackBackend('ollama', 'http://127.0.0.1:11434'),
      loopbackBackend('llamacpp', 'http://127.0.0.1:8080'),
      loopbackBackend('vllm', 'http://127.0.0.1:8000'),
      loopbackBackend('lmstudio', 'http://127.0.0.1:1234'),
      loopbackBackend('comfyui', 'http://127.0.0.1:8188', 'comfyui'),
    ],
    virtual_models: {},
    alias_park: {},
    alias_defaults: {},
    cors_origins: [],
    allowed_hosts: [],
    reasoning_rules: [],
    image_models: {},
    gpu_groups: {},
    alerts: [],
  };
}
