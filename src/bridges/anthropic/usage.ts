/**
 * Token usage in Anthropic's fields, from the gateway's one Usage shape.
 *
 * Anthropic's `input_tokens` leaves out what was read from or written to the prompt cache
 * (those are `cache_read_input_tokens` / `cache_creation_input_tokens`), while chat
 * completions' `prompt_tokens` counts the whole prompt. So input = prompt − cached − written,
 * the inverse of `usageFromAnthropic`. Chat backends rarely report cache writes (OpenRouter
 * does for Anthropic models): without a report the field is 0.
 */
import type { Usage } from '../../wire/usage.ts';
import type { Json } from './types.ts';

export interface AnthropicUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  output_tokens: number;
}

export function anthropicUsage(usage: Usage): AnthropicUsage {
  const cached = usage.cached_tokens ?? 0;
  const written = usage.cache_write_tokens ?? 0;
  return {
    input_tokens: Math.max(0, usage.prompt_tokens - cached - written),
    cache_creation_input_tokens: written,
    cache_read_input_tokens: cached,
    output_tokens: usage.completion_tokens,
  };
}

/** A Message's usage as the real API writes it, cache-creation split and service tier included. */
export function messageUsage(usage: Usage): Json {
  const u = anthropicUsage(usage);
  return {
    input_tokens: u.input_tokens,
    cache_creation_input_tokens: u.cache_creation_input_tokens,
    cache_read_input_tokens: u.cache_read_input_tokens,
    // chat backends report no cache lifetime: a write counts as the default five-minute one
    cache_creation: { ephemeral_5m_input_tokens: u.cache_creation_input_tokens, ephemeral_1h_input_tokens: 0 },
    output_tokens: u.output_tokens,
    service_tier: 'standard',
  };
}
