/**
 * A chat completion (a whole answer) as Ollama's final object: `/api/chat`'s `message`
 * (content, `thinking` from the backend's reasoning, `tool_calls` with arguments as objects) or
 * `/api/generate`'s `response`, then `done`, `done_reason` and the statistics. An embeddings
 * answer as `/api/embed`'s `embeddings` or `/api/embeddings`' one `embedding`.
 */
import { doneReason, type OllamaMetrics } from './metrics.ts';
import { isObject, type Json, type OllamaKind } from './types.ts';

export interface AnswerContext {
  /** The model name the client asked for (Ollama answers with it). */
  model: string;
  /** RFC 3339, like Ollama's `created_at`. */
  createdAt: string;
  metrics: OllamaMetrics;
}

export function chatToOllama(kind: OllamaKind, completion: Json, ctx: AnswerContext): Json {
  const choice = Array.isArray(completion.choices) && isObject(completion.choices[0]) ? completion.choices[0] : {};
  const message = isObject(choice.message) ? choice.message : {};
  const content = typeof message.content === 'string' ? message.content : '';
  const thinking = reasoningOf(message);
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls.map(ollamaToolCall) : [];
  const out: Json = { model: ctx.model, created_at: ctx.createdAt };
  if (kind === 'chat') {
    const answer: Json = { role: 'assistant', content };
    if (thinking) answer.thinking = thinking;
    if (calls.length) answer.tool_calls = calls;
    out.message = answer;
  } else {
    out.response = content;
    if (thinking) out.thinking = thinking;
  }
  out.done = true;
  out.done_reason = doneReason(choice.finish_reason);
  Object.assign(out, ctx.metrics);
  if (kind === 'generate' && calls.length) out.tool_calls = calls;
  return out;
}

/** The backend's reasoning text: `reasoning_content` (llama.cpp, vLLM) or `reasoning` (Ollama, OpenRouter). */
function reasoningOf(message: Json): string | undefined {
  const text = message.reasoning_content ?? message.reasoning;
  return typeof text === 'string' && text !== '' ? text : undefined;
}

/** A chat tool call as Ollama's: `function.arguments` an object (its text kept when it is not JSON). */
export function ollamaToolCall(call: unknown, index: number): Json {
  const c = isObject(call) ? call : {};
  const fn = isObject(c.function) ? c.function : {};
  const out: Json = {};
  if (typeof c.id === 'string' && c.id !== '') out.id = c.id;
  out.function = { index, name: typeof fn.name === 'string' ? fn.name : '', arguments: argumentsObject(fn.arguments) };
  return out;
}

/** Arguments text as the object it holds; an object as it is; `{}` for nothing; the text itself when it is not JSON. */
export function argumentsObject(args: unknown): unknown {
  if (isObject(args)) return args;
  if (typeof args !== 'string' || args.trim() === '') return {};
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}

/** `/api/embed`: every input's vector, in input order. */
export function embedToOllama(answer: Json, ctx: AnswerContext): Json {
  return {
    model: ctx.model,
    embeddings: vectors(answer),
    total_duration: ctx.metrics.total_duration,
    load_duration: ctx.metrics.load_duration,
    prompt_eval_count: ctx.metrics.prompt_eval_count,
  };
}

/** `/api/embeddings` (the older endpoint): one `prompt`, one `embedding`. */
export function embeddingToOllama(answer: Json): Json {
  return { embedding: vectors(answer)[0] ?? [] };
}

function vectors(answer: Json): unknown[] {
  const data = Array.isArray(answer.data) ? answer.data.filter(isObject) : [];
  const ordered = data.every((d) => typeof d.index === 'number')
    ? [...data].sort((a, b) => (a.index as number) - (b.index as number))
    : data;
  return ordered.map((d) => (Array.isArray(d.embedding) ? d.embedding : []));
}
