/**
 * Model lists and status bodies of each kind, built from the fake's own data (never from the
 * fixtures, which only judge the shapes). Pure functions of a small state snapshot.
 */
import { createHash } from 'node:crypto';
import type { FakeKind } from './types.ts';

/** What the status endpoints need to know about a running fake. */
export interface CatalogueState {
  models: string[];
  /** Unix seconds the fake started; used as `created`. */
  created: number;
  /** Models whose process is up (llama-swap /running, Ollama /api/ps), with their state. */
  running: { model: string; state: 'ready' | 'starting' }[];
  /** chat/completions being served now (llama.cpp slots). */
  busy: number;
  slots: number;
}

export const DEFAULT_MODELS: Record<FakeKind, string[]> = {
  llamacpp: ['fake-llama-3.1-8b-q4_k_m.gguf'],
  llamaswap: ['qwen3-8b', 'gemma3-12b'],
  vllm: ['acme/Qwen3-8B-Instruct'],
  ollama: ['llama3.2:latest', 'qwen3:8b'],
  openrouter: ['acme/chat-large', 'acme/chat-mini', 'acme/painter-image', 'acme/tiny-chat:free', 'acme/jingle-audio'],
  together: ['acme/Llama-3-70B-Instruct-Turbo', 'acme/bge-base-en', 'acme/flux-schnell', 'acme/Dedicated-Only-70B'],
};

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** A stable pseudo-random integer in [min, max) derived from `text`. */
function stableInt(text: string, min: number, max: number): number {
  return min + (parseInt(sha256Hex(text).slice(0, 8), 16) % (max - min));
}

// ---------------------------------------------------------------- llama.cpp

function llamaCppSamplingParams(): Record<string, unknown> {
  return {
    n_predict: -1,
    seed: 4294967295,
    temperature: 0.8,
    dynatemp_range: 0,
    dynatemp_exponent: 1,
    top_k: 40,
    top_p: 0.95,
    min_p: 0.05,
    top_n_sigma: -1,
    xtc_probability: 0,
    xtc_threshold: 0.1,
    typical_p: 1,
    repeat_last_n: 64,
    repeat_penalty: 1,
    presence_penalty: 0,
    frequency_penalty: 0,
    dry_multiplier: 0,
    dry_base: 1.75,
    dry_allowed_length: 2,
    dry_penalty_last_n: 4096,
    dry_sequence_breakers: ['\n', ':', '"', '*'],
    mirostat: 0,
    mirostat_tau: 5,
    mirostat_eta: 0.1,
    stop: [],
    max_tokens: -1,
    n_keep: 0,
    n_discard: 0,
    ignore_eos: false,
    stream: true,
    n_probs: 0,
    min_keep: 0,
    grammar: '',
    chat_format: 'Content-only',
    reasoning_format: 'none',
    reasoning_in_content: false,
    generation_prompt: '',
    samplers: ['penalties', 'dry', 'top_k', 'typ_p', 'top_p', 'min_p', 'xtc', 'temperature'],
    'speculative.n_max': 16,
    'speculative.n_min': 0,
    'speculative.p_min': 0.75,
    timings_per_token: false,
    post_sampling_probs: false,
    lora: [],
  };
}

const LLAMACPP_CTX = 8192;

function llamaCppSlot(id: number, processing: boolean): Record<string, unknown> {
  return {
    id,
    id_task: processing ? 100 + id : -1,
    n_ctx: LLAMACPP_CTX,
    speculative: false,
    is_processing: processing,
    params: llamaCppSamplingParams(),
    prompt: '',
    next_token: {
      has_next_token: processing,
      has_new_line: false,
      n_remain: -1,
      n_decoded: processing ? 1 : 0,
      stopping_word: '',
    },
  };
}

/** llama-server GET /slots: slot i is processing while i < busy. */
export function llamaCppSlots(s: CatalogueState): unknown[] {
  return Array.from({ length: s.slots }, (_, i) => llamaCppSlot(i, i < s.busy));
}

