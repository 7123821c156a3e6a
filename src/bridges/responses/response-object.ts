/**
 * The Response object and its output items, as the real API writes them: shared by the JSON
 * answer (response.ts) and the stream (stream.ts), whose `response.*` events carry the same object.
 *
 * Besides what the model produced, a Response echoes the request's settings (`instructions`,
 * `tools`, `tool_choice`, `temperature`, `text`, `reasoning`, …) and the SDK types make most of
 * them required, so each gets the client's value or the API's default when the client sent none.
 * Fields are in the order the API writes them, so that a translated answer reads like a real one.
 */
import type { Usage } from '../../wire/usage.ts';
import { isObject, type Json } from './types.ts';

export interface ResponseOpts {
  /** `resp_…`, chosen by the gateway. */
  id: string;
  /** Unix seconds. */
  createdAt: number;
  /** The model name the client asked for: it is what the client sees in the answer. */
  model: string;
  /** The client's body, for the echo fields. */
  request: Record<string, unknown>;
  /** Unix seconds now, for `completed_at` (defaults to the system clock). */
  clock?: () => number;
}

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

export interface ResponseState {
  status: ResponseStatus;
  output: Json[];
  usage: Json | null;
  incompleteDetails?: Json | null;
  error?: Json | null;
}

/** What a chat `finish_reason` makes of the Response: cut short by the token limit or a filter is `incomplete`. */
export function finishStatus(finishReason: unknown): {
  status: 'completed' | 'incomplete';
  incompleteDetails: Json | null;
} {
  if (finishReason === 'length') return { status: 'incomplete', incompleteDetails: { reason: 'max_output_tokens' } };
  if (finishReason === 'content_filter')
    return { status: 'incomplete', incompleteDetails: { reason: 'content_filter' } };
  return { status: 'completed', incompleteDetails: null };
}

export function responseObject(opts: ResponseOpts, state: ResponseState): Json {
  const req = isObject(opts.request) ? opts.request : {};
  const completedAt = state.status === 'completed' ? Math.max(opts.createdAt, (opts.clock ?? systemClock)()) : null;
  return {
    id: opts.id,
    object: 'response',
    created_at: opts.createdAt,
    status: state.status,
    background: req.background === true,
    completed_at: completedAt,
    error: state.error ?? null,
    frequency_penalty: numberOr(req.frequency_penalty, 0),
    incomplete_details: state.incompleteDetails ?? null,
    instructions: typeof req.instructions === 'string' ? req.instructions : null,
    max_output_tokens: numberOr(req.max_output_tokens, null),
    max_tool_calls: numberOr(req.max_tool_calls, null),
    model: opts.model,
    output: state.output,
    parallel_tool_calls: typeof req.parallel_tool_calls === 'boolean' ? req.parallel_tool_calls : true,
    presence_penalty: numberOr(req.presence_penalty, 0),
    previous_response_id: stringOr(req.previous_response_id, null),
    prompt_cache_key: stringOr(req.prompt_cache_key, null),
    prompt_cache_retention: stringOr(req.prompt_cache_retention, null),
    reasoning: reasoningEcho(req.reasoning),
    safety_identifier: stringOr(req.safety_identifier, null),
    // the gateway has one tier; the API reports the one that served, never the one asked for
    service_tier: 'default',
    // what the gateway does, not the API's default of true: it keeps a response only when asked to
    store: req.store === true,
    temperature: numberOr(req.temperature, 1),
    text: textEcho(req.text),
    tool_choice: req.tool_choice ?? 'auto',
    tools: Array.isArray(req.tools) ? req.tools.map(toolEcho) : [],
    top_logprobs: numberOr(req.top_logprobs, 0),
    top_p: numberOr(req.top_p, 1),
    truncation: stringOr(req.truncation, 'disabled'),
    usage: state.usage,
    user: stringOr(req.user, null),
    metadata: isObject(req.metadata) ? req.metadata : {},
  };
}

/** The token counts in the Responses API's names; `prompt_tokens` already includes the cached part. */
export function responsesUsage(usage: Usage, reasoningTokens = 0): Json {
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: { cached_tokens: usage.cached_tokens ?? 0 },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: Math.min(reasoningTokens, usage.completion_tokens) },
    total_tokens: usage.total_tokens,
  };
}

/** `usage.completion_tokens_details.reasoning_tokens` of a chat body or chunk, 0 when not reported. */
export function reasoningTokensOf(chat: Json): number {
  const usage = isObject(chat.usage) ? chat.usage : undefined;
  const details = usage && isObject(usage.completion_tokens_details) ? usage.completion_tokens_details : undefined;
  const n = details?.reasoning_tokens;
  return typeof n === 'number' && Number.isFinite(n) && n >= 0 ? n : 0;
}

export function outputTextPart(text: string): Json {
  return { type: 'output_text', annotations: [], logprobs: [], text };
}

export function refusalPart(refusal: string): Json {
  return { type: 'refusal', refusal };
}

export function messageItem(id: string, status: string, content: Json[]): Json {
  return { id, type: 'message', status, content, role: 'assistant' };
}

export function reasoningItem(id: string, summary: Json[]): Json {
  return { id, type: 'reasoning', summary };
}

export function summaryTextPart(text: string): Json {
  return { type: 'summary_text', text };
}

export function functionCallItem(id: string, status: string, callId: string, name: string, args: string): Json {
  return { id, type: 'function_call', status, arguments: args, call_id: callId, name };
}

/** The text of the answer: every output_text of every message item, joined, as the SDKs' `output_text` is. */
export function outputText(response: Record<string, unknown>): string {
  const output = Array.isArray(response.output) ? response.output : [];
  let text = '';
  for (const item of output) {
    if (!isObject(item) || item.type !== 'message' || !Array.isArray(item.content)) continue;
    for (const part of item.content)
      if (isObject(part) && part.type === 'output_text' && typeof part.text === 'string') text += part.text;
  }
  return text;
}

function systemClock(): number {
  return Math.floor(Date.now() / 1000);
}

function numberOr<T>(value: unknown, fallback: T): number | T {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

function stringOr<T>(value: unknown, fallback: T): string | T {
  return typeof value === 'string' ? value : fallback;
}

function reasoningEcho(reasoning: unknown): Json {
  const r = isObject(reasoning) ? reasoning : {};
  return { effort: stringOr(r.effort, null), summary: stringOr(r.summary, null) };
}

function textEcho(text: unknown): Json {
  const t = isObject(text) ? text : {};
  return { format: isObject(t.format) ? t.format : { type: 'text' }, verbosity: stringOr(t.verbosity, 'medium') };
}

/** A function tool with every field the API echoes (null where the client gave none); other tools as sent. */
function toolEcho(tool: unknown): unknown {
  if (!isObject(tool) || tool.type !== 'function') return tool;
  return {
    type: 'function',
    description: stringOr(tool.description, null),
    name: tool.name,
    parameters: isObject(tool.parameters) ? tool.parameters : null,
    strict: typeof tool.strict === 'boolean' ? tool.strict : null,
  };
}
