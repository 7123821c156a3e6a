/**
 * Builds chat / text completion bodies and stream chunks. Pure: the server decides pacing,
 * drops and stalls; these functions only decide what the objects look like.
 */
import type { Dialect, TokenUsage } from './dialects.ts';

/** The arguments of the fake get_weather call (split over the content chunks). */
export const TOOL_ARGUMENTS = '{"city":"New York City","unit":"celsius"}';
export const TOOL_NAME = 'get_weather';

export interface LlamaTimings {
  cache_n: number;
  prompt_n: number;
  prompt_ms: number;
  prompt_per_token_ms: number;
  prompt_per_second: number;
  predicted_n: number;
  predicted_ms: number;
  predicted_per_token_ms: number;
  predicted_per_second: number;
}

/** One call of a tool-call reply; `pieces` are slices of its JSON arguments, one per chunk. */
export interface PlannedToolCall {
  id: string;
  name: string;
  pieces: string[];
}

/** Everything one reply is made of. */
export interface ReplyPlan {
  dialect: Dialect;
  id: string;
  created: number;
  model: string;
  promptTokens: number;
  /** Reasoning pieces "reason0", " reason1", …, one per chunk, before the content (chat only). */
  reasoning: string[];
  /** Text pieces, one per content chunk: words "tok0", " tok1", … (none when the reply is tool calls). */
  pieces: string[];
  /** Set when the reply is tool calls, in tool_calls[].index order. */
  tools?: PlannedToolCall[];
  finishReason: 'stop' | 'length' | 'tool_calls';
  timings: LlamaTimings;
}

export interface PlanInput {
  dialect: Dialect;
  what: 'chat' | 'text';
  model: string;
  promptTokens: number;
  chunkCount: number;
  /** The request's max_tokens / max_completion_tokens, when given. */
  maxTokens?: number;
  toolCall: boolean;
  /** The call's function name and JSON argument text (default get_weather's). */
  toolName?: string;
  toolArguments?: string;
  /** Calls in a tool-call reply (at least 1). */
  parallelToolCalls?: number;
  /** Reasoning chunks before the content (chat only). */
  reasoningChunks?: number;
  tokensPerSecond: number;
}

/** Splits `text` into `n` consecutive slices of nearly equal length. */
export function splitEven(text: string, n: number): string[] {
  if (n <= 0) return [];
  const out: string[] = [];
  for (let i = 0; i < n; i++)
    out.push(text.slice(Math.floor((i * text.length) / n), Math.floor(((i + 1) * text.length) / n)));
  return out;
}

/** The words of a text reply: "tok0", " tok1", … */
export function contentWords(n: number): string[] {
  return Array.from({ length: n }, (_, i) => (i === 0 ? 'tok0' : ` tok${i}`));
}

function timingsFor(promptTokens: number, predicted: number, tokensPerSecond: number): LlamaTimings {
  const promptMs = promptTokens * 0.25;
  const predictedMs = tokensPerSecond > 0 ? (predicted * 1000) / tokensPerSecond : predicted * 1;
  const perToken = (ms: number, n: number) => (n > 0 ? ms / n : 0);
  const perSecond = (ms: number, n: number) => (ms > 0 ? (n * 1000) / ms : 0);
  return {
    cache_n: 0,
    prompt_n: promptTokens,
    prompt_ms: promptMs,
    prompt_per_token_ms: perToken(promptMs, promptTokens),
    prompt_per_second: perSecond(promptMs, promptTokens),
    predicted_n: predicted,
    predicted_ms: predictedMs,
    predicted_per_token_ms: perToken(predictedMs, predicted),
    predicted_per_second: perSecond(predictedMs, predicted),
  };
}

/** Completion tokens of a reply: reasoning, then text or every call's argument slices. */
export function completionTokens(plan: Pick<ReplyPlan, 'reasoning' | 'pieces' | 'tools'>): number {
  const answer = plan.tools ? plan.tools.reduce((sum, t) => sum + t.pieces.length, 0) : plan.pieces.length;
  return plan.reasoning.length + answer;
}

