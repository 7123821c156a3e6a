/**
 * The statistics of Ollama's final object (`total_duration`, `load_duration`,
 * `prompt_eval_count`, `prompt_eval_duration`, `eval_count`, `eval_duration`), nanoseconds,
 * from what the gateway measured: the times it saw and the usage it read. Ollama's own clients
 * divide `eval_count` by `eval_duration` for tokens per second, so neither is ever left out.
 *
 * - total: from the call's arrival to its last byte;
 * - load: the time before the answering attempt was sent (the queue, a park, failed attempts):
 *   what a caller of one Ollama server waits while the model loads;
 * - prompt eval: from sending to the first token; eval: from the first token to the end. A
 *   whole answer (no first-token time) is split by llama.cpp's `timings` when the backend gave
 *   them, else the whole attempt counts as eval (an honest lower bound of the speed).
 */
import type { CallTimings } from '../../wire/call-timings.ts';
import { tokenCount, type Usage } from '../../wire/usage.ts';
import type { CallTimes } from './types.ts';

export interface OllamaMetrics {
  total_duration: number;
  load_duration: number;
  prompt_eval_count: number;
  prompt_eval_duration: number;
  eval_count: number;
  eval_duration: number;
}

const NS_PER_MS = 1_000_000;

function ns(ms: number): number {
  return Math.max(0, Math.round(ms * NS_PER_MS));
}

export function ollamaMetrics(times: CallTimes, usage: Usage | undefined, timings?: CallTimings): OllamaMetrics {
  const attemptMs = times.endedAt - times.sentAt;
  let promptMs: number;
  if (times.firstTokenAt !== undefined) promptMs = times.firstTokenAt - times.sentAt;
  else if (timings?.promptMs !== undefined && timings.predictedMs !== undefined) {
    // llama.cpp's own split of the attempt, scaled to the time the gateway saw it take
    const whole = timings.promptMs + timings.predictedMs;
    promptMs = whole > 0 ? (attemptMs * timings.promptMs) / whole : 0;
  } else promptMs = 0;
  return {
    total_duration: ns(times.endedAt - times.startedAt),
    load_duration: ns(times.sentAt - times.startedAt),
    prompt_eval_count: usage?.prompt_tokens ?? 0,
    prompt_eval_duration: ns(promptMs),
    eval_count: usage?.completion_tokens ?? 0,
    eval_duration: ns(attemptMs - promptMs),
  };
}

/** Usage from an Ollama answer's own counts (a native answer passed through). */
export function usageFromOllama(obj: Record<string, unknown>): Usage | undefined {
  const prompt = tokenCount(obj.prompt_eval_count);
  const output = tokenCount(obj.eval_count);
  if (prompt === undefined && output === undefined) return undefined;
  return { prompt_tokens: prompt ?? 0, completion_tokens: output ?? 0, total_tokens: (prompt ?? 0) + (output ?? 0) };
}

/** Ollama's `done_reason` for a chat `finish_reason`: a tool call ends with "stop" there too. */
export function doneReason(finish: unknown): string {
  return finish === 'length' ? 'length' : 'stop';
}
