/**
 * How long a client may go silent while the gateway is still receiving its request: from the
 * connection's first byte through the last byte of the body. A stalled upload (complete
 * headers, a body that never finishes) would otherwise hold its socket, its parser and
 * whatever it buffered forever, even unauthenticated. Once the request has been read the
 * timer is off: a long non-streamed answer or an SSE stream is the gateway's (and its
 * backend's) time, never cut by this. Between keep-alive requests Node's keepAliveTimeout
 * takes over.
 *
 * A request that stalls gets a 408 (OpenAI-shaped, or Anthropic-shaped on /v1/messages) when
 * nothing was answered yet, and its connection is closed either way.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.ts';

/**
 * The whole request must have arrived within this, however steadily it trickles (Node's
 * requestTimeout): a backstop against a client that sends a byte just often enough, sized so
 * that the largest JSON body (96 MiB of base64 images) still arrives on a 256 kbit/s uplink.
 */
export const REQUEST_RECEIVE_LIMIT_MS = 60 * 60_000;

/** Arms the silence timer on every new connection; `idleMs()` is read each time (0 = off). */
export function armReceiveTimeout(server: Server, idleMs: () => number): void {
  server.on('connection', (socket: Socket) => {
    const ms = idleMs();
    if (ms > 0) socket.setTimeout(ms);
  });
}

/**
 * The per-request part (an onRequest hook): a request whose body is still coming keeps the
 * timer (a stall answers 408 and closes); one that has arrived turns it off.
 */
export function watchRequestReceipt(
  req: FastifyRequest,
  reply: FastifyReply,
  idleMs: number,
  render: (err: GatewayError) => string,
): void {
  const socket = req.raw.socket as Socket | null;
  // fastify's inject has a socket of its own making, without timers
  if (!socket || idleMs <= 0 || typeof socket.setTimeout !== 'function') return;
  const received = () => socket.setTimeout(0);
  if (req.raw.complete) {
    received();
    return;
  }
  socket.setTimeout(idleMs);
  req.raw.once('end', received);
  // a listener here keeps Node from destroying the socket on its own: this one answers first
  req.raw.once('timeout', () => {
    const res = reply.raw;
    if (res.headersSent || res.writableEnded) {
      socket.destroy();
      return;
    }
    const body = render(receiveTimedOut(idleMs));
    res.writeHead(408, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
      'x-request-id': String(req.id),
    });
    res.end(body, () => socket.destroy());
  });
}

function receiveTimedOut(idleMs: number): GatewayError {
  return new GatewayError({
    status: 408,
    code: 'request_timeout',
    message:
      `The request stalled: nothing arrived for ${Math.round(idleMs / 1000)} s ` +
      'before it was complete (request_body_timeout_s).',
  });
}
