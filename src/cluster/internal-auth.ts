/**
 * The mark of a request one instance forwards to another (a job's status or files, an
 * instance's statistics): an HMAC, under a secret the cluster keeps in Redis, of the method,
 * the URL, the time and the client's address. A client cannot forge it, a copy is good for
 * `MAX_SKEW_MS` only, and a request without a valid mark is an ordinary client's, whatever
 * headers it sends. The mark only says "forwarded by a peer, for this client address"; the
 * receiving instance still checks the caller's own key as for any request.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ClusterNode } from './node.ts';

export const MARK_HEADER = 'x-gateway-cluster-mark';
export const CLIENT_IP_HEADER = 'x-gateway-cluster-client';
const MAX_SKEW_MS = 30_000;
/** How often a mark that does not verify may send this instance back to Redis for the secret. */
const REREAD_EVERY_MS = 5_000;

export class ClusterMarks {
  private secret = '';
  private rereadAt = 0;

  constructor(private readonly node: ClusterNode) {}

  /** Reads the cluster's secret, making it if this is the first instance (SET NX: one wins). */
  async load(): Promise<void> {
    const key = this.node.key('internal-secret');
    const mine = this.secret || randomBytes(32).toString('hex');
    await this.node.redis.set(key, mine, 'NX');
    this.secret = (await this.node.redis.get(key)) ?? mine;
  }

  /** Headers for a request to a peer on behalf of a client at `clientIp`. */
  headers(method: string, url: string, clientIp: string): Record<string, string> {
    const at = Date.now();
    return {
      [MARK_HEADER]: `${at}.${this.sign(at, method, url, clientIp)}`,
      [CLIENT_IP_HEADER]: clientIp,
    };
  }

  /** The client address a genuine peer's request is for; undefined for anything else. */
  read(method: string, url: string, headers: Record<string, string | string[] | undefined>): string | undefined {
    const mark = headers[MARK_HEADER];
    const ip = headers[CLIENT_IP_HEADER];
    if (typeof mark !== 'string' || typeof ip !== 'string' || !this.secret) return undefined;
    const dot = mark.indexOf('.');
    const at = Number(mark.slice(0, dot));
    if (dot < 1 || !Number.isFinite(at) || Math.abs(Date.now() - at) > MAX_SKEW_MS) return undefined;
    const given = Buffer.from(mark.slice(dot + 1));
    if (this.matches(given, this.sign(at, method, url, ip))) return ip;
    // the secret may have been made again (Redis lost and restarted empty): read it again, now and then
    if (Date.now() > this.rereadAt) {
      this.rereadAt = Date.now() + REREAD_EVERY_MS;
      void this.load().catch(() => {});
    }
    return undefined;
  }

  private matches(given: Buffer, expected: string): boolean {
    const want = Buffer.from(expected);
    return given.length === want.length && timingSafeEqual(given, want);
  }

  private sign(at: number, method: string, url: string, ip: string): string {
    return createHmac('sha256', this.secret).update(`${at}\n${method}\n${url}\n${ip}`).digest('hex');
  }
}
