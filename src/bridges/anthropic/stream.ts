/**
 * A chat-completions SSE stream as an Anthropic Messages stream, event by event.
 *
 * The shape of the output is fixed by the Messages protocol: `message_start`, then content
 * blocks one at a time (`content_block_start`, deltas, `content_block_stop`, indexes 0, 1, …),
 * then one `message_delta` with the stop reason and the usage, then `message_stop`. Chat
 * chunks interleave nothing of that: a chunk's delta may carry reasoning, text or tool-call
 * fragments, so each kind opens its own block and a change of kind closes the open one.
 * Tool calls are one `tool_use` block per call index; a block starts as soon as the call's
 * name is known (its arguments, if any came first, follow at once) and every later arguments
 * fragment goes out as it arrives, never held back. Parallel calls come one after the other
 * from every backend known, so a new call index closes the previous call's block.
 *
 * The end needs three chat events: the `finish_reason` closes the open block, the usage chunk
 * after it gives the counts, `[DONE]` writes `message_delta` + `message_stop`. A stream that
 * finished but lost its `[DONE]` is closed by `end()`; one that broke gets `abortFrames()`
 * (the open block's stop, nothing that would claim a complete answer) before the error event.
 *
 * Hot path: each chunk is parsed once; delta frames are built from constant prefixes.
 */
import { usageFromLlamaCppTimings } from '../../backends/llama-cpp.ts';
import type { SseEvent } from '../../upstream/sse.ts';
import { estimatedUsage, streamSummary, type StreamSummary, type UsageSource } from '../../upstream/stream-usage.ts';
import type { StreamTranslator } from '../../upstream/surface.ts';
import { usageFromOpenAI, type Usage } from '../../upstream/usage.ts';
import { anthropicErrorFromUpstream } from './errors.ts';
import { messageId, toolUseId } from './ids.ts';
import { reportedStopSequence, stopInfo } from './stop-reason.ts';
import { anthropicEvent, blockStopFrame, deltaFrame, MESSAGE_STOP_FRAME } from './stream-frames.ts';
import { isObject, type Json } from './types.ts';
import { anthropicUsage, messageUsage } from './usage.ts';

export { anthropicErrorEvent, anthropicEvent } from './stream-frames.ts';

/**
 * The signature every streamed thinking block gets before its stop. Claude Code drops a
 * thinking block (and with it the whole turn) when no `signature_delta` came, so one must; no
 * backend can produce Anthropic's real signature, and the request side drops thinking blocks
 * from the history, so nobody ever checks it. Base64 of "llm-gateway:unsigned", so that
 * anyone who finds it in a transcript can tell where it came from.
 */
export const UNSIGNED_THINKING_SIGNATURE = Buffer.from('llm-gateway:unsigned').toString('base64');

export interface ChatToMessagesStreamOptions {
  /** The model name the client asked for. */
  model: string;
  /** Input tokens for `message_start` (and for the summary when the backend reports no usage). */
  promptTokenEstimate: number;
  now: () => number;
  /** The request's `stop_sequences`, to tell a matched one from a natural end. */
  stopSequences?: string[];
}

type BlockKind = 'thinking' | 'text' | 'tool_use';

/** A tool call seen before its name: its block cannot start yet. */
interface PendingCall {
  id?: string;
  name?: string;
  args: string;
  sawArgs: boolean;
}

export class ChatToMessagesStream implements StreamTranslator {
  private readonly opts: ChatToMessagesStreamOptions;
  private started = false;
  private sawDone = false;
  /** message_delta and message_stop went out. */
  private closed = false;
  private aborted = false;
  private failure: { status: number; error: { type: string; message: string } } | undefined;

  private blockCount = 0;
  private open: BlockKind | undefined;
  private openIndex = -1;
  /** The chat tool-call index whose tool_use block is open. */
  private openCall = -1;
  private lastCall = -1;
  private lastCallId: string | undefined;
  private readonly pending = new Map<number, PendingCall>();
  private readonly closedCalls = new Set<number>();
  private toolBlocks = 0;

  private finishReason: string | undefined;
  private matchedSequence: string | undefined;
  private reported: Usage | undefined;
  private fromTimings: Usage | undefined;
  private firstTokenAt: number | undefined;
  private contentChunks = 0;
  private backendModel: string | undefined;
  /**
   * Arguments fragments of a call whose block was already closed (another call or text came in
   * between): the protocol has no way to reopen a block, so they are dropped and counted. No
   * known backend interleaves calls; a non-zero count says one does.
   */
  lateToolFragments = 0;

  constructor(opts: ChatToMessagesStreamOptions) {
    this.opts = opts;
  }

  get ended(): boolean {
    return this.sawDone;
  }

  finishedWithoutMarker(): boolean {
    return this.finishReason !== undefined && this.failure === undefined;
  }

  /**
   * The error the backend put in the stream (`data: {"error":…}`): the status it named (500
   * when none) and its message as an Anthropic error. The stream is over from there on: later events
   * are ignored, and nothing is written for it, so the relay treats the stream as broken
   * (failing over when nothing reached the client yet); the error event the surface then
   * writes can carry this message instead of a generic one.
   */
  get upstreamError(): { status: number; error: { type: string; message: string } } | undefined {
    return this.failure;
  }

