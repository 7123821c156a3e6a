/**
 * Why the answer ended, in Anthropic's words, from a chat backend's `finish_reason`.
 *
 * Chat completions say `stop` both for a natural end and for a matched stop sequence; Anthropic
 * tells them apart (`end_turn` / `stop_sequence` plus which sequence). Only some backends say
 * which string matched: vLLM puts it in the choice's `stop_reason` (a token id when a stop
 * token matched instead), llama.cpp names it `stopping_word` (on the choice or the chunk, or
 * inside `__verbose` when the server runs verbose). A sequence counts only when it is one the
 * client asked for, so a backend's own stop strings never show up as the client's. When no
 * backend says so, a matched sequence reads as `end_turn`: the matched text is cut from the
 * output, so there is nothing left to recognise it by.
 */
import { isObject, type Json } from './types.ts';

export interface StopInfo {
  stop_reason: string;
  stop_sequence: string | null;
}

/** The client's stop sequence that the backend reports having matched, if it reports one. */
export function reportedStopSequence(
  choice: Json,
  chunk: Json,
  stopSequences: readonly string[] | undefined,
): string | undefined {
  if (!stopSequences || stopSequences.length === 0) return undefined;
  const verbose = isObject(chunk.__verbose) ? chunk.__verbose : undefined;
  for (const candidate of [choice.stop_reason, choice.stopping_word, chunk.stopping_word, verbose?.stopping_word]) {
    if (typeof candidate === 'string' && candidate !== '' && stopSequences.includes(candidate)) return candidate;
  }
  return undefined;
}

/**
 * `length` → max_tokens, `tool_calls` (and the older `function_call`) → tool_use,
 * `content_filter` → refusal (Anthropic's value for a declined answer), a reported stop
 * sequence → stop_sequence, anything else → end_turn. Some backends finish a tool call with
 * `stop` (Ollama did): an answer that holds tool calls and was not cut short is `tool_use`,
 * as a client waits for that value before it runs the tools.
 */
export function stopInfo(finishReason: unknown, matchedSequence: string | undefined, hasToolUse: boolean): StopInfo {
  if (finishReason === 'length') return { stop_reason: 'max_tokens', stop_sequence: null };
  if (finishReason === 'content_filter') return { stop_reason: 'refusal', stop_sequence: null };
  if (finishReason === 'tool_calls' || finishReason === 'function_call' || hasToolUse)
    return { stop_reason: 'tool_use', stop_sequence: null };
  if (matchedSequence !== undefined) return { stop_reason: 'stop_sequence', stop_sequence: matchedSequence };
  return { stop_reason: 'end_turn', stop_sequence: null };
}
