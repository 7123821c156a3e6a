/**
 * What a call cost, from its token usage and the backend's normalised pricing. Pure.
 *
 * Two usage conventions exist upstream and they disagree about what "input" means:
 * - OpenAI (Chat Completions, Responses, OpenRouter, vLLM, llama.cpp): `prompt_tokens` /
 *   `input_tokens` INCLUDES the cached tokens reported in `*_tokens_details.cached_tokens`.
 * - Anthropic Messages: `input_tokens` EXCLUDES `cache_read_input_tokens` and
 *   `cache_creation_input_tokens`.
 * The call log stores the OpenAI convention (prompt = every input token, cached ones
 * included), which is what `normalizeUsage` returns.
 */
import type { ModelPricing } from '../backends/types.ts';

/** Token counts of one call. Meaning of `prompt_tokens` depends on the shape (see above). */
export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  /** Input tokens read from the provider's prompt cache. */
  cached_tokens?: number;
  /** Input tokens written into the provider's prompt cache. */
  cache_write_tokens?: number;
}

export type UsageShape = 'openai' | 'anthropic';

export interface CostOptions {
  /** Local hardware costs nothing, whatever a pricing table says. */
  local: boolean;
  shape: UsageShape;
}

const PER_TOKEN = 1 / 1_000_000;

/**
 * Cost in USD. Local backends and unpriced models cost 0. Cache reads are billed at
 * `cache_read` and cache writes at `cache_write` when the pricing knows them, else at the
 * input price. Billing cache reads as fresh input overstates a cache-heavy agent session
 * several-fold, so the split matters.
 */
export function computeCost(usage: TokenUsage, pricing: ModelPricing | undefined, opts: CostOptions): number {
  if (opts.local || !pricing) return 0;
  const prompt = count(usage.prompt_tokens);
  const completion = count(usage.completion_tokens);
  const cacheRead = count(usage.cached_tokens);
  const cacheWrite = count(usage.cache_write_tokens);
  const freshInput = opts.shape === 'openai' ? Math.max(0, prompt - cacheRead - cacheWrite) : prompt;

  const input = price(pricing.input);
  const usd =
    freshInput * input +
    cacheRead * price(pricing.cache_read, input) +
    cacheWrite * price(pricing.cache_write, input) +
    completion * price(pricing.output);
  return usd * PER_TOKEN;
}

/** Usage in the call log's convention, plus the upstream's own cost figure when it gave one. */
export interface NormalizedUsage {
  /** Every input token, cached reads and cache writes included. */
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  /** OpenRouter's `usage.cost` (USD), when reported. */
  upstream_cost_usd: number | null;
}

/**
 * Reads a provider's `usage` object into the call log's convention. OpenAI shape accepts
 * Chat Completions (`prompt_tokens`, `prompt_tokens_details`), Responses (`input_tokens`,
 * `input_tokens_details`), DeepSeek's `prompt_cache_hit_tokens` and OpenRouter's `cost` and
 * `cache_write_tokens`. Anthropic shape adds the cache counts to `input_tokens`. Missing or
 * malformed fields count as 0.
 */
export function normalizeUsage(raw: unknown, shape: UsageShape): NormalizedUsage {
  const u: Record<string, unknown> = isObject(raw) ? raw : {};
  if (shape === 'anthropic') {
    const cached = count(u.cache_read_input_tokens);
    const written = count(u.cache_creation_input_tokens);
    return {
      prompt_tokens: count(u.input_tokens) + cached + written,
      completion_tokens: count(u.output_tokens),
      cached_tokens: cached,
      cache_write_tokens: written,
      upstream_cost_usd: null,
    };
  }
  const details: Record<string, unknown> = isObject(u.prompt_tokens_details)
    ? u.prompt_tokens_details
    : isObject(u.input_tokens_details)
      ? u.input_tokens_details
      : {};
  const prompt = u.prompt_tokens !== undefined ? count(u.prompt_tokens) : count(u.input_tokens);
  const completion = u.completion_tokens !== undefined ? count(u.completion_tokens) : count(u.output_tokens);
  const cached = details.cached_tokens !== undefined ? count(details.cached_tokens) : count(u.prompt_cache_hit_tokens);
  const written = count(details.cache_write_tokens ?? u.cache_creation_input_tokens);
  const cost = typeof u.cost === 'number' && Number.isFinite(u.cost) && u.cost >= 0 ? u.cost : null;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    cached_tokens: Math.min(cached, prompt),
    cache_write_tokens: Math.min(written, Math.max(0, prompt - cached)),
    upstream_cost_usd: cost,
  };
}

/**
 * The amount that counts as spent: the upstream's own figure when it reported one (it is
 * what the provider bills), else the computed cost.
 */
export function effectiveCost(rec: { cost_usd: number; upstream_cost_usd: number | null }): number {
  const upstream = rec.upstream_cost_usd;
  if (typeof upstream === 'number' && Number.isFinite(upstream) && upstream >= 0) return upstream;
  return Number.isFinite(rec.cost_usd) && rec.cost_usd > 0 ? rec.cost_usd : 0;
}

function count(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;
}

function price(v: number | undefined, fallback = 0): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : fallback;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
