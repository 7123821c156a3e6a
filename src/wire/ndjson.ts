/**
 * Newline-delimited JSON, the framing of Ollama's native streams (`application/x-ndjson`): one
 * JSON object per line, `\n` after each.
 *
 * The splitter hands back each line as an SseEvent-shaped record, so the relay and the stream
 * translators read both framings through one interface: `raw` is the line's exact bytes with
 * its newline (concatenating every `raw` reproduces the input), `data` its text without the
 * line end. A blank line comes back with `data: ''`, like an SSE comment: nothing to act on.
 */
import type { SseEvent } from './sse.ts';

const LF = 0x0a;
const CR = 0x0d;
/** Zero-length, so sharing it between splitters shares no state. */
const EMPTY = Buffer.alloc(0);

export class NdjsonSplitter {
  /** Bytes of the line being assembled. */
  private pending: Buffer = EMPTY;

  /** Adds a chunk and returns the lines it completed (possibly none). */
  push(chunk: Buffer | Uint8Array): SseEvent[] {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (bytes.length === 0) return [];
    const buf = this.pending.length === 0 ? bytes : Buffer.concat([this.pending, bytes]);
    const lines: SseEvent[] = [];
    let start = 0;
    let lf = buf.indexOf(LF, start);
    while (lf !== -1) {
      lines.push(lineEvent(buf.subarray(start, lf + 1), lf - start));
      start = lf + 1;
      lf = buf.indexOf(LF, start);
    }
    this.pending = start === 0 ? buf : buf.subarray(start);
    return lines;
  }

  /** Ends the stream: a last line without its newline comes back marked `incomplete`. */
  flush(): SseEvent[] {
    const rest = this.pending;
    this.pending = EMPTY;
    if (rest.length === 0) return [];
    const last = lineEvent(rest, rest.length);
    last.incomplete = true;
    return [last];
  }
}

/** The record of one line: `raw` its bytes, `data` its first `textLength` bytes as text (less a `\r` at the end). */
function lineEvent(raw: Buffer, textLength: number): SseEvent {
  let end = textLength;
  if (end > 0 && raw[end - 1] === CR) end -= 1;
  return { raw, data: end > 0 ? raw.toString('utf8', 0, end).trim() : '' };
}

/** Frames one JSON text as an NDJSON line. */
export function formatNdjsonLine(json: string): string {
  return `${json}\n`;
}
