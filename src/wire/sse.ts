/**
 * Incremental Server-Sent Events splitter.
 *
 * Upstream bodies arrive as arbitrary byte chunks; the relay needs whole events, both as the
 * exact bytes to forward (never re-serialised) and as parsed fields to inspect. The splitter
 * follows the WHATWG event-stream rules for lines (`\n`, `\r\n` or `\r` end a line; an empty
 * line ends an event; `:` starts a comment; one space after the field colon is dropped) but,
 * unlike a browser, it hands back every block of bytes it saw, comments and stray blank lines
 * included, so that concatenating the `raw` of every event reproduces the input exactly.
 */

/** One event block as it appeared on the wire. */
export interface SseEvent {
  /** The exact bytes of the event including its terminating blank line. May share memory with the pushed chunks. */
  raw: Buffer;
  /** The `data:` lines joined with '\n'; '' when the event had none (comments, pings, stray blank lines). */
  data: string;
  event?: string;
  id?: string;
  /** Set only on an event returned by `flush()` that the stream ended before terminating. */
  incomplete?: true;
}

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;
/** Zero-length, so sharing it between splitters shares no state. */
const EMPTY = Buffer.alloc(0);

/** Splits a byte stream into SSE events; feed chunks with `push`, call `flush` at end of stream. */
export class SseSplitter {
  /** Unconsumed bytes; always starts at the beginning of the event being assembled. */
  private pending: Buffer = EMPTY;
  /** Offset in `pending` of the first line not parsed yet. */
  private lineStart = 0;
  private data: string | undefined;
  private eventName: string | undefined;
  private eventId: string | undefined;
  private atStreamStart = true;

  /** Adds a chunk and returns the events it completed (possibly none). */
  push(chunk: Buffer | Uint8Array): SseEvent[] {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (bytes.length === 0) return [];
    this.pending = this.pending.length === 0 ? bytes : Buffer.concat([this.pending, bytes]);
    return this.scan(false);
  }

  /** Ends the stream: returns whatever is left as a final event, marked `incomplete` when unterminated. */
  flush(): SseEvent[] {
    const events = this.scan(true);
    const rest = this.pending;
    if (rest.length > 0) {
      if (this.lineStart < rest.length) this.parseLine(rest, this.lineStart, rest.length);
      const last = this.takeEvent(rest);
      last.incomplete = true;
      events.push(last);
      this.pending = EMPTY;
      this.lineStart = 0;
    }
    return events;
  }

  /** Parses every complete line in `pending`, emitting an event at each empty line. */
  private scan(atEnd: boolean): SseEvent[] {
    const events: SseEvent[] = [];
    const buf = this.pending;
    let eventStart = 0;
    let pos = this.lineStart;
    // Next LF / CR positions, cached so that a stream without CRs is searched for them once.
    let nextLf = buf.indexOf(LF, pos);
    let nextCr = buf.indexOf(CR, pos);
    while (true) {
      if (nextLf !== -1 && nextLf < pos) nextLf = buf.indexOf(LF, pos);
      if (nextCr !== -1 && nextCr < pos) nextCr = buf.indexOf(CR, pos);
      let lineEnd: number;
      let terminatorLength: number;
      if (nextCr !== -1 && (nextLf === -1 || nextCr < nextLf)) {
        lineEnd = nextCr;
        if (nextCr + 1 < buf.length) terminatorLength = buf[nextCr + 1] === LF ? 2 : 1;
        else if (atEnd) terminatorLength = 1;
        else break; // a CR at the end of what we have may be the first half of a CRLF
      } else if (nextLf !== -1) {
        lineEnd = nextLf;
        terminatorLength = 1;
      } else {
        break;
      }
      const next = lineEnd + terminatorLength;
      if (lineEnd === pos) {
        events.push(this.takeEvent(buf.subarray(eventStart, next)));
        eventStart = next;
      } else {
        this.parseLine(buf, pos, lineEnd);
      }
      pos = next;
    }
    this.pending = eventStart === 0 ? buf : buf.subarray(eventStart);
    this.lineStart = pos - eventStart;
    return events;
  }

  /** Builds an event from the fields parsed so far and resets them for the next one. */
  private takeEvent(raw: Buffer): SseEvent {
    const event: SseEvent = { raw, data: this.data ?? '' };
    if (this.eventName !== undefined) event.event = this.eventName;
    if (this.eventId !== undefined) event.id = this.eventId;
    this.data = undefined;
    this.eventName = undefined;
    this.eventId = undefined;
    return event;
  }

  private parseLine(buf: Buffer, start: number, end: number): void {
    if (this.atStreamStart) {
      this.atStreamStart = false;
      // A UTF-8 byte-order mark at the very start of the stream is not part of the first field.
      if (end - start >= 3 && buf[start] === 0xef && buf[start + 1] === 0xbb && buf[start + 2] === 0xbf) start += 3;
    }
    if (start === end || buf[start] === COLON) return; // comment
    let colon = buf.indexOf(COLON, start);
    if (colon === -1 || colon >= end) colon = end;
    let valueStart = colon + 1;
    if (valueStart < end && buf[valueStart] === SPACE) valueStart += 1;
    const value = valueStart < end ? buf.toString('utf8', valueStart, end) : '';
    // `data` is by far the most common field: recognise it from its bytes, without decoding
    if (
      colon - start === 4 &&
      buf[start] === 0x64 &&
      buf[start + 1] === 0x61 &&
      buf[start + 2] === 0x74 &&
      buf[start + 3] === 0x61
    ) {
      this.data = this.data === undefined ? value : `${this.data}\n${value}`;
      return;
    }
    switch (buf.toString('latin1', start, colon)) {
      case 'event':
        this.eventName = value;
        break;
      case 'id':
        if (!value.includes('\0')) this.eventId = value;
        break;
      default: // retry and unknown fields are ignored
    }
  }
}

/** Frames a JSON text as one SSE data event. */
export function formatSseData(json: string): string {
  return `data: ${json}\n\n`;
}

/** One SSE event with its `event:` line (Responses and Anthropic streams name every event). */
export function formatSseEvent(type: string, json: string): string {
  return `event: ${type}\ndata: ${json}\n\n`;
}