  /** The backend's in-stream error for the relay (never passed on as it came: it was chat-shaped). */
  inBandError(): { detail: string; delivered: boolean } | undefined {
    const f = this.failure;
    return f && { detail: `${f.error.type}: ${f.error.message}`, delivered: false };
  }

  onEvent(ev: SseEvent): Buffer | null {
    if (this.sawDone || this.closed || this.aborted || this.failure) return null;
    const data = ev.data;
    // half an event cut off by the end of the stream is garbage, unless it is the end marker
    if (ev.incomplete && data !== '[DONE]') return null;
    // comments and pings: the gateway's own keep-alive covers the client, without committing it to this backend
    if (data === '') return null;
    const out: string[] = [];
    if (data === '[DONE]') {
      this.sawDone = true;
      this.start(undefined, out);
      this.finish(out);
      return bytes(out);
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      return null;
    }
    if (!isObject(chunk)) return null;
    if (chunk.error !== undefined && chunk.error !== null) {
      this.fail(chunk, data);
      return null;
    }
    this.start(chunk, out);
    this.learn(chunk);
    const choices = chunk.choices;
    if (Array.isArray(choices) && isObject(choices[0])) this.onChoice(choices[0], chunk, out);
    return bytes(out);
  }

  /** Closing bytes for a stream that finished (a finish reason came) but lost its `[DONE]`; null otherwise. */
  end(): Buffer | null {
    if (this.closed || this.aborted || this.failure || this.finishReason === undefined) return null;
    const out: string[] = [];
    this.start(undefined, out);
    this.finish(out);
    return bytes(out);
  }

  /**
   * For a stream that broke: the stop of the open block, if one is open, to go before the error
   * event. Never message_delta or message_stop: the answer is not complete and must not look it.
   */
  abortFrames(): string {
    if (this.closed || this.aborted) return '';
    this.aborted = true;
    if (this.open === undefined) return '';
    this.open = undefined;
    return blockStopFrame(this.openIndex);
  }

  summary(): StreamSummary {
    const { usage, source } = this.bestUsage();
    return streamSummary({
      usage, usageSource: source, contentChunks: this.contentChunks, sawDone: this.sawDone,
      firstTokenAt: this.firstTokenAt, finishReason: this.finishReason, model: this.backendModel,
    });
  }

  private bestUsage(): { usage: Usage; source: UsageSource } {
    if (this.reported) return { usage: this.reported, source: 'reported' };
    if (this.fromTimings) return { usage: this.fromTimings, source: 'timings' };
    return { usage: estimatedUsage(this.opts.promptTokenEstimate, this.contentChunks), source: 'estimated' };
  }

  private start(chunk: Json | undefined, out: string[]): void {
    if (this.started) return;
    this.started = true;
    const prompt = this.opts.promptTokenEstimate;
    // like the real API: the input is known up front, the output count starts at one token
    const usage = messageUsage({ prompt_tokens: prompt, completion_tokens: 1, total_tokens: prompt + 1 });
    out.push(anthropicEvent('message_start', {
      type: 'message_start',
      message: {
        id: messageId(chunk?.id),
        type: 'message',
        role: 'assistant',
        model: this.opts.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage,
      },
    }));
  }

  private learn(chunk: Json): void {
    if (this.backendModel === undefined && typeof chunk.model === 'string') this.backendModel = chunk.model;
    if (isObject(chunk.usage)) this.reported = usageFromOpenAI(chunk) ?? this.reported;
    if (isObject(chunk.timings)) this.fromTimings = usageFromLlamaCppTimings(chunk.timings) ?? this.fromTimings;
  }

  private onChoice(choice: Json, chunk: Json, out: string[]): void {
    const delta = choice.delta;
    if (isObject(delta)) {
      let carried = false;
      // newer vLLM sends the same text as both `reasoning_content` and `reasoning`: take one
      const reasoning = nonEmpty(delta.reasoning_content) ?? nonEmpty(delta.reasoning);
      if (reasoning !== undefined) {
        this.append('thinking', reasoning, out);
        carried = true;
      }
      const text = nonEmpty(delta.content);
      if (text !== undefined) {
        this.append('text', text, out);
        carried = true;
      }
      if (Array.isArray(delta.tool_calls)) {
        for (const call of delta.tool_calls) if (isObject(call) && this.onToolCall(call, out)) carried = true;
      }
      if (carried) {
        this.contentChunks += 1;
        if (this.firstTokenAt === undefined) this.firstTokenAt = this.opts.now();
      }
    }
    const finish = choice.finish_reason;
    if (typeof finish === 'string' && finish !== '') {
      this.finishReason = finish;
      this.matchedSequence = reportedStopSequence(choice, chunk, this.opts.stopSequences) ?? this.matchedSequence;
      this.closeBlocks(out);
    }
  }

