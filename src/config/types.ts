/**
 * The shape of a validated configuration. `config/schema.ts` validates a parsed config.yaml
 * into this; `config/effective.ts` merges it with the store into the one the app runs on.
 */
import type { Mapping, Pin, Workflow } from './workflow-types.ts';
import type { ModelPricing } from './model-info.ts';
import type { LogFormat, LogLevel } from '../logging.ts';

export type BackendType = 'openai' | 'ollama' | 'anthropic' | 'comfyui';

export interface BackendSpec {
  name: string;
  /** Base URL without a trailing `/v1`. */
  url: string;
  type: BackendType;
  enabled: boolean;
  api_key?: string;
  /** A pool of keys rotated per attempt (backends/key-pool.ts), in place of `api_key`. */
  api_keys?: string[];
  /** In-flight cap; undefined = the global `max_concurrent`; 0 = unlimited. */
  max_concurrent?: number;
  /**
   * Models a swapping box (llama-swap, Ollama, LM Studio) holds loaded at once; undefined = 1, or
   * more when the box is seen holding more. Boxes that serve all they list ignore it.
   */
  resident?: number;
  paid: boolean;
  /** List this backend's models also under their bare ids. */
  local: boolean;
  chat_only: boolean;
  serverless_only: boolean;
  /** Physical machine this backend runs on (a label; backends on one host share a GPU). */
  host?: string;
  /**
   * anthropic: how `api_key` is sent. `api_key` → `x-api-key`; `subscription` (a
   * `claude setup-token` OAuth token, `sk-ant-oat01-…`) → `Authorization: Bearer` plus the
   * OAuth beta in `anthropic-beta`.
   */
  auth_mode?: AuthMode;
  /** Model ids served when the backend will not list them (its GET /v1/models answers 401/403/404). */
  models?: string[];
  /**
   * Translated Messages calls keep `cache_control` on chat content parts (OpenRouter passes it on to
   * Anthropic and Gemini).
   */
  prompt_cache?: boolean;
  /** `native`: the backend speaks the Responses API itself (passed through); otherwise translated to chat. */
  responses?: 'native' | 'translate';
  /** Sampling values filled in when neither the client nor the alias set them (chat, completions, Responses). */
  sampling_defaults?: Record<string, unknown>;
  /** `think_tags`: reasoning re-labelled as `<think>…</think>` content for clients that show only content. */
  reasoning_as_content?: 'think_tags';
  /**
   * Prices (USD per million tokens) by model id or glob pattern: the exact id, else the longest
   * matching pattern. Wins over discovered and built-in prices (backends/pricing.ts).
   */
  pricing?: Record<string, ModelPricing>;

  /**
   * A GPU shared with other backends (e.g. a llama-swap and a ComfyUI on one card): a lease
   * also needs a free slot on the group. A name not in `gpu_groups` is an implicit group
   * with max_concurrent 1.
   */
  gpu_group?: string;

  /** Wake-on-LAN: a magic packet when every candidate of a call is down unreachable (backends/wake/). */
  wake?: WakeSpec;
  /** Asks the box to sleep once it has been idle after a wake (only with `wake`). */
  idle_sleep?: IdleSleepSpec;

  // comfyui backends (defaults in COMFY_DEFAULTS; `comfyKnobs` resolves them)
  /**
   * The same head prompt pending with an idle executor this long (and on two checks) marks the box
   * down `exec_stuck` (default 90).
   */
  stuck_after_s?: number;
  /** Seconds between `/history` polls of a running prompt (default 1). */
  poll_interval?: number;
  /** Seconds a prompt may run before it is interrupted and the job fails over (default 600). */
  max_wait?: number;
  /** Seconds one HTTP call to the box may take (default 60). */
  read_timeout?: number;
  /** Seconds the box may be unreachable during a job before the job fails over (default 30). */
  disconnect_grace?: number;
  /** Reboot a stuck box through ComfyUI-Manager (default false). */
  auto_restart?: boolean;
  /** At most one auto_restart per this many seconds (default 600). */
  restart_cooldown_s?: number;
}

/**
 * One candidate of a generation alias (`image_models.<alias>[i]`). In config.yaml exactly one
 * of `workflow` (a file, relative to config.yaml's folder) and `workflow_json`; once loaded,
 * `workflow_json` always holds the workflow and `workflow` (when given) says where it came from.
 */
