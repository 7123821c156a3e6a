/**
 * A chat-completions SSE stream as a Responses API stream, event by event.
 *
 * The output is fixed by the Responses protocol: `response.created` and `response.in_progress`
 * first, then the output items one at a time (each `output_item.added`, its parts and deltas,
 * `output_item.done`; see stream-output.ts), then one final event carrying the whole Response:
 * `response.completed`, or `response.incomplete` when the backend stopped at the token limit
 * (or a content filter). Every event has a `sequence_number`, counting from 0 without a gap.
 * Chat chunks interleave nothing of that: a chunk's delta may carry reasoning, text, a refusal
 * or tool-call fragments, so each kind opens its own item and a change of kind closes the open
 * one. Tool calls are one `function_call` item per call index; an item starts as soon as the
 * call's name is known (arguments that came first follow at once) and every later fragment goes
 * out as it arrives, never held back. Parallel calls come one after the other from every
 * backend known, so a new call index closes the previous call's item.
 *
 * The end needs three chat events: the `finish_reason` closes the open item, the usage chunk
 * after it gives the counts, `[DONE]` writes the final event. A stream that finished but lost
 * its `[DONE]` is closed by `end()`. One that broke (or whose backend put an error in it) gets
 * `failureFrames()`: `response.failed` with the output so far, in sequence, never a
 * `response.completed`: the answer is not complete and must not look it.
 *
 * Hot path: each chunk is parsed once (by ChatStreamReader, which also keeps the usage and the
 * tool-call bookkeeping); delta frames are built from constant pieces.
 */
import type { SseEvent } from '../../wire/sse.ts';
import type { StreamSummary } from '../../wire/stream-usage.ts';
import type { StreamTranslator } from '../../wire/stream-translator.ts';
import { ChatStreamReader, inStreamErrorStatus, type PendingCall } from '../chat-stream-reader.ts';
import { newCallId } from './ids.ts';
import {
  finishStatus,
  reasoningTokensOf,
  responseObject,
  responsesUsage,
  type ResponseOpts,
  type ResponseState,
} from './response-object.ts';
import { StreamOutput } from './stream-output.ts';
import { isObject, type Json } from './types.ts';

export { responsesEvent } from './stream-frames.ts';

export interface ChatToResponsesStreamOptions extends ResponseOpts {
  /** The relay's clock, for the summary's first-token time. */
  now: () => number;
  /** Input tokens for the summary when the backend reports no usage. */
  promptTokenEstimate: number;
}

interface Failure {
  status: number;
  code: string;
  message: string;
}

export class ChatToResponsesStream implements StreamTranslator {
  private readonly opts: ChatToResponsesStreamOptions;
  /** What the chat chunks say; this class only writes the Responses events for it. */
  private readonly reader: ChatStreamReader;
  private readonly output = new StreamOutput();
  private started = false;
  /** The final event (completed / incomplete) went out. */
  private closed = false;
  /** `response.failed` went out. */
  private failedWith: Json | undefined;
  private failure: Failure | undefined;
  private reasoningTokens = 0;

  constructor(opts: ChatToResponsesStreamOptions) {
    this.opts = opts;
    this.reader = new ChatStreamReader({
      now: opts.now,
      promptTokenEstimate: opts.promptTokenEstimate,
      refusals: true,
    });
  }

  get ended(): boolean {
    return this.reader.sawDone;
  }

  /** Arguments fragments dropped because their call's item was closed already (see ChatStreamReader). */
  get lateToolFragments(): number {
    return this.reader.lateToolFragments;
  }

  finishedWithoutMarker(): boolean {
    return this.reader.finishReason !== undefined && this.failure === undefined;
  }

  /**
   * The error the backend put in the stream (`data: {"error":…}`). The stream is over from there
   * on: later events are ignored and nothing is written for it, so the relay treats the stream as
   * broken (failing over when nothing reached the client yet) and ends it with `failureFrames`.
   */
  inBandError(): { detail: string; delivered: false } | undefined {
    const f = this.failure;
    return f && { detail: f.message, delivered: false };
  }

  onEvent(ev: SseEvent): Buffer | null {
    const r = this.reader;
    if (r.sawDone || this.closed || this.failedWith || this.failure) return null;
    const read = r.read(ev);
    if (read === 'skip') return null;
    if (read === 'error') {
      this.fail(r.chunk.error);
      return null;
    }
    const out: string[] = [];
    if (read === 'done') {
      this.finish(out);
      return bytes(out);
    }
    this.start(out);
    // the Responses usage splits out reasoning tokens; the reader keeps only the chat counts
    this.reasoningTokens = reasoningTokensOf(r.chunk) || this.reasoningTokens;
    if (r.choice) this.onChoice(out);
    return bytes(out);
  }

  /** Closing bytes for a stream that finished (a finish reason came) but lost its `[DONE]`; null otherwise. */
  end(): Buffer | null {
    if (this.closed || this.failedWith || this.failure || this.reader.finishReason === undefined) return null;
    const out: string[] = [];
    this.finish(out);
    return bytes(out);
  }