/** Decides the content of one reply. Reasoning comes out of the max_tokens budget first, as on real servers. */
export function planReply(input: PlanInput): ReplyPlan {
  const { dialect, chunkCount } = input;
  const base = {
    dialect,
    id: dialect.newId(input.what),
    created: Math.floor(Date.now() / 1000),
    model: input.model,
    promptTokens: input.promptTokens,
  };
  const limit = input.maxTokens !== undefined && input.maxTokens >= 0 ? input.maxTokens : Infinity;
  const wantReasoning = input.what === 'chat' ? Math.max(0, input.reasoningChunks ?? 0) : 0;
  const reasoning = contentWords(Math.min(wantReasoning, limit)).map((w) => w.replace('tok', 'reason'));
  const finish = (body: Pick<ReplyPlan, 'pieces' | 'tools' | 'finishReason'>): ReplyPlan => {
    const plan = { ...base, reasoning, ...body };
    return { ...plan, timings: timingsFor(input.promptTokens, completionTokens(plan), input.tokensPerSecond) };
  };
  if (input.toolCall && input.what === 'chat') {
    const args = input.toolArguments ?? TOOL_ARGUMENTS;
    const tools = Array.from({ length: Math.max(1, input.parallelToolCalls ?? 1) }, () => ({
      id: `call_${dialect.newId('chat').slice(-24)}`,
      name: input.toolName ?? TOOL_NAME,
      pieces: splitEven(args, chunkCount),
    }));
    return finish({ pieces: [], tools, finishReason: 'tool_calls' });
  }
  const n = Math.min(chunkCount, limit - reasoning.length);
  const cut = n < chunkCount || reasoning.length < wantReasoning;
  return finish({ pieces: contentWords(n), finishReason: cut ? 'length' : 'stop' });
}

export function usageOf(plan: ReplyPlan): TokenUsage {
  return plan.dialect.usage(plan.model, plan.promptTokens, completionTokens(plan), plan.reasoning.length);
}

/** A reply as a stream: `lead` (role chunk), one `content` chunk per piece, `tail` (finish, usage). */
export interface ChunkSequence {
  lead: object[];
  content: object[];
  tail: object[];
}

function top(plan: ReplyPlan, object: string, choices: object[]): Record<string, unknown> {
  const d = plan.dialect;
  return {
    id: plan.id,
    object,
    created: plan.created,
    model: plan.model,
    ...(d.systemFingerprint ? { system_fingerprint: d.systemFingerprint } : {}),
    ...d.extraTop,
    choices,
  };
}

function chatChoice(plan: ReplyPlan, delta: object, finish: string | null): object {
  const d = plan.dialect;
  return {
    index: 0,
    delta,
    ...(d.choiceLogprobs ? { logprobs: null } : {}),
    finish_reason: finish,
    ...d.extraChoice(finish),
  };
}

function withTimings(chunks: object[], plan: ReplyPlan): object[] {
  if (!plan.dialect.timings || chunks.length === 0) return chunks;
  const last = chunks.length - 1;
  return chunks.map((c, i) => (i === last ? { ...c, timings: plan.timings } : c));
}

function usageChunk(plan: ReplyPlan, object: string): object {
  return { ...top(plan, object, []), usage: usageOf(plan) };
}

/** The header of call `index`: its id, type and name, with empty arguments. */
function toolHeader(tool: PlannedToolCall, index: number): object {
  return { index, id: tool.id, type: 'function', function: { name: tool.name, arguments: '' } };
}

/**
 * The chunks of a streamed chat completion. A plain tool call opens with one chunk that carries
 * the role and the first call's header (as OpenAI's single-call capture does); with reasoning
 * first, the role chunk stands alone and each header follows the reasoning, as in the
 * parallel-call capture. Later calls start with their own header chunk at the next index.
 */
