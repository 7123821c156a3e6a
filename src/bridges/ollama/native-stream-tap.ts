/**
 * An Ollama server's own NDJSON stream, passed through byte for byte while the call log's
 * figures are read in passing: the first line's time (first token), one content chunk per line,
 * and the counts of the last line (`done: true`, `prompt_eval_count`, `eval_count`), the only
 * line that is parsed. A `{"error": …}` line is Ollama's own last word: the client got it.
 */
import type { SseEvent } from '../../wire/sse.ts';
import { estimatedUsage, streamSummary, type StreamSummary } from '../../wire/stream-usage.ts';
import type { StreamTranslator } from '../../wire/stream-translator.ts';
import type { Usage } from '../../wire/usage.ts';
import { usageFromOllama } from './metrics.ts';
import { isObject } from './types.ts';

export class OllamaNativeTap implements StreamTranslator {
  private done = false;
  private firstTokenAt: number | undefined;
  private lines = 0;
  private usage: Usage | undefined;
  private reason: string | undefined;
  private model: string | undefined;
  private error: string | undefined;

  constructor(
    private readonly now: () => number,
    private readonly promptTokenEstimate: number,
  ) {}

  get ended(): boolean {
    return this.done;
  }

  finishedWithoutMarker(): boolean {
    return false;
  }

  inBandError(): { detail: string; delivered: boolean } | undefined {
    return this.error === undefined ? undefined : { detail: this.error, delivered: true };
  }

  onEvent(ev: SseEvent): Buffer | null {
    const line = ev.data;
    if (line === '' || ev.incomplete) return ev.raw;
    if (line.startsWith('{"error"')) {
      this.error = errorText(line);
      return ev.raw;
    }
    // Ollama's encoder writes no spaces: the last line says `"done":true` in so many bytes
    if (line.includes('"done":true')) this.readLast(line);
    else {
      this.lines += 1;
      if (this.firstTokenAt === undefined) this.firstTokenAt = this.now();
    }
    return ev.raw;
  }

  summary(): StreamSummary {
    const reported = this.usage;
    return streamSummary({
      usage: reported ?? estimatedUsage(this.promptTokenEstimate, this.lines),
      usageSource: reported ? 'reported' : 'estimated',
      contentChunks: this.lines,
      sawDone: this.done,
      firstTokenAt: this.firstTokenAt,
      finishReason: this.reason,
      model: this.model,
    });
  }

  private readLast(line: string): void {
    let last: unknown;
    try {
      last = JSON.parse(line);
    } catch {
      return;
    }
    if (!isObject(last) || last.done !== true) return;
    this.done = true;
    this.usage = usageFromOllama(last);
    if (typeof last.done_reason === 'string') this.reason = last.done_reason;
    if (typeof last.model === 'string') this.model = last.model;
  }
}

function errorText(line: string): string {
  try {
    const parsed: unknown = JSON.parse(line);
    if (isObject(parsed) && typeof parsed.error === 'string') return parsed.error;
  } catch {
    /* a cut-off line: its text says enough */
  }
  return line.slice(0, 500);
}
