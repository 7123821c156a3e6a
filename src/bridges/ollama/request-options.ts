/**
 * The request fields of Ollama's native API that change how a model answers, as the
 * chat-completions fields an OpenAI-compatible backend reads:
 *
 * - `options` (Modelfile parameters): `temperature`, `top_p`, `top_k`, `min_p`, `seed`, `stop`,
 *   `repeat_penalty` (llama.cpp's own name, which vLLM and Ollama's /v1 read too),
 *   `presence_penalty`, `frequency_penalty`, and `num_predict` → `max_tokens` (-1 and -2 mean
 *   "no limit" and "fill the context": no `max_tokens` then). Load-time parameters (`num_ctx`,
 *   `num_gpu`, `num_thread`, …) belong to the server that loads the model: a chat backend has
 *   no per-request equivalent, so they are left out.
 * - `format`: `"json"` → `response_format: {type: "json_object"}`, a JSON schema →
 *   `{type: "json_schema", json_schema: {name, schema}}`.
 * - `think`: true / false / a level (`low`, `medium`, `high`, `max`) → the gateway's one
 *   reasoning switch (bridges/reasoning), applied the way the serving backend understands it.
 */
import type { ReasoningWant } from '../reasoning/switch.ts';
import { invalid, isObject, type Json } from './types.ts';

/** Option name → chat field, for the options that carry over as they are. */
const SAME_VALUE: Readonly<Record<string, string>> = {
  temperature: 'temperature',
  top_p: 'top_p',
  top_k: 'top_k',
  min_p: 'min_p',
  seed: 'seed',
  repeat_penalty: 'repeat_penalty',
  presence_penalty: 'presence_penalty',
  frequency_penalty: 'frequency_penalty',
};

/** Writes the sampling fields `options` asks for into `chat`. */
export function applyOptions(options: unknown, chat: Json): void {
  if (options === undefined || options === null) return;
  if (!isObject(options)) throw invalid('options', 'must be an object of model parameters');
  for (const [name, field] of Object.entries(SAME_VALUE)) {
    const value = options[name];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid(`options.${name}`, 'must be a number');
    chat[field] = value;
  }
  const predict = options.num_predict;
  if (predict !== undefined && predict !== null) {
    if (typeof predict !== 'number' || !Number.isInteger(predict)) {
      throw invalid('options.num_predict', 'must be a whole number');
    }
    if (predict > 0) chat.max_tokens = predict;
  }
  const stop = options.stop;
  if (stop !== undefined && stop !== null) {
    const list = typeof stop === 'string' ? [stop] : stop;
    if (!Array.isArray(list) || !list.every((s) => typeof s === 'string')) {
      throw invalid('options.stop', 'must be a string or a list of strings');
    }
    if (list.length) chat.stop = list;
  }
}

/** Ollama's `format` as a chat `response_format`, or undefined for none. */
export function responseFormat(format: unknown): Json | undefined {
  if (format === undefined || format === null || format === '') return undefined;
  if (format === 'json') return { type: 'json_object' };
  if (isObject(format)) return { type: 'json_schema', json_schema: { name: 'response', schema: format } };
  throw invalid('format', 'must be "json" or a JSON schema object');
}

/** Ollama's thinking levels; `max` is the highest level chat backends know, `high`. */
const LEVELS: Readonly<Record<string, string>> = { low: 'low', medium: 'medium', high: 'high', max: 'high' };

/** Ollama's `think` as the gateway's reasoning switch; undefined when the request does not say. */
export function reasoningWant(think: unknown): ReasoningWant | undefined {
  if (think === undefined || think === null) return undefined;
  if (think === true) return { value: 'on' };
  if (think === false) return { value: 'off' };
  const level = typeof think === 'string' ? LEVELS[think.toLowerCase()] : undefined;
  if (level) return { value: 'on', effort: level };
  throw invalid('think', 'must be true, false, "low", "medium", "high" or "max"');
}