export function chatChunks(plan: ReplyPlan, includeUsage: boolean): ChunkSequence {
  const d = plan.dialect;
  const role = d.roleInEveryDelta ? { role: 'assistant' } : {};
  const object = 'chat.completion.chunk';
  const chunk = (delta: object) => top(plan, object, [chatChoice(plan, delta, null)]);
  const refusal = d.refusal ? { refusal: null } : {};
  // Ollama and OpenRouter send content "" beside the reasoning; the others only the reasoning field.
  const reasoning = plan.reasoning.map((p) =>
    chunk({ ...role, ...(d.roleInEveryDelta ? { content: '' } : {}), [d.reasoningField]: p }),
  );
  let lead: object;
  let content: object[];
  if (plan.tools) {
    const calls = plan.tools.flatMap((tool, index) => [
      ...(index === 0 && reasoning.length === 0 ? [] : [chunk({ ...role, tool_calls: [toolHeader(tool, index)] })]),
      ...tool.pieces.map((p) => chunk({ ...role, tool_calls: [{ index, function: { arguments: p } }] })),
    ]);
    const firstHeader = reasoning.length === 0 ? { tool_calls: [toolHeader(plan.tools[0]!, 0)] } : {};
    lead = chunk({ role: 'assistant', content: null, ...firstHeader, ...refusal });
    content = [...reasoning, ...calls];
  } else {
    lead = chunk({ role: 'assistant', content: d.timings ? null : '', ...refusal });
    content = [...reasoning, ...plan.pieces.map((p) => chunk({ ...role, content: p }))];
  }
  const finishDelta = d.roleInEveryDelta ? { role: 'assistant', content: '' } : {};
  const tail: object[] = [top(plan, object, [chatChoice(plan, finishDelta, plan.finishReason)])];
  if (includeUsage) tail.push(usageChunk(plan, object));
  return { lead: [lead], content, tail: withTimings(tail, plan) };
}

function assistantMessage(plan: ReplyPlan): Record<string, unknown> {
  const d = plan.dialect;
  const refusal = d.refusal ? { refusal: null } : {};
  const reasoning = plan.reasoning.length > 0 ? { [d.reasoningField]: plan.reasoning.join('') } : {};
  if (plan.tools) {
    return {
      role: 'assistant',
      content: null,
      ...reasoning,
      tool_calls: plan.tools.map((t) => ({
        id: t.id,
        type: 'function',
        function: { name: t.name, arguments: t.pieces.join('') },
      })),
      ...refusal,
    };
  }
  return { role: 'assistant', content: plan.pieces.join(''), ...reasoning, ...refusal };
}

/** A non-stream chat.completion. */
export function chatCompletion(plan: ReplyPlan): object {
  const d = plan.dialect;
  const choice = {
    index: 0,
    message: assistantMessage(plan),
    ...(d.choiceLogprobs ? { logprobs: null } : {}),
    finish_reason: plan.finishReason,
    ...d.extraChoice(plan.finishReason),
  };
  return {
    ...top(plan, 'chat.completion', [choice]),
    usage: usageOf(plan),
    ...(d.timings ? { timings: plan.timings } : {}),
  };
}

function textChoice(text: string, finish: string | null): object {
  return { text, index: 0, logprobs: null, finish_reason: finish };
}

/** The chunks of a streamed text completion (no role chunk). */
export function textChunks(plan: ReplyPlan, includeUsage: boolean): ChunkSequence {
  const object = 'text_completion';
  const content = plan.pieces.map((p) => top(plan, object, [textChoice(p, null)]));
  const tail: object[] = [top(plan, object, [textChoice('', plan.finishReason)])];
  if (includeUsage) tail.push(usageChunk(plan, object));
  return { lead: [], content, tail: withTimings(tail, plan) };
}

/** A non-stream text_completion. */
export function textCompletion(plan: ReplyPlan): object {
  return {
    ...top(plan, 'text_completion', [textChoice(plan.pieces.join(''), plan.finishReason)]),
    usage: usageOf(plan),
    ...(plan.dialect.timings ? { timings: plan.timings } : {}),
  };
}

/** A rough, deterministic token count for some text (≈ 4 characters a token, at least 1). */
export function countTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}
