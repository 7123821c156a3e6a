/**
 * What a call cost, from its token usage and the backend's normalised pricing. Pure.
 *
 * Two usage conventions exist upstream and they disagree about what "input" means:
 * - OpenAI (Chat Completions, Responses, OpenRouter, vLLM, llama.cpp): `prompt_tokens` /
 *   `input_tokens` INCLUDES the cached tokens reported in `*_tokens_details.cached_tokens`.
 * - Anthropic Messages: `input_tokens` EXCLUDES `cache_read_input_tokens` and
 *   `cache_creation_input_tokens`.
 * The call log stores the OpenAI convention (prompt = every input token, cached ones
 * included), which is what `usageFromOpenAI` / `usageFromAnthropic` (upstream/usage.ts) return.
 * The pricing is the one backends/pricing.ts resolves: the backend's `pricing:`, else the prices
 * its /v1/models publishes, else the built-in table (paid openai / anthropic backends).
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

/**
 * The amount that counts as spent: nothing on a free backend (`paid: false`, whatever it
 * reported), else the upstream's own figure when it reported one (it is what the provider
 * bills), else the computed cost. `paid` absent counts as paid (rows from before it existed).
 */
export function effectiveCost(rec: { cost_usd: number; upstream_cost_usd: number | null; paid?: boolean }): number {
  if (rec.paid === false) return 0;
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