  private append(kind: 'thinking' | 'text', fragment: string, out: string[]): void {
    if (this.open !== kind) {
      this.closeOpen(out);
      this.openBlock(kind, kind === 'thinking' ? { type: 'thinking', thinking: '', signature: '' } : { type: 'text', text: '' }, out);
    }
    out.push(deltaFrame(this.openIndex, kind === 'thinking' ? 'thinking_delta' : 'text_delta', fragment));
  }

  /** Returns whether the fragment carried a name or arguments (a content chunk for the summary). */
  private onToolCall(call: Json, out: string[]): boolean {
    const index = this.callIndex(call);
    const fn = isObject(call.function) ? call.function : undefined;
    const name = typeof fn?.name === 'string' ? fn.name : '';
    const rawArgs = fn?.arguments;
    const args = typeof rawArgs === 'string' ? rawArgs : isObject(rawArgs) ? JSON.stringify(rawArgs) : undefined;
    const carried = name !== '' || (args !== undefined && args !== '');
    if (this.open === 'tool_use' && this.openCall === index) {
      if (args !== undefined) out.push(deltaFrame(this.openIndex, 'input_json_delta', args));
      return carried;
    }
    if (this.closedCalls.has(index)) {
      if (carried) this.lateToolFragments += 1;
      return carried;
    }
    let pending = this.pending.get(index);
    if (!pending) {
      pending = { args: '', sawArgs: false };
      this.pending.set(index, pending);
    }
    if (pending.id === undefined && typeof call.id === 'string' && call.id !== '') pending.id = call.id;
    if (pending.name === undefined && name !== '') pending.name = name;
    if (args !== undefined) {
      pending.args += args;
      pending.sawArgs = true;
    }
    if (pending.name !== undefined) this.openToolBlock(index, pending, out);
    return carried;
  }

  /** The call's `index`; a server that sends none starts a new call with each new id. */
  private callIndex(call: Json): number {
    let index: number;
    if (typeof call.index === 'number') index = call.index;
    else if (typeof call.id === 'string' && call.id !== '' && call.id !== this.lastCallId) index = this.lastCall + 1;
    else index = Math.max(this.lastCall, 0);
    if (typeof call.id === 'string' && call.id !== '') this.lastCallId = call.id;
    this.lastCall = index;
    return index;
  }

  private openToolBlock(index: number, call: PendingCall, out: string[]): void {
    this.closeOpen(out);
    this.pending.delete(index);
    this.openBlock('tool_use', { type: 'tool_use', id: toolUseId(call.id), name: call.name ?? '', input: {} }, out);
    this.openCall = index;
    this.toolBlocks += 1;
    if (call.sawArgs) out.push(deltaFrame(this.openIndex, 'input_json_delta', call.args));
  }

  private openBlock(kind: BlockKind, block: Json, out: string[]): void {
    this.open = kind;
    this.openIndex = this.blockCount;
    this.blockCount += 1;
    out.push(anthropicEvent('content_block_start', { type: 'content_block_start', index: this.openIndex, content_block: block }));
  }

  private closeOpen(out: string[]): void {
    if (this.open === undefined) return;
    if (this.open === 'thinking') out.push(deltaFrame(this.openIndex, 'signature_delta', UNSIGNED_THINKING_SIGNATURE));
    if (this.open === 'tool_use') {
      this.closedCalls.add(this.openCall);
      this.openCall = -1;
    }
    out.push(blockStopFrame(this.openIndex));
    this.open = undefined;
  }

  /**
   * The answer is over: close the open block, then give calls that never got a name a block
   * of their own (an empty name the client can report, rather than arguments that vanish).
   */
  private closeBlocks(out: string[]): void {
    this.closeOpen(out);
    if (this.pending.size === 0) return;
    const nameless = [...this.pending.entries()].filter(([, call]) => call.args !== '').sort(([a], [b]) => a - b);
    this.pending.clear();
    for (const [index, call] of nameless) {
      this.openToolBlock(index, call, out);
      this.closeOpen(out);
    }
  }

  private finish(out: string[]): void {
    this.closeBlocks(out);
    const stop = stopInfo(this.finishReason, this.matchedSequence, this.toolBlocks > 0);
    out.push(anthropicEvent('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stop.stop_reason, stop_sequence: stop.stop_sequence },
      usage: anthropicUsage(this.bestUsage().usage),
    }));
    out.push(MESSAGE_STOP_FRAME);
    this.closed = true;
  }

  private fail(chunk: Json, data: string): void {
    const error = isObject(chunk.error) ? chunk.error : {};
    const code = typeof error.code === 'number' ? error.code : typeof error.status === 'number' ? error.status : undefined;
    const status = code !== undefined && Number.isInteger(code) && code >= 400 && code < 600 ? code : 500;
    const body = anthropicErrorFromUpstream(status, data);
    this.failure = { status, error: body.error };
  }
}

function nonEmpty(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function bytes(out: string[]): Buffer | null {
  if (out.length === 0) return null;
  return Buffer.from(out.length === 1 ? out[0] : out.join(''));
}
