/**
 * What the fake Ollama server (ollama-server.ts) answers on its native API, in the shapes of
 * ollama/ollama `docs/api.md` and `api/types.go` (the captures in test/fixtures/llm/ollama/):
 * the key order Go's encoder writes, `created_at` per object, statistics in nanoseconds.
 */
import { embeddingVector } from './embeddings.ts';
import { contentWords, countTokens } from './replies.ts';

export interface OllamaReplyPlan {
  kind: 'chat' | 'generate';
  model: string;
  /** Content fragments (one line each). */
  words: string[];
  /** Thinking fragments before the content (`think: true`). */
  thinking: string[];
  /** Tool calls to answer with (arguments objects), on one line before the last. */
  toolCalls: { function: { name: string; arguments: Record<string, unknown> } }[];
  promptTokens: number;
}

const now = () => new Date().toISOString();

/** The plan for one request: `chunks` words, thinking when asked, a tool call when asked and offered. */
export function planOllamaReply(
  kind: 'chat' | 'generate',
  body: any,
  opts: { chunks: number; toolCall: boolean },
): OllamaReplyPlan {
  const text = kind === 'chat' ? JSON.stringify(body.messages ?? []) : `${body.system ?? ''}${body.prompt ?? ''}`;
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const call = opts.toolCall && tools.length && !lastIsTool(body);
  const structured = body.format !== undefined && body.format !== null && body.format !== '';
  const think = body.think === true || typeof body.think === 'string';
  return {
    kind,
    model: body.model,
    words: call ? [] : structured ? ['{"answer":', '"tok0"}'] : contentWords(opts.chunks),
    thinking: think ? ['Thinking ', 'it over.'] : [],
    toolCalls: call ? [{ function: { name: tools[0].function.name, arguments: { city: 'Tokyo' } } }] : [],
    promptTokens: countTokens(text),
  };
}

function lastIsTool(body: any): boolean {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  return messages.at(-1)?.role === 'tool';
}

function evalCount(plan: OllamaReplyPlan): number {
  return plan.words.length + plan.thinking.length + plan.toolCalls.length;
}

/** Ollama's Metrics, in nanoseconds, for a reply that took `ms`. */
function metrics(plan: OllamaReplyPlan, ms: number) {
  const ns = Math.max(1, Math.round(ms * 1e6));
  return {
    total_duration: ns + 2_000_000,
    load_duration: 1_000_000,
    prompt_eval_count: plan.promptTokens,
    prompt_eval_duration: 1_000_000,
    eval_count: evalCount(plan),
    eval_duration: ns,
  };
}

/** One streamed object before the last. */
function fragment(plan: OllamaReplyPlan, part: { content?: string; thinking?: string; tool_calls?: unknown[] }) {
  if (plan.kind === 'chat') {
    const message: Record<string, unknown> = { role: 'assistant', content: part.content ?? '' };
    if (part.thinking !== undefined) message.thinking = part.thinking;
    if (part.tool_calls) message.tool_calls = part.tool_calls;
    return { model: plan.model, created_at: now(), message, done: false };
  }
  const out: Record<string, unknown> = { model: plan.model, created_at: now(), response: part.content ?? '' };
  if (part.thinking !== undefined) out.thinking = part.thinking;
  out.done = false;
  if (part.tool_calls) out.tool_calls = part.tool_calls;
  return out;
}

/** The NDJSON lines of a streamed reply, the last one with `done: true` and the statistics. */
export function ollamaStreamLines(plan: OllamaReplyPlan, ms: number): string[] {
  const objects: unknown[] = [
    ...plan.thinking.map((thinking) => fragment(plan, { thinking })),
    ...plan.words.map((content) => fragment(plan, { content })),
  ];
  if (plan.toolCalls.length) objects.push(fragment(plan, { tool_calls: plan.toolCalls }));
  const last =
    plan.kind === 'chat'
      ? { model: plan.model, created_at: now(), message: { role: 'assistant', content: '' } }
      : { model: plan.model, created_at: now(), response: '' };
  objects.push({ ...last, done: true, done_reason: 'stop', ...metrics(plan, ms) });
  return objects.map((o) => `${JSON.stringify(o)}\n`);
}

/** The one object of a reply with `stream: false`. */
export function ollamaWholeReply(plan: OllamaReplyPlan, ms: number): Record<string, unknown> {
  const content = plan.words.join('');
  const thinking = plan.thinking.join('');
  const head = { model: plan.model, created_at: now() };
  const tail = { done: true, done_reason: 'stop', ...metrics(plan, ms) };
  if (plan.kind === 'chat') {
    const message: Record<string, unknown> = { role: 'assistant', content };
    if (thinking) message.thinking = thinking;
    if (plan.toolCalls.length) message.tool_calls = plan.toolCalls;
    return { ...head, message, ...tail };
  }
  return { ...head, response: content, ...(thinking ? { thinking } : {}), ...tail };
}

/** `/api/embed`'s answer: one vector per input. */
export function ollamaEmbed(model: string, input: string[]) {
  return {
    model,
    embeddings: input.map((text) => embeddingVector(text)),
    total_duration: 14_143_917,
    load_duration: 1_019_500,
    prompt_eval_count: input.reduce((n, text) => n + countTokens(text), 0),
  };
}

/** `/api/show`'s answer for a model of the fake (the docs example's keys, our values). */
export function ollamaShow(model: string) {
  return {
    modelfile: `# Modelfile generated by the fake\nFROM ${model}\n`,
    parameters: 'stop                           "<|eot_id|>"',
    template: '{{ .Prompt }}',
    details: {
      parent_model: '',
      format: 'gguf',
      family: 'llama',
      families: ['llama'],
      parameter_size: '8.0B',
      quantization_level: 'Q4_0',
    },
    model_info: {
      'general.architecture': 'llama',
      'general.file_type': 2,
      'general.parameter_count': 8030261248,
      'llama.context_length': 8192,
      'llama.embedding_length': 4096,
      'tokenizer.ggml.model': 'gpt2',
    },
    capabilities: ['completion', 'tools'],
    modified_at: new Date(0).toISOString(),
  };
}
