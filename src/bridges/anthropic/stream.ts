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
 * Hot path: each chunk is parsed once (by ChatStreamReader, which also keeps the usage and the
 * tool-call bookkeeping); delta frames are built from constant prefixes.
 */
import type { SseEvent } from '../../wire/sse.ts';
import type { StreamSummary } from '../../wire/stream-usage.ts';
import type { StreamTranslator } from '../../wire/stream-translator.ts';
import { ChatStreamReader, inStreamErrorStatus, type PendingCall } from '../chat-stream-reader.ts';
import { anthropicErrorFromUpstream } from './errors.ts';
import { messageId, toolUseId } from './ids.ts';
import { reportedStopSequence, stopInfo } from './stop-reason.ts';
import { anthropicEvent, blockStopFrame, deltaFrame, MESSAGE_STOP_FRAME } from './stream-frames.ts';
import type { Json } from './types.ts';
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

export class ChatToMessagesStream implements StreamTranslator {
  private readonly opts: ChatToMessagesStreamOptions;
  /** What the chat chunks say; this class only writes the Messages events for it. */
  private readonly reader: ChatStreamReader;
  private started = false;
  /** message_delta and message_stop went out. */
  private closed = false;
  private aborted = false;
  private failure: { status: number; error: { type: string; message: string } } | undefined;

  private blockCount = 0;
  private open: BlockKind | undefined;
  private openIndex = -1;
  private toolBlocks = 0;
  private matchedSequence: string | undefined;

  constructor(opts: ChatToMessagesStreamOptions) {
    this.opts = opts;
    this.reader = new ChatStreamReader({ now: opts.now, promptTokenEstimate: opts.promptTokenEstimate });
  }

  get ended(): boolean {
    return this.reader.sawDone;
  }

  /** Arguments fragments dropped because their call's block was closed already (see ChatStreamReader). */
  get lateToolFragments(): number {
    return this.reader.lateToolFragments;
  }

  finishedWithoutMarker(): boolean {
    return this.reader.finishReason !== undefined && this.failure === undefined;
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
    const r = this.reader;
    if (r.sawDone || this.closed || this.aborted || this.failure) return null;
    const read = r.read(ev);
    if (read === 'skip') return null;
    if (read === 'error') {
      this.fail(r.chunk, ev.data);
      return null;
    }
    const out: string[] = [];
    if (read === 'done') {
      this.start(undefined, out);
      this.finish(out);
      return bytes(out);
    }
    this.start(r.chunk, out);
    if (r.choice) this.onChoice(r.choice, r.chunk, out);
    return bytes(out);
  }

  /** Closing bytes for a stream that finished (a finish reason came) but lost its `[DONE]`; null otherwise. */
  end(): Buffer | null {
    if (this.closed || this.aborted || this.failure || this.reader.finishReason === undefined) return null;
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
    return this.reader.summary();
  }

  private start(chunk: Json | undefined, out: string[]): void {
    if (this.started) return;
    this.started = true;
    const prompt = this.opts.promptTokenEstimate;
    // like the real API: the input is known up front, the output count starts at one token
    const usage = messageUsage({ prompt_tokens: prompt, completion_tokens: 1, total_tokens: prompt + 1 });
    out.push(
      anthropicEvent('message_start', {
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
      }),
    );
  }

  private onChoice(choice: Json, chunk: Json, out: string[]): void {
    const r = this.reader;
    if (r.reasoning !== undefined) this.append('thinking', r.reasoning, out);
    if (r.text !== undefined) this.append('text', r.text, out);
    if (r.toolCalls) {
      for (const call of r.toolCalls) {
        const step = r.toolCall(call);
        if (typeof step === 'string') out.push(deltaFrame(this.openIndex, 'input_json_delta', step));
        else if (step) this.openToolBlock(step, out);
      }
    }
    if (r.finish !== undefined) {
      this.matchedSequence = reportedStopSequence(choice, chunk, this.opts.stopSequences) ?? this.matchedSequence;
      this.closeBlocks(out);
    }
  }

  private append(kind: 'thinking' | 'text', fragment: string, out: string[]): void {
    if (this.open !== kind) {
      this.closeOpen(out);
      this.openBlock(
        kind,
        kind === 'thinking' ? { type: 'thinking', thinking: '', signature: '' } : { type: 'text', text: '' },
        out,
      );
    }
    out.push(deltaFrame(this.openIndex, kind === 'thinking' ? 'thinking_delta' : 'text_delta', fragment));
  }

  private openToolBlock(call: PendingCall, out: string[]): void {
    this.closeOpen(out);
    this.reader.startCall(call);
    this.openBlock('tool_use', { type: 'tool_use', id: toolUseId(call.id), name: call.name ?? '', input: {} }, out);
    this.toolBlocks += 1;
    if (call.sawArgs) out.push(deltaFrame(this.openIndex, 'input_json_delta', call.args));
  }

  private openBlock(kind: BlockKind, block: Json, out: string[]): void {
    this.open = kind;
    this.openIndex = this.blockCount;
    this.blockCount += 1;
    out.push(
      anthropicEvent('content_block_start', {
        type: 'content_block_start',
        index: this.openIndex,
        content_block: block,
      }),
    );
  }

  private closeOpen(out: string[]): void {
    if (this.open === undefined) return;
    if (this.open === 'thinking') out.push(deltaFrame(this.openIndex, 'signature_delta', UNSIGNED_THINKING_SIGNATURE));
    if (this.open === 'tool_use') this.reader.closeCall();
    out.push(blockStopFrame(this.openIndex));
    this.open = undefined;
  }

  /**
   * The answer is over: close the open block, then give calls that never got a name a block
   * of their own (an empty name the client can report, rather than arguments that vanish).
   */
  private closeBlocks(out: string[]): void {
    this.closeOpen(out);
    for (const call of this.reader.namelessCalls()) {
      this.openToolBlock(call, out);
      this.closeOpen(out);
    }
  }

  private finish(out: string[]): void {
    this.closeBlocks(out);
    const stop = stopInfo(this.reader.finishReason, this.matchedSequence, this.toolBlocks > 0);
    out.push(
      anthropicEvent('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: stop.stop_reason, stop_sequence: stop.stop_sequence },
        usage: anthropicUsage(this.reader.bestUsage().usage),
      }),
    );
    out.push(MESSAGE_STOP_FRAME);
    this.closed = true;
  }

  private fail(chunk: Json, data: string): void {
    const status = inStreamErrorStatus(chunk.error);
    const body = anthropicErrorFromUpstream(status, data);
    this.failure = { status, error: body.error };
  }
}

function bytes(out: string[]): Buffer | null {
  if (out.length === 0) return null;
  return Buffer.from(out.length === 1 ? out[0] : out.join(''));
}
