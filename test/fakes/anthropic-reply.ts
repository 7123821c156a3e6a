/**
 * What one fake Messages reply is made of, and its two forms: the SSE events of a stream and
 * the assembled Message. Pure: anthropic-server.ts decides pacing, drops and errors.
 *
 * The text is "tok0 tok1 …" like the OpenAI-compatible fakes' (replies.ts), so a test can hold
 * a reply relayed across protocols against either kind. One delta is one output token.
 */
import { createHash } from 'node:crypto';
import { newMessageId, newToolUseId } from './anthropic-errors.ts';
import type { AnthropicKnobs } from './anthropic-types.ts';
import { contentWords, countTokens, splitEven } from './replies.ts';

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use';

export type BlockPlan =
  | { type: 'thinking'; pieces: string[]; signature: string }
  | { type: 'text'; pieces: string[] }
  | { type: 'tool_use'; pieces: string[]; id: string; name: string; input: Record<string, unknown> };

export interface AnthropicPlan {
  id: string;
  model: string;
  blocks: BlockPlan[];
  stopReason: StopReason;
  stopSequence: string | null;
  inputTokens: number;
  cacheRead: number;
  cacheWrite: number;
  /** Whether the cache write is reported as 1-hour (a `cache_control` asked for ttl "1h") or 5-minute. */
  cacheWrite1h: boolean;
  outputTokens: number;
}

const isObject = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The text of a content value: a string, or blocks (text, tool_use input, tool_result content, thinking). */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((b) => {
      if (!isObject(b)) return '';
      if (b.type === 'text') return String(b.text ?? '');
      if (b.type === 'tool_use') return `${b.name ?? ''} ${JSON.stringify(b.input ?? {})}`;
      if (b.type === 'tool_result') return contentText(b.content);
      if (b.type === 'thinking') return String(b.thinking ?? '');
      return JSON.stringify(b);
    })
    .join('\n');
}

/** A deterministic input-token count that grows with the system prompt, the messages and the tools. */
export function inputTokensOf(body: any): number {
  const parts = [contentText(body?.system)];
  for (const m of Array.isArray(body?.messages) ? body.messages : [])
    parts.push(`${m?.role ?? ''}: ${contentText(m?.content)}`);
  for (const t of Array.isArray(body?.tools) ? body.tools : []) parts.push(JSON.stringify(t));
  return countTokens(parts.join('\n'));
}

/** Every `cache_control` marker anywhere in the request (top level, system, messages, tools). */
function cacheControls(value: unknown, found: any[] = []): any[] {
  if (Array.isArray(value)) for (const v of value) cacheControls(v, found);
  else if (isObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      if (k === 'cache_control' && isObject(v)) found.push(v);
      else cacheControls(v, found);
    }
  }
  return found;
}

/** The loop's second turn: the last user message hands back a tool_result. */
export function lastUserHasToolResult(body: any): boolean {
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
  const last = [...messages].reverse().find((m) => m?.role === 'user');
  return Array.isArray(last?.content) && last.content.some((b: any) => b?.type === 'tool_result');
}

function thinkingOn(body: any): boolean {
  return body?.thinking?.type === 'enabled' || body?.thinking?.type === 'adaptive';
}

/** A signature-like base64 string, deterministic for the thinking text. */
function signatureOf(text: string): string {
  const h = (s: string) => createHash('sha256').update(s).digest();
  return Buffer.concat([h(`a${text}`), h(`b${text}`), h(`c${text}`)]).toString('base64');
}

/** `pieces` cut before the earliest stop sequence in their text, or undefined when none occurs. */
function cutAtStop(pieces: string[], stops: string[]): { pieces: string[]; stop: string } | undefined {
  const text = pieces.join('');
  let best: { at: number; stop: string } | undefined;
  for (const s of stops) {
    const at = s === '' ? -1 : text.indexOf(s);
    if (at >= 0 && (best === undefined || at < best.at)) best = { at, stop: s };
  }
  if (!best) return undefined;
  const kept: string[] = [];
  let used = 0;
  for (const p of pieces) {
    if (used >= best.at) break;
    kept.push(p.slice(0, best.at - used));
    used += p.length;
  }
  return { pieces: kept, stop: best.stop };
}

