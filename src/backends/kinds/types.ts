/**
 * The shape of a backend kind's descriptor: everything the gateway knows about one `type:` of
 * backend, as plain data plus a few pure functions. One file per kind next to this one;
 * `index.ts` looks them up. Nothing here does I/O.
 */
import type { BackendSpec, BackendType } from '../../config/types.ts';

/**
 * The client APIs a backend can answer: the OpenAI ones, Anthropic's Messages and its
 * count_tokens, Ollama's native `/api/*`, and media generation (ComfyUI prompts).
 */
export type ClientApi =
  'chat' | 'completions' | 'embeddings' | 'audio' | 'responses' | 'messages' | 'count_tokens' | 'ollama' | 'media';

/** How a kind is asked what it serves, without ever loading a model. */
export interface ProbeRule {
  /** The path, under the backend's base path, of the one GET a probe makes. */
  path: string;
  /**
   * `model-list`: the answer is an OpenAI/Anthropic-style model list (backends/model-list.ts);
   * `comfy-health`: the answer only says the box is up, ComfyUI's queue and node list decide.
   */
  reads: 'model-list' | 'comfy-health';
}

/**
 * How the models a box holds loaded are read (backends/residency-read.ts): `owned-by` from
 * the model list's `owned_by`, else by asking the box's residency paths in turn; `ollama` from
 * Ollama's `/api/ps`; `none`: never read (a cloud API, a media box).
 */
export type ResidencyRead = 'owned-by' | 'ollama' | 'none';

/** The spec fields a kind's credential reads. */
export type CredentialSpec = Pick<BackendSpec, 'api_key' | 'auth_mode'>;

/** Defaults a kind gives a spec that sets nothing (beyond BACKEND_DEFAULTS, which every kind shares). */
export interface KindDefaults {
  /** In-flight cap when the spec sets none; undefined = the global `max_concurrent`. */
  max_concurrent?: number;
  /** Models a swapping box holds loaded when `resident` is unset; undefined = the kind holds none. */
  resident?: number;
}

export interface BackendKind {
  readonly type: BackendType;
  /** Answers media generation only (ComfyUI): no chat models, no token prices, one prompt at a time. */
  readonly isMedia: boolean;
  readonly probe: ProbeRule;
  /** Client APIs whose requests it gets as the client sent them (passthrough). */
  readonly native: readonly ClientApi[];
  /** Client APIs it speaks natively only when the spec says so (`responses: native`). */
  readonly nativeOnRequest: readonly ClientApi[];
  /** Client APIs it answers through a bridge to its chat API. */
  readonly translated: readonly ClientApi[];
  /** Headers carrying `api_key` on every request to it (none without a key). */
  authHeaders(spec: CredentialSpec): Record<string, string>;
  /** Headers the gateway's own requests (discovery, residency, counts) add after the credential. */
  ownHeaders(spec: CredentialSpec): Record<string, string>;
  /** Without an api_key, the URL's userinfo goes as Basic auth (requests go to the origin, which never carries it). */
  readonly basicFromUrl: boolean;
  readonly defaults: KindDefaults;
  /** Per-token prices apply (`pricing:`, discovered, and for paid backends the built-in table). */
  readonly pricedPerToken: boolean;
  /** It has an `auth_mode` (how the key is sent). */
  readonly hasAuthMode: boolean;
  /** `prompt_cache` applies: translated Messages calls may keep `cache_control` on chat parts. */
  readonly translatesCacheControl: boolean;
  readonly residency: ResidencyRead;
  /** What a GPU group's switch does to it (media/gpu-switch.ts), if anything. */
  readonly groupSwitch?: 'unload_llm' | 'free_media';
  /**
   * Answers that say a model could not start or is still loading rather than that the box is
   * broken (upstream/classify.ts fails them over; a load still under way does not count).
   */
  readonly loadAnswers: readonly RegExp[];
}