/** llama-server GET /props. */
export function llamaCppProps(s: CatalogueState): Record<string, unknown> {
  return {
    default_generation_settings: llamaCppSlot(0, false),
    total_slots: s.slots,
    model_path: `/models/${s.models[0]}`,
    chat_template: '{% for message in messages %}{{ message.content }}{% endfor %}',
    chat_template_caps: { supports_tools: true, supports_tool_calls: true, supports_system_role: true },
    modalities: { vision: false, audio: false },
    media_marker: '<__media_fake__>',
    build_info: 'b6000-fakefake',
    is_sleeping: false,
  };
}

/** llama-server GET /v1/models: the Ollama-style `models` list plus the OpenAI `data` list. */
export function llamaCppModels(s: CatalogueState): Record<string, unknown> {
  return {
    models: s.models.map((id) => ({
      name: id,
      model: id,
      modified_at: '',
      size: '',
      digest: '',
      type: 'model',
      description: '',
      tags: [''],
      capabilities: ['completion'],
      parameters: '',
      details: {
        parent_model: '',
        format: 'gguf',
        family: '',
        families: [''],
        parameter_size: '',
        quantization_level: '',
      },
    })),
    object: 'list',
    data: s.models.map((id) => ({
      id,
      object: 'model',
      architecture: { input_modalities: ['text'], output_modalities: ['text'] },
      created: s.created,
      owned_by: 'llamacpp',
      meta: {
        vocab_type: 2,
        n_vocab: 128256,
        n_ctx_train: 131072,
        n_embd: 4096,
        n_params: 8030261312,
        size: 4912898304,
      },
    })),
  };
}

// ---------------------------------------------------------------- llama-swap