  /**
   * The last word of a stream that broke: `response.failed` with the next sequence number and
   * the output as far as it went (an item still open stays `in_progress`). When nothing went out
   * yet it is preceded by `response.created` / `in_progress`, as the SDKs need a Response to fail.
   * Empty once the stream has its final event.
   */
  failureFrames(message: string, code?: string): string {
    if (this.closed || this.failedWith) return '';
    const out: string[] = [];
    this.start(out);
    this.failedWith = { code: code ?? this.failure?.code ?? 'server_error', message };
    this.output.event('response.failed', { response: this.responseNow() }, out);
    return out.join('');
  }

  /** The Response as it stands (completed, incomplete, failed or in progress), for a store to keep. */
  finalResponse(): Record<string, unknown> {
    return structuredClone(this.responseNow());
  }

  summary(): StreamSummary {
    return this.reader.summary();
  }

  private responseNow(): Json {
    return responseObject(this.opts, this.state());
  }

  private state(): ResponseState {
    const output = this.output.items;
    if (this.closed) {
      const finish = finishStatus(this.reader.finishReason);
      return { status: finish.status, incompleteDetails: finish.incompleteDetails, output, usage: this.finalUsage() };
    }
    const error = this.failedWith ?? (this.failure && { code: this.failure.code, message: this.failure.message });
    // a failed answer reports usage only if the backend counted it: an estimate would bill a guess
    const counted = this.reader.reported ?? this.reader.fromTimings;
    if (error)
      return { status: 'failed', error, output, usage: counted ? responsesUsage(counted, this.reasoningTokens) : null };
    return { status: 'in_progress', output, usage: null };
  }

  private finalUsage(): Json {
    return responsesUsage(this.reader.bestUsage().usage, this.reasoningTokens);
  }

  private start(out: string[]): void {
    if (this.started) return;
    this.started = true;
    const response = responseObject(this.opts, { status: 'in_progress', output: [], usage: null });
    this.output.event('response.created', { response }, out);
    this.output.event('response.in_progress', { response }, out);
  }

  private onChoice(out: string[]): void {
    const r = this.reader;
    if (r.reasoning !== undefined) {
      this.leaveCall('reasoning');
      this.output.reasoning(r.reasoning, out);
    }
    if (r.text !== undefined) {
      this.leaveCall('message');
      this.output.content('output_text', r.text, out);
    }
    if (r.refusal !== undefined) {
      this.leaveCall('message');
      this.output.content('refusal', r.refusal, out);
    }
    if (r.toolCalls) {
      for (const call of r.toolCalls) {
        const step = r.toolCall(call);
        // an empty fragment writes nothing: `arguments` skips it
        if (typeof step === 'string') this.output.arguments(step, out);
        else if (step) this.openCallItem(step, out);
      }
    }
    if (r.finish !== undefined) this.closeItems(out);
  }

  /** Another kind of item is about to open: the open call's item closes with it, for good. */
  private leaveCall(next: 'reasoning' | 'message'): void {
    if (this.reader.openCall === -1 || this.output.openKind === next) return;
    this.reader.closeCall();
  }

  private openCallItem(call: PendingCall, out: string[]): void {
    this.reader.startCall(call);
    this.output.functionCall(call.id ?? newCallId(), call.name ?? '', out);
    this.output.arguments(call.args, out);
  }

  /**
   * The answer is over: close the open item (`incomplete` when the answer was cut there), then
   * give calls that never got a name an item of their own (an empty name the client can report,
   * rather than arguments that vanish).
   */
  private closeItems(out: string[]): void {
    const status = finishStatus(this.reader.finishReason).status;
    this.output.close(status, out);
    this.reader.closeCall();
    for (const call of this.reader.namelessCalls()) {
      this.openCallItem(call, out);
      this.output.close(status, out);
      this.reader.closeCall();
    }
  }

  private finish(out: string[]): void {
    this.start(out);
    this.closeItems(out);
    this.closed = true;
    const response = this.responseNow();
    this.output.event(
      response.status === 'incomplete' ? 'response.incomplete' : 'response.completed',
      { response },
      out,
    );
  }

  /** `{"error": {"message", "code"|"status"|"type"}}` from the backend: its status (500 when none) and message. */
  private fail(error: unknown): void {
    const e = isObject(error) ? error : {};
    const status = inStreamErrorStatus(error);
    const message =
      typeof e.message === 'string' && e.message !== ''
        ? e.message
        : typeof error === 'string' && error !== ''
          ? error
          : `the backend reported an error in the stream (${status})`;
    const rateLimited = status === 429 || e.code === 'rate_limit_exceeded' || e.type === 'rate_limit_exceeded';
    this.failure = { status, code: rateLimited ? 'rate_limit_exceeded' : 'server_error', message };
  }
}

function bytes(out: string[]): Buffer | null {
  if (out.length === 0) return null;
  return Buffer.from(out.length === 1 ? out[0] : out.join(''));
}
