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
 * Hot path: each chunk is parsed once; delta frames are built from constant pieces.
 */
import { usageFromLlamaCppTimings } from '../../backends/llama-cpp.ts';
import type { SseEvent } from '../../upstream/sse.ts';
import { estimatedUsage, streamSummary, type StreamSummary, type UsageSource } from '../../upstream/stream-usage.ts';
import type { StreamTranslator } from '../../upstream/surface.ts';
import { usageFromOpenAI, type Usage } from '../../upstream/usage.ts';
import { newCallId } from './ids.ts';
import { finishStatus, reasoningTokensOf, responseObject, responsesUsage, type ResponseOpts, type ResponseState } from './response-object.ts';
import { StreamOutput } from './stream-output.ts';
import { isObject, type Json } from './types.ts';

export { responsesEvent } from './stream-frames.ts';

export interface ChatToResponsesStreamOptions extends ResponseOpts {
  /** The relay's clock, for the summary's first-token time. */
  now: () => number;
  /** Input tokens for the summary when the backend reports no usage. */
  promptTokenEstimate: number;
}

/** A tool call seen before its name: its item cannot start yet. */
interface PendingCall {
  id?: string;
  name?: string;
  args: string;
}

interface Failure {
  status: number;
  code: string;
  message: string;
}

export class ChatToResponsesStream implements StreamTranslator {
  private readonly opts: ChatToResponsesStreamOptions;
  private readonly output = new StreamOutput();
  private started = false;
  private sawDone = false;
  /** The final event (completed / incomplete) went out. */
  private closed = false;
  /** `response.failed` went out. */
  private failedWith: Json | undefined;
  private failure: Failure | undefined;

  /** The chat tool-call index whose item is open. */
  private openCall = -1;
  private lastCall = -1;
  private lastCallId: string | undefined;
  private readonly pending = new Map<number, PendingCall>();
  private readonly closedCalls = new Set<number>();

  private finishReason: string | undefined;
  private reported: Usage | undefined;
  private fromTimings: Usage | undefined;
  private reasoningTokens = 0;
  private firstTokenAt: number | undefined;
  private contentChunks = 0;
  private backendModel: string | undefined;
  /**
   * Arguments fragments of a call whose item was already closed (another call or text came in
   * between): an item cannot be reopened, so they are dropped and counted. No known backend
   * interleaves calls; a non-zero count says one does.
   */
  lateToolFragments = 0;

  constructor(opts: ChatToResponsesStreamOptions) {
    this.opts = opts;
  }

  get ended(): boolean {
    return this.sawDone;
  }

  finishedWithoutMarker(): boolean {
    return this.finishReason !== undefined && this.failure === undefined;
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
    if (this.sawDone || this.closed || this.failedWith || this.failure) return null;
    const data = ev.data;
    // half an event cut off by the end of the stream is garbage, unless it is the end marker
    if (ev.incomplete && data !== '[DONE]') return null;
    // comments and pings: the gateway's own keep-alive covers the client, without committing it to this backend
    if (data === '') return null;
    const out: string[] = [];
    if (data === '[DONE]') {
      this.sawDone = true;
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
      this.fail(chunk.error);
      return null;
    }
    this.start(out);
    this.learn(chunk);
    const choices = chunk.choices;
    if (Array.isArray(choices) && isObject(choices[0])) this.onChoice(choices[0], out);
    return bytes(out);
  }

