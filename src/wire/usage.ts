/**
 * Token usage in one shape, whatever the backend reported it in.
 *
 * `prompt_tokens` always counts the whole prompt, cached parts included (OpenAI's meaning);
 * `cached_tokens` and `cache_write_tokens` say how much of it was read from / written to a
 * prompt cache.
 */
import { isObject } from '../json.ts';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cached_tokens?: number;
  cache_write_tokens?: number;
  /** Upstream-reported cost in USD (OpenRouter `usage.cost`). */
  cost?: number;
}

/** A token count (or cost) as reported: a finite number ≥ 0, else undefined. */
export function tokenCount(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

function withOptional(usage: Usage, cached: number | undefined, cacheWrite: number | undefined, cost?: number): Usage {
  if (cached !== undefined) usage.cached_tokens = cached;
  if (cacheWrite !== undefined) usage.cache_write_tokens = cacheWrite;
  if (cost !== undefined) usage.cost = cost;
  return usage;
}

/**
 * Reads `obj.usage` of an OpenAI-style body or chunk: chat completions
 * (`prompt_tokens`, `prompt_tokens_details.cached_tokens|cache_write_tokens`, OpenRouter `cost`)
 * and, as a fallback, the Responses API (`input_tokens`, `input_tokens_details.cached_tokens`).
 * Undefined when there is no usage object with token counts.
 */
export function usageFromOpenAI(obj: unknown): Usage | undefined {
  if (!isObject(obj) || !isObject(obj.usage)) return undefined;
  const u = obj.usage;
  const prompt = tokenCount(u.prompt_tokens) ?? tokenCount(u.input_tokens);
  const completion = tokenCount(u.completion_tokens) ?? tokenCount(u.output_tokens);
  if (prompt === undefined && completion === undefined) return undefined;
  const details = isObject(u.prompt_tokens_details)
    ? u.prompt_tokens_details
    : isObject(u.input_tokens_details)
      ? u.input_tokens_details
      : undefined;
  const usage: Usage = {
    prompt_tokens: prompt ?? 0,
    completion_tokens: completion ?? 0,
    total_tokens: tokenCount(u.total_tokens) ?? (prompt ?? 0) + (completion ?? 0),
  };
  // DeepSeek reports cache hits as `prompt_cache_hit_tokens`; some servers put cache writes
  // at the top level like Anthropic. Both are parts of the prompt, so never more than it.
  const cached = tokenCount(details?.cached_tokens) ?? tokenCount(u.prompt_cache_hit_tokens);
  const written = tokenCount(details?.cache_write_tokens) ?? tokenCount(u.cache_creation_input_tokens);
  const within = (n: number | undefined, room: number) => (n === undefined ? undefined : Math.min(n, room));
  const cachedWithin = within(cached, usage.prompt_tokens);
  return withOptional(
    usage,
    cachedWithin,
    within(written, usage.prompt_tokens - (cachedWithin ?? 0)),
    tokenCount(u.cost),
  );
}

/**
 * Reads Anthropic usage from a Messages body, a `message_delta` event (`usage`) or a
 * `message_start` event (`message.usage`). Anthropic's `input_tokens` excludes cached tokens,
 * so `prompt_tokens` = input + cache reads + cache writes.
 */
export function usageFromAnthropic(obj: unknown): Usage | undefined {
  if (!isObject(obj)) return undefined;
  const u = isObject(obj.usage)
    ? obj.usage
    : isObject(obj.message) && isObject(obj.message.usage)
      ? obj.message.usage
      : undefined;
  if (!u) return undefined;
  const input = tokenCount(u.input_tokens);
  const output = tokenCount(u.output_tokens);
  if (input === undefined && output === undefined) return undefined;
  const cacheRead = tokenCount(u.cache_read_input_tokens);
  const cacheWrite = tokenCount(u.cache_creation_input_tokens);
  const prompt = (input ?? 0) + (cacheRead ?? 0) + (cacheWrite ?? 0);
  const completion = output ?? 0;
  return withOptional(
    { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
    cacheRead,
    cacheWrite,
  );
}
