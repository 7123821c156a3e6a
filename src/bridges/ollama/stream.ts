/**
 * A chat-completions SSE stream as an Ollama NDJSON stream (`/api/chat` or `/api/generate`),
 * chunk by chunk.
 *
 * Ollama's stream is simpler than a chat stream: one line per fragment of text (or of
 * thinking), every line a whole object with `done: false`, then one last line with
 * `done: true`, `done_reason` and the statistics. What does not map one to one is tool calls:
 * chat streams a call's arguments as fragments of text, Ollama sends each call once, whole,
 * with its arguments as an object. So fragments are gathered (ChatStreamReader does the
 * bookkeeping by call index) and the calls go out on one line when the finish reason comes.
 * The statistics need the usage chunk, which comes after the finish reason, so the last line
 * waits for `[DONE]` (or `end()`, when the backend lost its `[DONE]`).
 *
 * A backend's in-stream error writes nothing: the relay fails over while nothing reached the
 * client, else ends the stream with the surface's `{"error": …}` line, as Ollama does.
 *
 * Hot path: a chunk that carries only text is not parsed at all (the reader hands over its
 * fragment's JSON literal, copied into the line as it stands); the others are parsed once.
 */
import type { SseEvent } from '../../wire/sse.ts';
import type { StreamSummary } from '../../wire/stream-summary.ts';
import type { StreamTranslator } from '../../wire/stream-translator.ts';
import { ChatStreamReader, type PendingCall } from '../chat-stream-reader.ts';
import { ollamaErrorFromUpstream, ollamaErrorLine } from './errors.ts';
import { doneReason, ollamaMetrics } from './metrics.ts';
import { argumentsObject, unparsableArguments } from './response.ts';
import { contentLine, finalLine, thinkingLine, toolCallsLine } from './stream-frames.ts';
import type { CallTimes, Json, OllamaKind } from './types.ts';

export interface ChatToOllamaStreamOptions {
  kind: OllamaKind;
  /** The model name the client asked for. */
  model: string;
  now: () => number;
  /** For the summary when the backend reports no usage. */
  promptTokenEstimate: number;
  /** When the call arrived and when this attempt was sent, for the statistics. */
  startedAt: number;
  sentAt: number;
}

/** A tool call being gathered: its name and its arguments' text so far. */
interface GatheredCall {
  id?: string;
  name: string;
  args: string;
}

export class ChatToOllamaStream implements StreamTranslator {
  private readonly opts: ChatToOllamaStreamOptions;
  private readonly reader: ChatStreamReader;
  private readonly modelJson: string;
  private readonly calls: GatheredCall[] = [];
  private closed = false;
  private failure: string | undefined;
  /** The failure went out as this stream's own `{"error"}` line (a tool call the client could not read). */
  private failureWritten = false;
  private stampMs = Number.NaN;
  private stamp = '';

  constructor(opts: ChatToOllamaStreamOptions) {
    this.opts = opts;
    this.modelJson = JSON.stringify(opts.model);
    this.reader = new ChatStreamReader({ now: opts.now, promptTokenEstimate: opts.promptTokenEstimate });
  }

  get ended(): boolean {
    return this.reader.sawDone;
  }

  finishedWithoutMarker(): boolean {
    return this.reader.finishReason !== undefined && this.failure === undefined;
  }

  inBandError(): { detail: string; delivered: boolean } | undefined {
    return this.failure === undefined ? undefined : { detail: this.failure, delivered: this.failureWritten };
  }

  /** The backend's in-stream error message, for the error line the surface writes. */
  get upstreamError(): string | undefined {
    return this.failure;
  }

  onEvent(ev: SseEvent): Buffer | null {
    const r = this.reader;
    if (r.sawDone || this.closed || this.failure !== undefined) return null;
    // most chunks carry only a text fragment: its literal goes into the line as it stands
    const literal = r.contentLiteral(ev);
    if (literal !== undefined) {
      if (literal.length <= 2) return null;
      return Buffer.from(contentLine(this.opts.kind, this.modelJson, this.createdAt(), literal));
    }
    const read = r.read(ev);
    if (read === 'skip') return null;
    if (read === 'error') {
      this.failure = ollamaErrorFromUpstream(500, JSON.stringify(r.chunk)).error;
      return null;
    }
    if (read === 'done') return bytes(this.finish());
    const createdAt = this.createdAt();
    const { kind } = this.opts;
    let out = '';
    if (r.reasoning !== undefined) out += thinkingLine(kind, this.modelJson, createdAt, r.reasoning);
    if (r.text !== undefined) out += contentLine(kind, this.modelJson, createdAt, JSON.stringify(r.text));
    if (r.toolCalls) for (const call of r.toolCalls) this.gather(r.toolCall(call));
    if (r.finish !== undefined) out += this.callsLine(createdAt);
    return bytes(out);
  }

  /** The last line, for a stream that finished (a finish reason came) but lost its `[DONE]`; null otherwise. */
  end(): Buffer | null {
    if (this.closed || this.failure !== undefined || this.reader.finishReason === undefined) return null;
    return bytes(this.finish());
  }

  summary(): StreamSummary {
    return this.reader.summary();
  }

  /** Now as RFC 3339, made once per millisecond (many lines share one). */
  private createdAt(): string {
    const ms = Math.floor(this.opts.now());
    if (ms !== this.stampMs) {
      this.stampMs = ms;
      this.stamp = new Date(ms).toISOString();
    }
    return this.stamp;
  }

  private gather(step: string | PendingCall | undefined): void {
    if (typeof step === 'string') {
      const open = this.calls.at(-1);
      if (open) open.args += step;
    } else if (step) {
      this.reader.startCall(step);
      this.calls.push({ id: step.id, name: step.name ?? '', args: step.args });
    }
  }

  /** The gathered calls (and those that never got a name) as one line; '' when there were none. */
  private callsLine(createdAt: string): string {
    this.reader.closeCall();
    for (const call of this.reader.namelessCalls()) this.calls.push({ id: call.id, name: '', args: call.args });
    if (!this.calls.length) return '';
    const calls: Json[] = [];
    for (const [index, c] of this.calls.entries()) {
      const args = argumentsObject(c.args);
      if (args === undefined) return this.failWith(unparsableArguments(c.name));
      const out: Json = {};
      if (c.id) out.id = c.id;
      out.function = { index, name: c.name, arguments: args };
      calls.push(out);
    }
    this.calls.length = 0;
    return toolCallsLine(this.opts.kind, this.modelJson, createdAt, calls);
  }

  /** Ends the stream with its own `{"error"}` line: nothing after it is written. */
  private failWith(message: string): string {
    this.failure = message;
    this.failureWritten = true;
    this.calls.length = 0;
    return ollamaErrorLine(message);
  }

  private finish(): string {
    this.closed = true;
    const r = this.reader;
    const endedAt = this.opts.now();
    // a finish reason lost with its chunk: calls gathered so far still go out
    const calls = r.finishReason === undefined ? this.callsLine(new Date(endedAt).toISOString()) : '';
    const times: CallTimes = {
      startedAt: this.opts.startedAt,
      sentAt: this.opts.sentAt,
      firstTokenAt: r.firstTokenAt,
      endedAt,
    };
    const metrics = ollamaMetrics(times, r.bestUsage().usage);
    const tail = { done: true, done_reason: doneReason(r.finishReason), ...metrics };
    return calls + finalLine(this.opts.kind, this.modelJson, new Date(endedAt).toISOString(), tail);
  }
}

function bytes(text: string): Buffer | null {
  return text === '' ? null : Buffer.from(text);
}
