/**
 * The tap on a Responses stream relayed untouched (`responses: native` backends): every event
 * goes out as its own bytes, while the call log learns the usage from the terminal event
 * (`response.completed`, `.incomplete` or `.failed`, whose `response` is the whole Response —
 * kept as the call's final answer for the store) and the first token's time from the first
 * delta. Only terminal events and `error` are parsed; a delta costs a string compare.
 */
import { isObject, parseObject as parse } from '../json.ts';
import type { SseEvent } from '../wire/sse.ts';
import { estimatedUsage, streamSummary, type StreamSummary } from '../wire/stream-usage.ts';
import type { StreamTranslator } from '../upstream/surface.ts';
import { usageFromOpenAI } from '../wire/usage.ts';

type Json = Record<string, unknown>;

const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);

export class ResponsesStreamTap implements StreamTranslator {
  ended = false;
  /** The Response of the terminal event. */
  final?: Json;
  private emitted = false;
  private firstTokenAt?: number;
  private contentChunks = 0;
  private error?: { detail: string; delivered: boolean };

  constructor(
    private readonly now: () => number,
    private readonly promptTokenEstimate: number,
  ) {}

  onEvent(ev: SseEvent): Buffer | null {
    if (ev.incomplete) return null;
    const type = ev.event;
    if (type !== undefined && type.endsWith('.delta')) {
      this.contentChunks++;
      if (this.firstTokenAt === undefined) this.firstTokenAt = this.now();
    } else if (type !== undefined && TERMINAL.has(type)) {
      this.ended = true;
      const response = parse(ev.data)?.response;
      if (isObject(response)) this.final = response;
      if (type === 'response.failed')
        this.error = { detail: describe((this.final?.error as Json | undefined) ?? {}), delivered: true };
    } else if (type === 'error') {
      this.error = { detail: describe(parse(ev.data) ?? {}), delivered: this.emitted };
      if (!this.emitted) return null;
    }
    this.emitted = true;
    return ev.raw;
  }

  /** The terminal event is the only end marker. */
  finishedWithoutMarker(): boolean {
    return false;
  }

  inBandError(): { detail: string; delivered: boolean } | undefined {
    return this.error;
  }

  summary(): StreamSummary {
    const reported = this.final ? usageFromOpenAI(this.final) : undefined;
    return streamSummary({
      usage: reported ?? estimatedUsage(this.promptTokenEstimate, this.contentChunks),
      usageSource: reported ? 'reported' : 'estimated',
      contentChunks: this.contentChunks,
      sawDone: this.ended,
      firstTokenAt: this.firstTokenAt,
      finishReason: typeof this.final?.status === 'string' ? this.final.status : undefined,
      model: typeof this.final?.model === 'string' ? this.final.model : undefined,
    });
  }
}

function describe(error: Json): string {
  return `${String(error.code ?? error.type ?? 'error')}: ${String(error.message ?? 'the backend reported an error')}`;
}