/** Decides one reply: thinking (when asked), text, maybe a tool_use, the stop reason and the usage. */
export function planAnthropicReply(body: any, knobs: AnthropicKnobs): AnthropicPlan {
  const n = Math.max(0, knobs.chunkCount);
  const maxTokens = typeof body?.max_tokens === 'number' ? Math.max(0, body.max_tokens) : Infinity;
  const blocks: BlockPlan[] = [];
  let budget = maxTokens;
  let stopReason: StopReason = 'end_turn';
  let stopSequence: string | null = null;

  if (thinkingOn(body)) {
    const pieces = contentWords(n)
      .map((w) => w.replace('tok', 'thought'))
      .slice(0, budget);
    if (pieces.length < n) stopReason = 'max_tokens';
    budget -= pieces.length;
    blocks.push({ type: 'thinking', pieces, signature: signatureOf(pieces.join('')) });
  }
  if (stopReason === 'end_turn') {
    const words = contentWords(n);
    const stops = Array.isArray(body?.stop_sequences)
      ? body.stop_sequences.filter((s: unknown): s is string => typeof s === 'string')
      : [];
    const stopped = cutAtStop(words, stops);
    let pieces = words;
    if (stopped && stopped.pieces.length <= budget) {
      pieces = stopped.pieces;
      stopReason = 'stop_sequence';
      stopSequence = stopped.stop;
    } else if (words.length > budget) {
      pieces = words.slice(0, budget);
      stopReason = 'max_tokens';
    }
    budget -= pieces.length;
    if (pieces.length > 0) blocks.push({ type: 'text', pieces });
  }
  const tools: any[] = Array.isArray(body?.tools) ? body.tools : [];
  const toolWanted =
    knobs.toolUse !== undefined &&
    tools.some((t) => t?.name === knobs.toolUse) &&
    !(knobs.toolUseOnce && lastUserHasToolResult(body));
  if (stopReason === 'end_turn' && toolWanted) {
    const json = JSON.stringify(knobs.toolInput);
    const pieces = splitEven(json, Math.max(1, Math.min(n, json.length)));
    // A tool_use that does not fit whole is left out (the real API may send it cut short).
    if (pieces.length <= budget) {
      blocks.push({ type: 'tool_use', pieces, id: newToolUseId(), name: knobs.toolUse!, input: knobs.toolInput });
      stopReason = 'tool_use';
    } else {
      stopReason = 'max_tokens';
    }
  }

  const cacheMarks = cacheControls(body);
  const cached = cacheMarks.length > 0;
  return {
    id: newMessageId(),
    model: body.model,
    blocks,
    stopReason,
    stopSequence,
    inputTokens: inputTokensOf(body),
    cacheRead: cached ? knobs.cacheReadTokens : 0,
    cacheWrite: cached ? knobs.cacheWriteTokens : 0,
    cacheWrite1h: cacheMarks.some((c) => c.ttl === '1h'),
    outputTokens: blocks.reduce((sum, b) => sum + b.pieces.length, 0),
  };
}

/** The full usage object of message_start and of a non-stream Message (the capture's fields). */
function fullUsage(plan: AnthropicPlan, outputTokens: number): object {
  return {
    input_tokens: plan.inputTokens,
    cache_creation_input_tokens: plan.cacheWrite,
    cache_read_input_tokens: plan.cacheRead,
    cache_creation: {
      ephemeral_5m_input_tokens: plan.cacheWrite1h ? 0 : plan.cacheWrite,
      ephemeral_1h_input_tokens: plan.cacheWrite1h ? plan.cacheWrite : 0,
    },
    output_tokens: outputTokens,
    service_tier: 'standard',
    inference_geo: 'not_available',
  };
}

/** One SSE event of the stream; `delta` marks the content_block_delta events (paced, counted by knobs). */
export interface PlannedEvent {
  data: { type: string; [k: string]: unknown };
  delta: boolean;
}

function startBlock(b: BlockPlan): object {
  if (b.type === 'thinking') return { type: 'thinking', thinking: '', signature: '' };
  if (b.type === 'text') return { type: 'text', text: '' };
  return { type: 'tool_use', id: b.id, name: b.name, input: {} };
}

function deltaOf(b: BlockPlan, piece: string): object {
  if (b.type === 'thinking') return { type: 'thinking_delta', thinking: piece };
  if (b.type === 'text') return { type: 'text_delta', text: piece };
  return { type: 'input_json_delta', partial_json: piece };
}

/**
 * The events in the real order: message_start; per block start, deltas, stop; message_delta;
 * message_stop. Pings where the captures have them: after the first block start, and after a
 * tool_use block's opening empty partial_json. Thinking ends with an empty thinking_delta and
 * the signature_delta, as captured.
 */
export function streamEvents(plan: AnthropicPlan): PlannedEvent[] {
  const out: PlannedEvent[] = [];
  const push = (data: PlannedEvent['data'], delta = false) => out.push({ data, delta });
  push({
    type: 'message_start',
    message: {
      model: plan.model,
      id: plan.id,
      type: 'message',
      role: 'assistant',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: fullUsage(plan, Math.min(1, plan.outputTokens)),
    },
  });
  plan.blocks.forEach((b, index) => {
    push({ type: 'content_block_start', index, content_block: startBlock(b) });
    if (index === 0) push({ type: 'ping' });
    if (b.type === 'tool_use') {
      push({ type: 'content_block_delta', index, delta: deltaOf(b, '') }, true);
      push({ type: 'ping' });
    }
    for (const p of b.pieces) push({ type: 'content_block_delta', index, delta: deltaOf(b, p) }, true);
    if (b.type === 'thinking') {
      push({ type: 'content_block_delta', index, delta: deltaOf(b, '') }, true);
      push({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: b.signature } }, true);
    }
    push({ type: 'content_block_stop', index });
  });
  push({
    type: 'message_delta',
    delta: { stop_reason: plan.stopReason, stop_sequence: plan.stopSequence },
    usage: {
      input_tokens: plan.inputTokens,
      cache_creation_input_tokens: plan.cacheWrite,
      cache_read_input_tokens: plan.cacheRead,
      output_tokens: plan.outputTokens,
    },
    context_management: { applied_edits: [] },
  });
  push({ type: 'message_stop' });
  return out;
}

function assembledBlock(b: BlockPlan): object {
  if (b.type === 'thinking') return { type: 'thinking', thinking: b.pieces.join(''), signature: b.signature };
  if (b.type === 'text') return { type: 'text', text: b.pieces.join('') };
  return { type: 'tool_use', id: b.id, name: b.name, input: b.input };
}

/** The non-stream answer: the Message the stream would assemble to. */
export function assembledMessage(plan: AnthropicPlan): object {
  return {
    id: plan.id,
    type: 'message',
    role: 'assistant',
    model: plan.model,
    content: plan.blocks.map(assembledBlock),
    stop_reason: plan.stopReason,
    stop_sequence: plan.stopSequence,
    usage: fullUsage(plan, plan.outputTokens),
  };
}

/** One event as the real API frames it: `event: <type>`, `data: <json>`, blank line. */
export function sseEvent(data: { type: string }): string {
  return `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
}
