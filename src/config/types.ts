/**
 * The shape of a validated configuration. `config/schema.ts` validates a parsed config.yaml
 * into this; `config/effective.ts` merges it with the store into the one the app runs on.
 */
export type BackendType = 'openai' | 'anthropic' | 'comfyui';

export interface BackendSpec {
  name: string;
  /** Base URL without a trailing `/v1`. */
  url: string;
  type: BackendType;
  enabled: boolean;
  api_key?: string;
  /** In-flight cap; undefined = the global `max_concurrent`; 0 = unlimited. */
  max_concurrent?: number;
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
  /** Translated Messages calls keep `cache_control` on chat content parts (OpenRouter passes it on to Anthropic and Gemini). */
  prompt_cache?: boolean;
  /** `native`: the backend speaks the Responses API itself (passed through); otherwise translated to chat. */
  responses?: 'native' | 'translate';
  /** Sampling values filled in when neither the client nor the alias set them (chat, completions, Responses). */
  sampling_defaults?: Record<string, unknown>;
  /** `think_tags`: reasoning re-labelled as `<think>…</think>` content for clients that show only content. */
  reasoning_as_content?: 'think_tags';

  // comfyui backends
  /** The same head prompt pending with an idle executor this long (and on two checks) marks the box down `exec_stuck` (default 90). */
  stuck_after_s?: number;
}

/** Per-alias settings beside the alias table (`alias_defaults` in config.yaml). */
export interface AliasDefaults {
  /** The reasoning switch when the client gives none. */
  reasoning?: 'on' | 'off' | 'auto';
  /** Sampling values filled in when the client did not send them (before the backend's own). */
  sampling_defaults?: Record<string, unknown>;
  /** /v1/audio/speech: the voice when the client sent none. */
  voice?: string;
}

export type AuthMode = 'api_key' | 'subscription';

/** An alias maps to one model id (any backend serving it) or to one model per backend. */
export type VirtualModel = string | Record<string, string>;

export type MetricsAccess = 'loopback' | 'open' | 'key';

export interface GatewayConfig {
  api_key?: string;
  store_dir: string;
  jobs_dir: string;
  log_level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
  /** auto = pretty when stdout is a terminal, JSON otherwise. */
  log_format: 'auto' | 'pretty' | 'json';
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
  fast_probe_interval_s: number;
  /** Longest silence between stream events (after the first byte), and longest client back-pressure; 0 = none. */
  stream_idle_timeout_s: number;
  /** Streams: longest wait for the first byte of the body (head included); 0 = none. */
  first_byte_timeout_s: number;
  /** Non-stream calls: longest wait for the whole answer; 0 = none. */
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

  // bridges (issue 10)
  /** Reasoning rules before the built-in defaults (ordered; first match wins). */
  reasoning_rules: ReasoningRuleSpec[];
  /** Background Responses: longest park, seconds. */
  async_park_timeout_s: number;
  /** Stored Responses (background, store: true) are deleted after this many hours. */
  responses_ttl_h: number;
}

/** One reasoning rule as configured (see bridges/reasoning/rules.ts). */
export interface ReasoningRuleSpec {
  model: string;
  backends?: string[];
  mechanism: 'enable_thinking' | 'reasoning_effort' | 'nothink_token' | 'prefill' | 'openrouter_reasoning' | 'none';
  params?: Record<string, unknown>;
  enabled?: boolean;
}
