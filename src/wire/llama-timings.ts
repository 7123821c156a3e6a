/**
 * llama.cpp's `timings` object, on answers and on the last stream chunk (many builds report no
 * `usage`): usage from it, and the speed-learning part of it.
 */
import type { CallTimings } from './call-timings.ts';
import { tokenCount as count, type Usage } from './usage.ts';

/**
 * Usage from llama.cpp's `timings` object: `prompt_n` tokens evaluated plus `cache_n` reused
 * from the KV cache make the prompt; `predicted_n` is the output.
 */
export function usageFromLlamaCppTimings(timings: unknown): Usage | undefined {
  if (typeof timings !== 'object' || timings === null) return undefined;
  const t = timings as Record<string, unknown>;
  const evaluated = count(t.prompt_n);
  const predicted = count(t.predicted_n);
  if (evaluated === undefined && predicted === undefined) return undefined;
  const cached = count(t.cache_n);
  const prompt = (evaluated ?? 0) + (cached ?? 0);
  const completion = predicted ?? 0;
  const usage: Usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  if (cached) usage.cached_tokens = cached;
  return usage;
}

/** The speed-learning part of llama.cpp's `timings` (prompt_n/_ms, predicted_n/_ms); undefined when none is there. */
export function llamaCppTimings(timings: unknown): CallTimings | undefined {
  if (typeof timings !== 'object' || timings === null) return undefined;
  const t = timings as Record<string, unknown>;
  const result: CallTimings = {};
  const promptN = count(t.prompt_n);
  const promptMs = count(t.prompt_ms);
  const predictedN = count(t.predicted_n);
  const predictedMs = count(t.predicted_ms);
  if (promptN !== undefined) result.promptN = promptN;
  if (promptMs !== undefined) result.promptMs = promptMs;
  if (predictedN !== undefined) result.predictedN = predictedN;
  if (predictedMs !== undefined) result.predictedMs = predictedMs;
  return Object.keys(result).length > 0 ? result : undefined;
}