function displayName(id: string): string {
  return id
    .split(/[-_:/]/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join(' ');
}

/** llama-swap GET /v1/models (current api.go shape). */
export function llamaSwapModels(s: CatalogueState): Record<string, unknown> {
  const loaded = new Set(s.running.filter((r) => r.state === 'ready').map((r) => r.model));
  return {
    object: 'list',
    data: s.models.map((id) => ({
      id,
      object: 'model',
      created: s.created,
      owned_by: 'llama-swap',
      name: displayName(id),
      description: `fake ${id}`,
      meta: { llamaswap: { type: 'model' } },
      status: { value: loaded.has(id) ? 'loaded' : 'unloaded' },
    })),
  };
}

/** llama-swap GET /running. */
export function llamaSwapRunning(s: CatalogueState): Record<string, unknown> {
  return {
    running: s.running.map((r, i) => ({
      model: r.model,
      state: r.state,
      cmd: `llama-server --port ${5800 + i} -m /models/${r.model}.gguf`,
      proxy: `http://127.0.0.1:${5800 + i}`,
      ttl: 300,
      name: displayName(r.model),
      description: `fake ${r.model}`,
    })),
  };
}

// ---------------------------------------------------------------- vLLM

/** vLLM GET /v1/models. */
export function vllmModels(s: CatalogueState): Record<string, unknown> {
  return {
    object: 'list',
    data: s.models.map((id) => ({
      id,
      object: 'model',
      created: s.created,
      owned_by: 'vllm',
      root: id,
      parent: null,
      max_model_len: 32768,
      permission: [
        {
          id: `modelperm-${sha256Hex(id).slice(0, 32)}`,
          object: 'model_permission',
          created: s.created,
          allow_create_engine: false,
          allow_sampling: true,
          allow_logprobs: true,
          allow_search_indices: false,
          allow_view: true,
          allow_fine_tuning: false,
          organization: '*',
          group: null,
          is_blocking: false,
        },
      ],
    })),
  };
}

// ---------------------------------------------------------------- Ollama

function ollamaDetails(name: string): Record<string, unknown> {
  const family =
    name
      .split(':')[0]!
      .split('/')
      .pop()!
      .replace(/[\d.]+$/, '') || 'llama';
  return {
    parent_model: '',
    format: 'gguf',
    family,
    families: [family],
    parameter_size: `${stableInt(name, 1, 70)}.0B`,
    quantization_level: 'Q4_K_M',
  };
}

function ollamaSize(name: string): number {
  return stableInt(name, 1_000_000_000, 2_000_000_000) * 2;
}

/** Ollama GET /api/tags. */
export function ollamaTags(s: CatalogueState): Record<string, unknown> {
  const modified = new Date(s.created * 1000).toISOString();
  return {
    models: s.models.map((name) => ({
      name,
      model: name,
      modified_at: modified,
      size: ollamaSize(name),
      digest: sha256Hex(name),
      details: ollamaDetails(name),
    })),
  };
}

/** Ollama GET /api/ps: the loaded models. */
export function ollamaPs(s: CatalogueState): Record<string, unknown> {
  const expires = new Date(s.created * 1000 + 5 * 60_000).toISOString();
  return {
    models: s.running.map(({ model: name }) => ({
      name,
      model: name,
      size: ollamaSize(name),
      digest: sha256Hex(name),
      details: ollamaDetails(name),
      expires_at: expires,
      size_vram: ollamaSize(name),
      context_length: 4096,
    })),
  };
}

/** Ollama's owner: the namespace of the name (hf.co/<owner>/..., <user>/...), else "library". */
function ollamaOwner(name: string): string {
  const parts = name.split(':')[0]!.split('/');
  if (parts.length >= 3) return parts[1]!;
  if (parts.length === 2) return parts[0]!;
  return 'library';
}

/** Ollama GET /v1/models. */
export function ollamaOpenAiModels(s: CatalogueState): Record<string, unknown> {
  return {
    object: 'list',
    data: s.models.map((id) => ({ id, object: 'model', created: s.created, owned_by: ollamaOwner(id) })),
  };
}

// ---------------------------------------------------------------- OpenRouter

/** What the fake knows about one OpenRouter model; prices are USD per token, as strings. */
export interface OpenRouterModelSpec {
  id: string;
  prompt: string;
  completion: string;
  /** Per-token price of prompt-cache reads, when the model has one. */
  cacheRead?: string;
  input: string[];
  output: string[];
  contextLength: number;
}

const OPENROUTER_KNOWN: Record<string, Omit<OpenRouterModelSpec, 'id'>> = {
  'acme/chat-large': {
    prompt: '0.000003',
    completion: '0.000015',
    cacheRead: '0.0000003',
    input: ['text', 'image'],
    output: ['text'],
    contextLength: 200000,
  },
  'acme/chat-mini': {
    prompt: '0.00000015',
    completion: '0.0000006',
    input: ['text'],
    output: ['text'],
    contextLength: 128000,
  },
  'acme/painter-image': {
    prompt: '0.0000003',
    completion: '0.0000025',
    input: ['image', 'text'],
    output: ['image', 'text'],
    contextLength: 32768,
  },
  'acme/tiny-chat:free': { prompt: '0', completion: '0', input: ['text'], output: ['text'], contextLength: 32768 },
  'acme/jingle-audio': {
    prompt: '0',
    completion: '0',
    input: ['text'],
    output: ['text', 'audio'],
    contextLength: 65536,
  },
};

/** The fake's data for an OpenRouter id: known ids from the table, others derived from the name. */
export function openRouterSpec(id: string): OpenRouterModelSpec {
  const known = OPENROUTER_KNOWN[id];
  if (known) return { id, ...known };
  const free = id.endsWith(':free');
  const image = /image/i.test(id);
  return {
    id,
    prompt: free ? '0' : '0.000001',
    completion: free ? '0' : '0.000002',
    input: ['text'],
    output: image ? ['image', 'text'] : ['text'],
    contextLength: 65536,
  };
}

/** OpenRouter GET /api/v1/models. */
export function openRouterModels(s: CatalogueState): Record<string, unknown> {
  return {
    data: s.models.map((id) => {
      const m = openRouterSpec(id);
      return {
        id,
        canonical_slug: id.replace(/:free$/, ''),
        hugging_face_id: '',
        name: `Acme: ${displayName(id.split('/').pop()!)}`,
        created: s.created,
        description: `Fake model ${id} served by the test fleet.`,
        context_length: m.contextLength,
        architecture: {
          modality: `${m.input.join('+')}->${m.output.join('+')}`,
          input_modalities: m.input,
          output_modalities: m.output,
          tokenizer: 'Other',
          instruct_type: null,
        },
        pricing: {
          prompt: m.prompt,
          completion: m.completion,
          ...(m.cacheRead ? { input_cache_read: m.cacheRead } : {}),
        },
        top_provider: { context_length: m.contextLength, max_completion_tokens: 8192, is_moderated: false },
        per_request_limits: null,
        supported_parameters: ['max_tokens', 'stop', 'temperature', 'tool_choice', 'tools', 'top_p'],
        default_parameters: {},
        knowledge_cutoff: '2025-01-31',
        expiration_date: null,
        links: { details: `/api/v1/models/${id}/endpoints` },
      };
    }),
  };
}

// ---------------------------------------------------------------- Together

export type TogetherModelType = 'chat' | 'language' | 'embedding' | 'image' | 'rerank';

/** What the fake knows about one Together model; prices are USD per million tokens. */
export interface TogetherModelSpec {
  id: string;
  type: TogetherModelType;
  input: number;
  output: number;
  contextLength: number;
}

const TOGETHER_KNOWN: Record<string, Omit<TogetherModelSpec, 'id'>> = {
  'acme/Llama-3-70B-Instruct-Turbo': { type: 'chat', input: 0.88, output: 0.88, contextLength: 131072 },
  'acme/bge-base-en': { type: 'embedding', input: 0.008, output: 0, contextLength: 512 },
  'acme/flux-schnell': { type: 'image', input: 0, output: 0, contextLength: 0 },
  'acme/Dedicated-Only-70B': { type: 'chat', input: 0, output: 0, contextLength: 32768 },
};

/** The fake's data for a Together id: known ids from the table, others derived from the name. */
export function togetherSpec(id: string): TogetherModelSpec {
  const known = TOGETHER_KNOWN[id];
  if (known) return { id, ...known };
  if (/embed|bge|e5-/i.test(id)) return { id, type: 'embedding', input: 0.02, output: 0, contextLength: 8192 };
  if (/flux|image|sdxl/i.test(id)) return { id, type: 'image', input: 0, output: 0, contextLength: 0 };
  const dedicated = /dedicated/i.test(id);
  return { id, type: 'chat', input: dedicated ? 0 : 0.2, output: dedicated ? 0 : 0.2, contextLength: 32768 };
}

/** A chat model priced 0/0 has no serverless endpoint: Together refuses to run it. */
export function togetherIsDedicatedOnly(id: string): boolean {
  const m = togetherSpec(id);
  return m.type === 'chat' && m.input === 0 && m.output === 0;
}

/** Together GET /v1/models: a bare array. */
export function togetherModels(s: CatalogueState): unknown[] {
  return s.models.map((id) => {
    const m = togetherSpec(id);
    const [organization = 'acme'] = id.split('/');
    return {
      id,
      object: 'model',
      created: s.created,
      type: m.type,
      display_name: displayName(id.split('/').pop()!),
      organization,
      link: `https://huggingface.co/${id}`,
      license: 'apache-2.0',
      context_length: m.contextLength,
      pricing: { hourly: 0, input: m.input, output: m.output, base: 0, finetune: 0 },
    };
  });
}

/** The model list body of `kind` (the endpoint under its OpenAI prefix). */
export function modelList(kind: FakeKind, s: CatalogueState): unknown {
  switch (kind) {
    case 'llamacpp':
      return llamaCppModels(s);
    case 'llamaswap':
      return llamaSwapModels(s);
    case 'vllm':
      return vllmModels(s);
    case 'ollama':
      return ollamaOpenAiModels(s);
    case 'openrouter':
      return openRouterModels(s);
    case 'together':
      return togetherModels(s);
  }
}
