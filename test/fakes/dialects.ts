/**
 * How each kind's OpenAI-compatible bodies differ from one another: ids, which optional
 * fields appear, usage extras. Pure data and small pure functions; replies.ts uses them.
 */
import { randomBytes } from 'node:crypto';
import { openRouterSpec } from './catalogues.ts';
import type { FakeKind } from './types.ts';

export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  [extra: string]: unknown;
}

export interface Dialect {
  /** A fresh id for a chat (`chat`) or text (`text`) completion. */
  newId(what: 'chat' | 'text'): string;
  /** `system_fingerprint` on chunks and completions, when the server sends one. */
  systemFingerprint?: string;
  /** `logprobs: null` on each chat choice. */
  choiceLogprobs: boolean;
  /** `refusal: null` in the first delta and in messages. */
  refusal: boolean;
  /** Ollama repeats `role` in every delta. */
  roleInEveryDelta: boolean;
  /** llama.cpp `timings` on the last chunk and on non-stream replies. */
  timings: boolean;
  /** Extra top-level fields of every chunk / completion. */
  extraTop: Record<string, unknown>;
  /** Extra fields of each choice, given its finish_reason. */
  extraChoice(finish: string | null): Record<string, unknown>;
  /** The usage object for these token counts; `reasoning` of the completion tokens were reasoning. */
  usage(model: string, prompt: number, completion: number, reasoning?: number): TokenUsage;
  /**
   * Where reasoning text goes in deltas and messages: llama-server (--reasoning-format deepseek)
   * and vLLM's reasoning parsers say `reasoning_content`; Ollama, OpenRouter and Together `reasoning`.
   */
  reasoningField: 'reasoning_content' | 'reasoning';
  /** Does /v1/embeddings honour `encoding_format: "base64"`? */
  embeddingsBase64: boolean;
}

function alnum(n: number): string {
  const abc = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return Array.from(randomBytes(n), (b) => abc[b % abc.length]).join('');
}

function hex(n: number): string {
  return randomBytes(Math.ceil(n / 2))
    .toString('hex')
    .slice(0, n);
}

function baseUsage(prompt: number, completion: number): TokenUsage {
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

const none = (): Record<string, unknown> => ({});

const llamaCpp: Dialect = {
  newId: (what) => `${what === 'chat' ? 'chatcmpl' : 'cmpl'}-${alnum(32)}`,
  systemFingerprint: 'b6000-fakefake',
  choiceLogprobs: false,
  refusal: false,
  roleInEveryDelta: false,
  timings: true,
  extraTop: {},
  extraChoice: none,
  usage: (_m, p, c) => ({ ...baseUsage(p, c), prompt_tokens_details: { cached_tokens: 0 } }),
  embeddingsBase64: false,
  reasoningField: 'reasoning_content',
};

const vllm: Dialect = {
  newId: (what) => `${what === 'chat' ? 'chatcmpl' : 'cmpl'}-${hex(32)}`,
  choiceLogprobs: true,
  refusal: false,
  roleInEveryDelta: false,
  timings: false,
  extraTop: {},
  extraChoice: (finish) => (finish === null ? {} : { stop_reason: null }),
  usage: (_m, p, c) => ({ ...baseUsage(p, c), prompt_tokens_details: null }),
  embeddingsBase64: true,
  reasoningField: 'reasoning_content',
};

const ollama: Dialect = {
  newId: (what) => `${what === 'chat' ? 'chatcmpl' : 'cmpl'}-${100 + (randomBytes(2).readUInt16LE(0) % 900)}`,
  systemFingerprint: 'fp_ollama',
  choiceLogprobs: false,
  refusal: false,
  roleInEveryDelta: true,
  timings: false,
  extraTop: {},
  extraChoice: none,
  usage: (_m, p, c) => baseUsage(p, c),
  embeddingsBase64: false,
  reasoningField: 'reasoning',
};

/** OpenRouter's usage accounting: cost in USD from the model's per-token prices. */
function openRouterUsage(model: string, prompt: number, completion: number, reasoning = 0): TokenUsage {
  const spec = openRouterSpec(model);
  const promptCost = prompt * Number(spec.prompt);
  const completionCost = completion * Number(spec.completion);
  return {
    ...baseUsage(prompt, completion),
    cost: promptCost + completionCost,
    is_byok: false,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    cost_details: {
      upstream_inference_cost: null,
      upstream_inference_prompt_cost: promptCost,
      upstream_inference_completions_cost: completionCost,
    },
    completion_tokens_details: { reasoning_tokens: reasoning, image_tokens: 0 },
  };
}

const openRouter: Dialect = {
  newId: () => `gen-${Math.floor(Date.now() / 1000)}-${alnum(20)}`,
  choiceLogprobs: true,
  refusal: false,
  roleInEveryDelta: true,
  timings: false,
  extraTop: { provider: 'AcmeCloud' },
  extraChoice: (finish) => ({ native_finish_reason: finish }),
  usage: openRouterUsage,
  embeddingsBase64: true,
  reasoningField: 'reasoning',
};

const together: Dialect = {
  newId: () => `${hex(16)}-LAX`,
  choiceLogprobs: true,
  refusal: false,
  roleInEveryDelta: false,
  timings: false,
  extraTop: {},
  extraChoice: none,
  usage: (_m, p, c) => ({ ...baseUsage(p, c), cached_tokens: 0 }),
  embeddingsBase64: true,
  reasoningField: 'reasoning',
};

/** llama-swap proxies llama-server, so its replies are llama.cpp's. */
export const DIALECTS: Record<FakeKind, Dialect> = {
  llamacpp: llamaCpp,
  llamaswap: llamaCpp,
  vllm,
  ollama,
  openrouter: openRouter,
  together,
};
