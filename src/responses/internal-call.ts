/**
 * The marker of a background run's loopback call: a secret made per app at start-up (never
 * stored or logged), with the response's id and creation time. A request without the right
 * secret is an ordinary client's, whatever headers it sends; backends never see these headers
 * (upstream/headers.ts drops them).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { FastifyRequest } from 'fastify';

export class InternalCalls {
  private readonly secret = randomBytes(32).toString('hex');

  headers(id: string, createdAt: number): Record<string, string> {
    return {
      'x-gateway-internal': this.secret,
      'x-gateway-response-id': id,
      'x-gateway-created-at': String(createdAt),
    };
  }

  /** The id and creation time a genuine loopback call carries; undefined for anyone else. */
  read(req: FastifyRequest): { id: string; createdAt: number } | undefined {
    const given = req.headers['x-gateway-internal'];
    if (typeof given !== 'string' || given.length !== this.secret.length) return undefined;
    if (!timingSafeEqual(Buffer.from(given), Buffer.from(this.secret))) return undefined;
    const id = req.headers['x-gateway-response-id'];
    const createdAt = Number(req.headers['x-gateway-created-at']);
    if (typeof id !== 'string' || !/^resp_[0-9a-f]{16,64}$/.test(id) || !Number.isFinite(createdAt)) return undefined;
    return { id, createdAt };
  }
}

/** The gateway's own base URL from its listening address (a wildcard address is reached on loopback). */
export function selfUrl(address: AddressInfo | string | null): string {
  if (!address || typeof address === 'string') throw new Error('the gateway is not listening on TCP');
  const host =
    address.address === '0.0.0.0'
      ? '127.0.0.1'
      : address.address === '::'
        ? '[::1]'
        : address.family === 'IPv6'
          ? `[${address.address}]`
          : address.address;
  return `http://${host}:${address.port}`;
}