  /** Closing bytes for a stream that finished (a finish reason came) but lost its `[DONE]`; null otherwise. */
  end(): Buffer | null {
    if (this.closed || this.failedWith || this.failure || this.finishReason === undefined) return null;
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

  private responseNow(): Json {
    return responseObject(this.opts, this.state());
  }

  private state(): ResponseState {
    const output = this.output.items;
    if (this.closed) {
      const finish = finishStatus(this.finishReason);
      return { status: finish.status, incompleteDetails: finish.incompleteDetails, output, usage: this.finalUsage() };
    }
    const error = this.failedWith ?? (this.failure && { code: this.failure.code, message: this.failure.message });
    // a failed answer reports usage only if the backend counted it: an estimate would bill a guess
    const counted = this.reported ?? this.fromTimings;
    if (error) return { status: 'failed', error, output, usage: counted ? responsesUsage(counted, this.reasoningTokens) : null };
    return { status: 'in_progress', output, usage: null };
  }

  private finalUsage(): Json {
    return responsesUsage(this.bestUsage().usage, this.reasoningTokens);
  }

  private start(out: string[]): void {
    if (this.started) return;
    this.started = true;
    const response = responseObject(this.opts, { status: 'in_progress', output: [], usage: null });
    this.output.event('response.created', { response }, out);
    this.output.event('response.in_progress', { response }, out);
  }

  private learn(chunk: Json): void {
    if (this.backendModel === undefined && typeof chunk.model === 'string') this.backendModel = chunk.model;
    if (isObject(chunk.usage)) {
      this.reported = usageFromOpenAI(chunk) ?? this.reported;
      this.reasoningTokens = reasoningTokensOf(chunk) || this.reasoningTokens;
    }
    if (isObject(chunk.timings)) this.fromTimings = usageFromLlamaCppTimings(chunk.timings) ?? this.fromTimings;
  }

  private onChoice(choice: Json, out: string[]): void {
    const delta = choice.delta;
    if (isObject(delta)) {
      let carried = false;
      // newer vLLM sends the same text as both `reasoning_content` and `reasoning`: take one
      const reasoning = nonEmpty(delta.reasoning_content) ?? nonEmpty(delta.reasoning);
      if (reasoning !== undefined) {
        this.leaveCall('reasoning');
        this.output.reasoning(reasoning, out);
        carried = true;
      }
      const text = nonEmpty(delta.content);
      if (text !== undefined) {
        this.leaveCall('message');
        this.output.content('output_text', text, out);
        carried = true;
      }
      const refusal = nonEmpty(delta.refusal);
      if (refusal !== undefined) {
        this.leaveCall('message');
        this.output.content('refusal', refusal, out);
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
      this.closeItems(out);
    }
  }

  /** Another kind of item is about to open: the open call's item closes with it, for good. */
  private leaveCall(next: 'reasoning' | 'message'): void {
    if (this.openCall === -1 || this.output.openKind === next) return;
    this.closedCalls.add(this.openCall);
    this.openCall = -1;
  }

  /** Returns whether the fragment carried a name or arguments (a content chunk for the summary). */
  private onToolCall(call: Json, out: string[]): boolean {
    const index = this.callIndex(call);
    const fn = isObject(call.function) ? call.function : undefined;
    const name = typeof fn?.name === 'string' ? fn.name : '';
    const rawArgs = fn?.arguments;
    const args = typeof rawArgs === 'string' ? rawArgs : isObject(rawArgs) ? JSON.stringify(rawArgs) : '';
    const carried = name !== '' || args !== '';
    if (this.openCall === index) {
      this.output.arguments(args, out);
      return carried;
    }
    if (this.closedCalls.has(index)) {
      if (carried) this.lateToolFragments += 1;
      return carried;
    }
    let pending = this.pending.get(index);
    if (!pending) {
      pending = { args: '' };
      this.pending.set(index, pending);
    }
    if (pending.id === undefined && typeof call.id === 'string' && call.id !== '') pending.id = call.id;
    if (pending.name === undefined && name !== '') pending.name = name;
    pending.args += args;
    if (pending.name !== undefined) this.openCallItem(index, pending, out);
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

  private openCallItem(index: number, call: PendingCall, out: string[]): void {
    if (this.openCall !== -1) this.closedCalls.add(this.openCall);
    this.pending.delete(index);
    this.output.functionCall(call.id ?? newCallId(), call.name ?? '', out);
    this.openCall = index;
    this.output.arguments(call.args, out);
  }

  /**
   * The answer is over: close the open item (`incomplete` when the answer was cut there), then
   * give calls that never got a name an item of their own (an empty name the client can report,
   * rather than arguments that vanish).
   */
  private closeItems(out: string[]): void {
    const status = finishStatus(this.finishReason).status;
    this.output.close(status, out);
    if (this.openCall !== -1) this.closedCalls.add(this.openCall);
    this.openCall = -1;
    if (this.pending.size === 0) return;
    const nameless = [...this.pending.entries()].filter(([, call]) => call.args !== '').sort(([a], [b]) => a - b);
    this.pending.clear();
    for (const [index, call] of nameless) {
      this.openCallItem(index, call, out);
      this.output.close(status, out);
      this.closedCalls.add(index);
      this.openCall = -1;
    }
  }

  private finish(out: string[]): void {
    this.start(out);
    this.closeItems(out);
    this.closed = true;
    const response = this.responseNow();
    this.output.event(response.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response }, out);
  }

  /** `{"error": {"message", "code"|"status"|"type"}}` from the backend: its status (500 when none) and message. */
  private fail(error: unknown): void {
    const e = isObject(error) ? error : {};
    const numeric = typeof e.code === 'number' ? e.code : typeof e.status === 'number' ? e.status : undefined;
    const status = numeric !== undefined && Number.isInteger(numeric) && numeric >= 400 && numeric < 600 ? numeric : 500;
    const message = typeof e.message === 'string' && e.message !== '' ? e.message
      : typeof error === 'string' && error !== '' ? error : `the backend reported an error in the stream (${status})`;
    const rateLimited = status === 429 || e.code === 'rate_limit_exceeded' || e.type === 'rate_limit_exceeded';
    this.failure = { status, code: rateLimited ? 'rate_limit_exceeded' : 'server_error', message };
  }
}

function nonEmpty(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function bytes(out: string[]): Buffer | null {
  if (out.length === 0) return null;
  return Buffer.from(out.length === 1 ? out[0] : out.join(''));
}