/** A backend's `wake`; the absent fields take WAKE_DEFAULTS. */
export interface WakeSpec {
  /** The box's MAC, aa:bb:cc:dd:ee:ff or aa-bb-cc-dd-ee-ff. */
  mac: string;
  /** Where the packet goes: an IPv4 or IPv6 address or a host name (default 255.255.255.255). */
  address?: string;
  /** UDP port (default 9). */
  port?: number;
  /** How long parked calls wait for the box beyond their own park time, from the packet (default 120). */
  boot_timeout_s?: number;
  /** At least this long between two packets to the box (default 300). */
  cooldown_s?: number;
}

/** A backend's `idle_sleep`: the owner's URL that puts a woken box back to sleep. */
export interface IdleSleepSpec {
  /** Seconds with nothing in flight and nothing parked for the box, after a wake. */
  after_s: number;
  url: string;
  /** Default POST. */
  method?: 'POST' | 'GET' | 'PUT';
}

export interface ImageModelEntry {
  /** A comfyui backend; one entry per backend per alias. */
  backend: string;
  workflow?: string;
  /** A ComfyUI API-format workflow. */
  workflow_json?: Workflow;
  /** Shared by all candidates of the alias: the first entry's is used. */
  mapping?: Mapping;
  /** Per-backend pins no request can change. */
  fixed?: Pin[];
  /** Node ids skipped ComfyUI-style. */
  bypass?: string[];
  /** The output node; default: the workflow's output nodes. */
  output?: string;
  /** Most pixels (width × height) a request may ask this box for (default 4 MiP); the alias takes the strictest. */
  max_pixels?: number;
  /** Most results (`n`, the batch) one request may ask for (default 10); the alias takes the strictest. */
  max_n?: number;
}

/** A GPU shared by several backends (`gpu_groups.<name>`). */
export interface GpuGroupSpec {
  /** Leases at once across the group's backends (default 1). */
  max_concurrent?: number;
  /** Switching to media work: ask the group's llama-swap backends to POST /unload (default false). */
  unload_llm?: boolean;
  /** Switching back to LLM work: POST /free to the group's ComfyUI backends (default false). */
  free_media?: boolean;
}

/** Per-alias settings beside the alias table (`alias_defaults` in config.yaml). */
export interface AliasDefaults {
  /** The reasoning switch when the client gives none. */
  reasoning?: 'on' | 'off' | 'auto';
  /** Sampling values filled in when the client did not send them (before the backend's own). */
  sampling_defaults?: Record<string, unknown>;
  /** /v1/audio/speech: the voice when the client sent none. */
  voice?: string;
  /** Paid spill threshold for this alias, seconds (in place of the top-level `spill_after_s`). */
  spill_after_s?: number;
}

export type AuthMode = 'api_key' | 'subscription';

/** `cluster`: the Redis the instances share, and how this instance is named and reached. */
export interface ClusterSpec {
  redis_url: string;
  /** Unique per instance; default: host name and port-less process id. */
  instance_id?: string;
  /** The URL other instances reach this one at (media job results, summed statistics). */
  advertise_url?: string;
  /** Seconds a slot lease lives unless refreshed (default 6). */
  lease_ttl_s?: number;
}

/** An alias maps to one model id (any backend serving it) or to one model per backend. */
export type VirtualModel = string | Record<string, string>;

export type MetricsAccess = 'loopback' | 'open' | 'key';

export interface GatewayConfig {
  api_key?: string;
  store_dir: string;
  jobs_dir: string;
  /** Where POST /admin/api/backup writes its folders; unset = `<store_dir>/backups`. Only config.yaml sets it. */
  backup_dir?: string;
  /** Several gateways as one scheduler over Redis; absent = one gateway on SQLite alone. Only config.yaml sets it. */
  cluster?: ClusterSpec;
  log_level: LogLevel;
  /** auto = pretty when stdout is a terminal, JSON otherwise. */
  log_format: LogFormat;
  /** Seconds between discovery polls. */
  health_check_interval: number;
  model_prefix: boolean;
  /** Global default in-flight cap per backend; 0 = unlimited. */
  max_concurrent: number;
  backends: BackendSpec[];
  virtual_models: Record<string, VirtualModel>;

