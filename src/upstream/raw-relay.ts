/**
 * Pipes a 200 answer that is neither JSON nor an event stream (speech audio, a transcript as
 * text) to the client as it arrives: never buffered whole, one write per upstream chunk with
 * back-pressure, the same deadlines as an SSE relay (backend silence, client stall). The
 * client's head goes out with the first body byte, so a backend that breaks before sending any
 * can still be failed over; after that a broken upstream destroys the client's connection,
 * since a binary body has no way to carry an error (the client sees a truncated body: a short
 * content-length or no last chunk).
 */
import type { FastifyReply } from 'fastify';
import type { Dispatcher } from 'undici';
import { describeError } from '../backends/errors.ts';
import type { BackendError } from '../backends/types.ts';
import { clientResponseHeaders } from './headers.ts';
import { UpstreamIdleWatch } from './idle-watch.ts';
import { ClientGone, ClientStalled, drained } from '../wire/sse-response.ts';

export interface RawRelayOptions {
  upstream: Dispatcher.ResponseData;
  reply: FastifyReply;
  /** The client's response head (rawHead() of the upstream's, plus the gateway's own). */
  headers: Record<string, string | string[]>;
  /** Called with the first body byte: the attempt's deadline is met. */
  onFirstByte: () => void;
  /** Longest silence of the backend between chunks after the first (stream_idle_timeout_s); 0 = none. */
  idleTimeoutMs: number;
  /** Longest the client may leave our buffer past its high-water mark (client_stall_timeout_s); 0 = none. */
  clientStallMs: number;
  /** Keep up to this many bytes of what the client got, for the call inspector; 0 = none. */
  captureBytes: number;
  now: () => number;
}

export type RawRelayResult = { captured?: Buffer; firstByteAt?: number; bytes: number } & (
  | { kind: 'complete' }
  /** No byte reached the client (its head is not out): the caller may try the next candidate. */
  | { kind: 'failover'; error: Omit<BackendError, 'since'> }
  | { kind: 'client_closed' }
  | { kind: 'client_stalled' }
  | { kind: 'upstream_failed'; error: Omit<BackendError, 'since'> }
);

/**
 * The client's head for a piped answer: the upstream's passable headers, its content-length
 * kept when it is one plain number (the bytes go through untouched, content-encoding and all);
 * without one the client's response is chunked.
 */
export function rawHead(upstream: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const head = clientResponseHeaders(upstream);
  const length = upstream['content-length'];
  if (typeof length === 'string' && /^\d+$/.test(length)) head['content-length'] = length;
  return head;
}

export async function relayRaw(opts: RawRelayOptions): Promise<RawRelayResult> {
  const { upstream, reply } = opts;
  const res = reply.raw;
  let headWritten = false;
  let firstByteAt: number | undefined;
  let bytes = 0;
  const captured: Buffer[] = [];
  let capturedBytes = 0;

  const idle = new UpstreamIdleWatch(upstream.body, opts.idleTimeoutMs);

  const writeHead = () => {
    if (headWritten) return;
    // the head bypasses fastify's send: the headers hooks set on the reply (CORS) go out too
    reply.hijack();
    const head = reply.getHeaders() as Record<string, string | string[] | number>;
    Object.assign(head, opts.headers);
    res.writeHead(200, head);
    headWritten = true;
  };
  const result = <T extends object>(r: T) =>
    Object.assign(r, { captured: captured.length ? Buffer.concat(captured) : undefined, firstByteAt, bytes });

  try {
    for await (const data of upstream.body) {
      const chunk = data as Buffer;
      if (res.destroyed) throw new ClientGone();
      if (firstByteAt === undefined) {
        firstByteAt = opts.now();
        opts.onFirstByte();
        idle.start();
      }
      if (capturedBytes < opts.captureBytes) {
        const part = chunk.subarray(0, opts.captureBytes - capturedBytes);
        captured.push(part);
        capturedBytes += part.length;
      }
      writeHead();
      bytes += chunk.length;
      if (!res.write(chunk)) await idle.clientWait(drained(res, opts.clientStallMs));
      // the backend's silence counts from here: a slow client's drain was not the backend's
      idle.refresh();
    }
    idle.stop();
    if (res.destroyed) throw new ClientGone();
    writeHead();
    res.end();
    return result({ kind: 'complete' as const });
  } catch (err) {
    idle.stop();
    upstream.body.destroy();
    if (err instanceof ClientStalled) {
      res.destroy();
      return result({ kind: 'client_stalled' as const });
    }
    if (err instanceof ClientGone || res.destroyed || (res.socket?.destroyed ?? false)) {
      res.destroy();
      return result({ kind: 'client_closed' as const });
    }
    const error = describeError(err);
    if (!headWritten) return result({ kind: 'failover' as const, error });
    // a binary body cannot carry an error: the client must see it cut short, not complete
    res.destroy();
    return result({ kind: 'upstream_failed' as const, error });
  }
}
