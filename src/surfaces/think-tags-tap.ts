/**
 * `reasoning_as_content: think_tags`: a chat stream's reasoning deltas re-labelled as
 * `<think>…</think>` content (for clients that show only content) before the usage tap sees
 * them. Chunks without reasoning pass as their own bytes.
 */
import { ThinkTagsRelabel } from '../bridges/reasoning/think-tags.ts';
import type { SseEvent } from '../wire/sse.ts';
import { formatSseData } from '../wire/sse.ts';
import type { StreamSummary } from '../wire/stream-usage.ts';
import type { StreamTranslator } from '../upstream/surface.ts';

export class ThinkTagsTap implements StreamTranslator {
  private readonly relabel = new ThinkTagsRelabel();

  constructor(private readonly inner: StreamTranslator) {}

  get ended(): boolean {
    return this.inner.ended;
  }

  onEvent(ev: SseEvent): Buffer | null {
    if (!ev.data || ev.data === '[DONE]' || ev.incomplete) return this.inner.onEvent(ev);
    const data = this.relabel.relabelChunk(ev.data);
    if (data === ev.data) return this.inner.onEvent(ev);
    return this.inner.onEvent({ raw: Buffer.from(formatSseData(data)), data, event: ev.event, id: ev.id });
  }

  finishedWithoutMarker(): boolean {
    return this.inner.finishedWithoutMarker();
  }

  summary(): StreamSummary {
    return this.inner.summary();
  }
}
