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

/** The Ollama object, or why the answer cannot be one (a tool call whose arguments are not JSON). */
export type OllamaAnswer = { ok: true; answer: Json } | { ok: false; message: string };

export function chatToOllama(kind: OllamaKind, completion: Json, ctx: AnswerContext): OllamaAnswer {
  const choice = Array.isArray(completion.choices) && isObject(completion.choices[0]) ? completion.choices[0] : {};
  const message = isObject(choice.message) ? choice.message : {};
  const content = typeof message.content === 'string' ? message.content : '';
  const thinking = reasoningOf(message);
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls.map(ollamaToolCall) : [];
  const broken = calls.find((c) => (c.function as Json).arguments === undefined);
  if (broken) return { ok: false, message: unparsableArguments((broken.function as Json).name as string) };
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
  return { ok: true, answer: out };
}

/** The backend's reasoning text: `reasoning_content` (llama.cpp, vLLM) or `reasoning` (Ollama, OpenRouter). */
function reasoningOf(message: Json): string | undefined {
  const text = message.reasoning_content ?? message.reasoning;
  return typeof text === 'string' && text !== '' ? text : undefined;
}

/**
 * A chat tool call as Ollama's: `function.arguments` the object its text holds (undefined when
 * the text is not JSON, which Ollama's clients cannot take: they want an object).
 */
export function ollamaToolCall(call: unknown, index: number): Json {
  const c = isObject(call) ? call : {};
  const fn = isObject(c.function) ? c.function : {};
  const out: Json = {};
  if (typeof c.id === 'string' && c.id !== '') out.id = c.id;
  out.function = { index, name: typeof fn.name === 'string' ? fn.name : '', arguments: argumentsObject(fn.arguments) };
  return out;
}

/** Arguments text as the object it holds; an object as it is; `{}` for nothing; undefined when it holds no object. */
export function argumentsObject(args: unknown): Json | undefined {
  if (isObject(args)) return args;
  if (typeof args !== 'string' || args.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(args);
    return isObject(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** Why an answer with a broken tool call is an error rather than a call the client cannot read. */
export function unparsableArguments(name: string): string {
  return `the model called the tool "${name}" with arguments that are not a JSON object (cut off, or malformed)`;
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
