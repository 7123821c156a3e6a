/**
 * Parses a `GET /v1/models` body from any OpenAI-compatible kind into ModelInfo[].
 *
 * Accepted shapes: `{data: [...]}` (OpenAI, OpenRouter, llama.cpp, llama-swap, vLLM, Ollama's
 * /v1), a bare array (Together) and `{models: [...]}` (Ollama's /api/tags and /api/ps, whose
 * entries name the model in `model` / `name`); Anthropic's list is `{data: [...]}` too, with
 * `created_at` and `display_name`. Prices come out in USD per million tokens:
 * OpenRouter quotes strings per token (`pricing.prompt` / `completion` / `input_cache_read` /
 * `input_cache_write`), Together numbers per million (`pricing.input` / `output`). A negative
 * price (OpenRouter's router pseudo-models say "-1") means unknown, so no pricing.
 */
import { isObject } from '../json.ts';
import type { ModelInfo, ModelPricing } from './types.ts';

export interface ModelListFilter {
  /** Keep only text-generating models; models that carry no such metadata are kept. */
  chatOnly: boolean;
  /** Drop models priced 0/0 (dedicated-only on Together, free pseudo-models) and `:free` variants. */
  serverlessOnly: boolean;
}

type Json = Record<string, unknown>;

/** `type` values of text-generation models: Together's, and Anthropic's one (`model`). */
const CHAT_TYPES = new Set(['chat', 'language', 'model']);

/** Throws an Error naming what is wrong when the body is not a model list. */
export function parseModelList(body: unknown, opts: ModelListFilter): ModelInfo[] {
  const entries = entriesOf(body);
  const models: ModelInfo[] = [];
  const seen = new Set<string>();
  entries.forEach((entry, index) => {
    if (!isObject(entry)) throw new Error(`model list entry #${index} is not an object`);
    const id = idOf(entry);
    if (id === undefined) throw new Error(`model list entry #${index} has no string "id"`);
    if (seen.has(id)) return;
    seen.add(id);
    const model = toModelInfo(id, entry);
    if (opts.chatOnly && !isChatModel(entry)) return;
    if (opts.serverlessOnly && !isServerless(model)) return;
    models.push(model);
  });
  return models;
}

function entriesOf(body: unknown): unknown[] {
  if (Array.isArray(body)) return body;
  if (isObject(body)) {
    if (Array.isArray(body.data)) return body.data;
    if (Array.isArray(body.models)) return body.models;
    const keys = Object.keys(body).slice(0, 5).join(', ');
    throw new Error(`model list body has no "data" array (keys: ${keys || 'none'})`);
  }
  throw new Error(`model list body must be a JSON object or array, got ${body === null ? 'null' : typeof body}`);
}

function idOf(entry: Json): string | undefined {
  for (const key of ['id', 'model', 'name']) {
    const value = entry[key];
    if (typeof value === 'string' && value !== '') return value;
  }
  return undefined;
}

function toModelInfo(id: string, entry: Json): ModelInfo {
  const model: ModelInfo = { id };
  if (typeof entry.created === 'number') model.created = entry.created;
  else if (typeof entry.created_at === 'string') {
    // Anthropic: an RFC 3339 time instead of unix seconds
    const ms = Date.parse(entry.created_at);
    if (Number.isFinite(ms)) model.created = Math.floor(ms / 1000);
  }
  if (typeof entry.display_name === 'string' && entry.display_name) model.display_name = entry.display_name;
  if (typeof entry.owned_by === 'string') model.owned_by = entry.owned_by;
  const pricing = pricingOf(entry.pricing);
  if (pricing) model.pricing = pricing;
  const context = positiveNumber(entry.context_length) ?? positiveNumber(entry.max_model_len);
  if (context !== undefined) model.context_length = context;
  return model;
}

function pricingOf(raw: unknown): ModelPricing | undefined {
  if (!isObject(raw)) return undefined;
  const perToken = 'prompt' in raw || 'completion' in raw;
  const scale = perToken ? 1e6 : 1;
  const price = (value: unknown): number | undefined => {
    const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) return undefined;
    return Number((n * scale).toPrecision(12)); // 0.000003 × 1e6 is 3, not 3.0000000000000004
  };
  const input = price(perToken ? raw.prompt : raw.input);
  const output = price(perToken ? raw.completion : raw.output);
  if (input === undefined || output === undefined) return undefined;
  const pricing: ModelPricing = { input, output };
  const cacheRead = price(raw.input_cache_read);
  const cacheWrite = price(raw.input_cache_write);
  if (cacheRead !== undefined) pricing.cache_read = cacheRead;
  if (cacheWrite !== undefined) pricing.cache_write = cacheWrite;
  return pricing;
}

/** Together's `type`, else OpenRouter / llama.cpp `architecture.output_modalities`; no metadata → chat. */
function isChatModel(entry: Json): boolean {
  if (typeof entry.type === 'string') return CHAT_TYPES.has(entry.type);
  const architecture = entry.architecture;
  if (
    isObject(architecture) &&
    Array.isArray(architecture.output_modalities) &&
    architecture.output_modalities.length > 0
  ) {
    return architecture.output_modalities.every((m) => m === 'text');
  }
  return true;
}

function isServerless(model: ModelInfo): boolean {
  if (model.id.endsWith(':free')) return false;
  const p = model.pricing;
  return !(p && p.input === 0 && p.output === 0);
}

function positiveNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : undefined;
}