  // scheduler (issue 3)
  park_timeout_s: number;
  alias_park: Record<string, number>;
  /** Per-alias defaults (reasoning, sampling, voice), keyed by alias name. */
  alias_defaults: Record<string, AliasDefaults>;
  max_parked: number;
  affinity_max_wait_s: number;
  /**
   * Paid spill: a paid backend takes a call only when the best unpaid backend's predicted wait
   * exceeds this many seconds (or the call parked this long); 0 = when no unpaid one is free now.
   */
  spill_after_s: number;
  /** USD the paid backends may spend per UTC month, all users together; 0 = no budget. */
  paid_budget_usd_month: number;
  /** Conversation affinity: a conversation's next turn goes to the box of its previous turn for this long; 0 = off. */
  affinity_ttl_s: number;
  fast_probe_interval_s: number;
  /** Longest silence of a backend between body bytes (after the first byte), stream or not; 0 = none. */
  stream_idle_timeout_s: number;
  /** Longest a client may stop reading (back-pressure) before its call is ended (499); 0 = none. */
  client_stall_timeout_s: number;
  /** Streams: longest wait for the first byte of the body (head included); 0 = none. */
  first_byte_timeout_s: number;
  /** Non-stream calls: longest wait for the first byte of the answer's body; 0 = none. */
  request_timeout_s: number;
  /** Streams: SSE comment every N seconds while nothing else is sent (parked, prefill); 0 = off. */
  stream_keepalive_s: number;
  failure_threshold: number;

  // accounting (issue 4)
  metrics_access: MetricsAccess;
  retention_days: number;
  capture_bodies: boolean;
  body_retention_days: number;
  stats_flush_ms: number;
  /** Record every call in stats.db (quotas and the console read it). */
  call_log: boolean;

  // exposure (issue 7)
  /** fastify's trustProxy: false, true, or addresses/CIDRs of trusted proxies. [restart] */
  trust_proxy: boolean | string | string[];
  /** Browser origins allowed by CORS; [] = CORS off. */
  cors_origins: string[];
  /** GET /health/ready needs at least one enabled backend up (false: ready on store and config alone). */
  ready_requires_backend: boolean;
  /** Extra Host names an open gateway answers to (besides this machine's names and addresses). */
  allowed_hosts: string[];
  /** Longest silence while a request (headers or body) is still arriving; 0 = off. */
  request_body_timeout_s: number;
  /**
   * Backend names in refusals (`error.candidates`, the message) for callers who are not admins:
   * 'auto' = only while the gateway has no users (single-user); admins always see them. [hot]
   */
  expose_backend_names: boolean | 'auto';

  // bridges (issue 10)
  /** Reasoning rules before the built-in defaults (ordered; first match wins). */
  reasoning_rules: ReasoningRuleSpec[];
  /** Background Responses: longest park, seconds. */
  async_park_timeout_s: number;
  /** Stored Responses (background, store: true) are deleted after this many hours. */
  responses_ttl_h: number;

  // media (issue 11)
  /** Generation aliases: alias → ordered candidates, one per comfyui backend. */
  image_models: Record<string, ImageModelEntry[]>;
  /** Media jobs: longest park, seconds. */
  media_park_timeout_s: number;
  /** Jobs and their files are deleted after this many hours. */
  job_ttl_h: number;
  /** Admins' client-supplied URLs (reference images, files) may point at private/loopback addresses. */
  ref_url_allow_private: boolean;
  /** Bytes of uploads (edits, generations, transcriptions) received at once; past it 503. 0 = no limit. */
  max_upload_bytes_inflight: number;
  /** Shared GPUs, by the name backends give in `gpu_group`. */
  gpu_groups: Record<string, GpuGroupSpec>;

  // operations (issue 21)
  /** Where alerts go (config.yaml only: URLs may hold a webhook's secret). */
  alerts: AlertTargetSpec[];
}

/** One `alerts[]` target. */
export interface AlertTargetSpec {
  /** http(s) URL each alert is POSTed to; its userinfo and path are never logged or shown in full. */
  url: string;
  /** The events sent there; undefined = all of them. */
  events?: AlertEventName[];
  format: 'json' | 'ntfy' | 'discord' | 'slack';
  /** The same event for the same subject is sent at most once in this many seconds; 0 = every time. */
  min_interval_s: number;
}

export type AlertEventName =
  | 'backend_down'
  | 'backend_up'
  | 'credential_rejected'
  | 'quota_reached'
  | 'paid_budget_reached'
  | 'job_failed'
  | 'gateway_started';

/** One reasoning rule as configured (see bridges/reasoning/rules.ts). */
export interface ReasoningRuleSpec {
  model: string;
  backends?: string[];
  mechanism: 'enable_thinking' | 'reasoning_effort' | 'nothink_token' | 'prefill' | 'openrouter_reasoning' | 'none';
  params?: Record<string, unknown>;
  enabled?: boolean;
}
