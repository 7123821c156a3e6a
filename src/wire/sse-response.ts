import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';

const SSE_HEAD = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
};

/** The content type of an SSE stream; a surface that streams another framing (Ollama's NDJSON) names its own. */
export const SSE_CONTENT_TYPE = SSE_HEAD['content-type'];

/** The client stopped reading and its socket buffer stayed full past the deadline. */
export class ClientStalled extends Error {
  constructor(ms: number) {
    super(`the client read nothing for ${ms} ms`);
  }
}

/** The client's connection closed while the gateway was writing. */
export class ClientGone extends Error {}

/**
 * The client's side of one streamed call, shared by every attempt (failover) and by the
 * keep-alive: the head is written once (by whoever writes first), data with back-pressure and
 * a deadline, comments only when the socket has room. `dataWritten` tells the proxy whether a
 * failover is still invisible to the client.
 */
export class SseResponse {
  headWritten = false;
  /** A data event reached the client: from now on the answer is committed to one backend. */
  dataWritten = false;
  /** Writes so far (data or comment): the keep-alive compares it between ticks (no timer work per write). */
  writes = 0;

  constructor(
    private readonly reply: FastifyReply,
    private readonly baseHeaders: Record<string, string>,
    /** The head's content type: SSE's unless the surface streams NDJSON (Ollama). */
    private readonly contentType: string = SSE_CONTENT_TYPE,
  ) {}

  get raw(): ServerResponse {
    return this.reply.raw;
  }

  /** Gone or ended: nothing more can be written. */
  get closed(): boolean {
    return this.raw.destroyed || this.raw.writableEnded;
  }

  /**
   * Writes the 200 SSE head unless it went out already; `extra` headers only count then. The
   * headers hooks set on the reply (CORS) go out too: the head bypasses fastify's send.
   */
  ensureHead(extra?: Record<string, string>): void {
    if (this.headWritten) return;
    this.reply.hijack();
    const head = this.reply.getHeaders() as OutgoingHttpHeaders; // a fresh copy: ours to add to
    Object.assign(head, SSE_HEAD, this.baseHeaders);
    if (this.contentType !== SSE_CONTENT_TYPE) head['content-type'] = this.contentType;
    if (extra) Object.assign(head, extra);
    this.raw.writeHead(200, head);
    this.headWritten = true;
  }

  /**
   * Writes data events. When the socket buffer is past its high-water mark it waits for
   * 'drain', at most `stallMs` (client_stall_timeout_s; 0 = no limit), then rejects with
   * ClientStalled; ClientGone if the client left.
   */
  write(bytes: Buffer, stallMs: number): Promise<void> | void {
    this.ensureHead();
    this.dataWritten = true;
    const res = this.raw;
    this.writes++;
    if (res.write(bytes)) return;
    return drained(res, stallMs);
  }

  /**
   * A keep-alive frame (an SSE comment, or an event clients skip such as Anthropic's ping):
   * skipped while the client is not reading; it never counts as data.
   */
  keepalive(frame: string): void {
    if (this.closed) return;
    this.ensureHead();
    if (this.raw.writableNeedDrain) return;
    this.raw.write(frame);
    this.writes++;
  }

  /** Ends the stream with one last event (`frame`: its whole SSE text; an error, as a rule). */
  endWithEvent(frame: string): void {
    if (this.closed) return;
    this.ensureHead();
    this.raw.end(frame);
  }

  end(): void {
    if (this.closed) return;
    this.ensureHead();
    this.raw.end();
  }

  /** Drops the connection (a stalled or vanished client). */
  destroy(): void {
    if (!this.raw.destroyed) this.raw.destroy();
  }
}

/**
 * Keeps a waiting stream alive: when a tick of `intervalMs` finds that nothing was written
 * since the last one, it writes the SSE head (once) and a keep-alive frame (an SSE comment that
 * says what the call waits for: queue position, or the first token), so reverse proxies and clients with
 * header timeouts hold on. A comment thus follows between one and two intervals of silence;
 * in exchange a busy stream costs no timer work per write.
 */
export class StreamKeepalive {
  private readonly timer?: NodeJS.Timeout;
  private seenWrites = 0;

  /** `frame()` gives the whole keep-alive text (an SSE comment saying what the call waits for). */
  constructor(
    private readonly sse: SseResponse,
    intervalMs: number,
    private readonly frame: () => string,
  ) {
    if (!(intervalMs > 0)) return;
    this.timer = setInterval(() => this.tick(), intervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private tick(): void {
    if (this.sse.closed) return this.stop();
    if (this.sse.writes === this.seenWrites) this.sse.keepalive(this.frame());
    this.seenWrites = this.sse.writes;
  }
}

/**
 * Waits for `res` to drain: rejects with ClientStalled after `stallMs` (0 = no limit), with
 * ClientGone when the client leaves first. The stall is believed only after one more I/O turn
 * without a drain (after a stalled event loop, the timer runs before the socket's news).
 */
export function drained(res: ServerResponse, stallMs: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    const settle = (err?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      res.off('drain', drain);
      res.off('close', gone);
      if (err) reject(err);
      else resolve();
    };
    const stalled = () => setImmediate(() => settle(res.writableNeedDrain ? new ClientStalled(stallMs) : undefined));
    const timer = stallMs > 0 ? setTimeout(stalled, stallMs) : undefined;
    const drain = () => settle();
    const gone = () => settle(new ClientGone());
    res.once('drain', drain);
    res.once('close', gone);
  });
}
