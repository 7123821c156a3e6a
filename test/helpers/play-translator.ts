/**
 * Driving a stream translator (chat → Messages, chat → Responses) the way the relay does:
 * bytes through the real SSE splitter, each event to `onEvent`, what it writes collected.
 */
import { SseSplitter, type SseEvent } from '../../src/wire/sse.ts';

export interface StreamTranslatorLike {
  readonly ended?: boolean;
  onEvent(ev: SseEvent): Buffer | Uint8Array | undefined | null;
}

/** Every event of `events` (joined into one chunk), the written bytes as text. */
export function feed(t: StreamTranslatorLike, events: string[]): string {
  const out: Uint8Array[] = [];
  for (const ev of new SseSplitter().push(Buffer.from(events.join('')))) {
    const bytes = t.onEvent(ev);
    if (bytes) out.push(bytes);
  }
  return Buffer.concat(out).toString('utf8');
}

/**
 * Plays a relay: splits `input` into chunks of `sizes()` bytes, feeds every event until the
 * translator's end marker (as the relay does) and collects the output. The translator is made
 * with a clock that reads the index of the event being handled.
 */
export function play<T extends StreamTranslatorLike>(
  input: string,
  sizes: () => number,
  make: (clock: () => number) => T,
): { output: string; t: T } {
  let eventIndex = -1;
  const t = make(() => eventIndex);
  const bytes = Buffer.from(input);
  const splitter = new SseSplitter();
  const out: Uint8Array[] = [];
  const handle = (ev: SseEvent) => {
    if (t.ended) return;
    eventIndex += 1;
    const written = t.onEvent(ev);
    if (written) out.push(written);
  };
  for (let at = 0; at < bytes.length;) {
    const size = sizes();
    splitter.push(bytes.subarray(at, at + size)).forEach(handle);
    at += size;
  }
  splitter.flush().forEach(handle);
  return { output: Buffer.concat(out).toString('utf8'), t };
}
