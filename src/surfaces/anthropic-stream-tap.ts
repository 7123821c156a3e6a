/**
 * The tap on an Anthropic Messages stream relayed untouched (anthropic backends): every event
 * goes out as its own bytes, while the call log learns the usage (input and cache split from
 * `message_start`, output from `message_delta`), the stop reason and the first token's time.
 *
 * Events are told apart by their `event:` line, so only `message_start`, `message_delta` and
 * `error` are parsed; a content delta costs a string compare. `message_stop` is the end
 * marker. An `error` event (Anthropic's overload mid-stream) fails the call: passed on when the
 * client has had data, held back when it is the first event (the call may still fail over).
 */
import { isObject, parseObject as parse } from '../json.ts';
import type { SseEvent } from '../wire/sse.ts';
import { estimatedUsage, streamSummary, type StreamSummary } from '../wire/stream-usage.ts';
import type { StreamTranslator } from '../upstream/surface.ts';
import { tokenCount, usageFromAnthropic } from '../wire/usage.ts';

type Json = Record<string, unknown>;

export class AnthropicStreamTap implements StreamTranslator {
  ended = false;
  private emitted = false;
  private usage: Json | undefined;
  private model?: string;
  private stopReason?: string;
  private firstTokenAt?: number;
  private contentChunks = 0;
  private error?: { detail: string; delivered: boolean };

  constructor(
    private readonly now: () => number,
    private readonly promptTokenEstimate: number,
  ) {}

  onEvent(ev: SseEvent): Buffer | null {
    if (ev.incomplete) return null; // half an event cut off by the end of the stream
    switch (ev.event) {
      case 'content_block_delta':
        this.contentChunks++;
        if (this.firstTokenAt === undefined) this.firstTokenAt = this.now();
        break;
      case 'message_start':
        this.learnStart(parse(ev.data));
        break;
      case 'message_delta':
        this.learnDelta(parse(ev.data));
        break;
      case 'message_stop':
        this.ended = true;
        break;
      case 'error': {
        const body = parse(ev.data);
        const error = body?.error as Json | undefined;
        const detail = `${String(error?.type ?? 'error')}: ${String(error?.message ?? ev.data.slice(0, 300))}`;
        this.error = { detail, delivered: this.emitted };
        if (!this.emitted) return null;
        break;
      }
    }
    this.emitted = true;
    return ev.raw;
  }

  /** message_stop is the only end marker: a stream without it broke. */
  finishedWithoutMarker(): boolean {
    return false;
  }

  inBandError(): { detail: string; delivered: boolean } | undefined {
    return this.error;
  }

  summary(): StreamSummary {
    const reported = this.usage ? usageFromAnthropic({ usage: this.usage }) : undefined;
    return streamSummary({
      usage: reported ?? estimatedUsage(this.promptTokenEstimate, this.contentChunks),
      usageSource: reported ? 'reported' : 'estimated',
      contentChunks: this.contentChunks,
      sawDone: this.ended,
      firstTokenAt: this.firstTokenAt,
      finishReason: this.stopReason,
      model: this.model,
    });
  }

  private learnStart(body: Json | undefined): void {
    const message = body?.message as Json | undefined;
    if (typeof message?.model === 'string') this.model = message.model;
    if (isObject(message?.usage)) this.usage = Object.assign({}, message.usage);
  }

  /** message_delta's usage is cumulative: its counts replace message_start's. */
  private learnDelta(body: Json | undefined): void {
    const delta = body?.delta as Json | undefined;
    if (typeof delta?.stop_reason === 'string') this.stopReason = delta.stop_reason;
    const usage = body?.usage;
    if (!isObject(usage)) return;
    this.usage ??= {};
    for (const key of ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens']) {
      if (tokenCount(usage[key]) !== undefined) this.usage[key] = usage[key];
    }
  }
}
