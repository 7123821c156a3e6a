/**
 * Requests from this instance to another one (a job's status or files, an instance's
 * statistics): who is alive at which URL, and one undici Agent with short timeouts. Each
 * request carries the cluster's mark (internal-auth.ts) and the caller's own key, never more.
 */
import { Agent, request, type Dispatcher } from 'undici';
import { GatewayError } from '../errors.ts';
import type { ClusterMarks } from './internal-auth.ts';
import type { ClusterNode } from './node.ts';

/** Headers of the caller's request that go along: its key (the peer checks it) and what it accepts. */
const PASSED = ['authorization', 'x-api-key', 'accept', 'accept-encoding', 'x-source'];
const CONNECT_TIMEOUT_MS = 2_000;
const HEAD_TIMEOUT_MS = 10_000;

export interface PeerCall {
  method: string;
  /** Path and query, as the client sent them. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  clientIp: string;
  /** 0 = no limit between body chunks (an event stream); default 30 s. */
  bodyTimeoutMs?: number;
  signal?: AbortSignal;
}

export class Peers {
  private readonly agent = new Agent({ connect: { timeout: CONNECT_TIMEOUT_MS }, keepAliveTimeout: 10_000 });

  constructor(
    private readonly node: ClusterNode,
    readonly marks: ClusterMarks,
  ) {}

  /** The base URL of `id` while it is alive (its heartbeat not expired); undefined otherwise. */
  async urlOf(id: string): Promise<string | undefined> {
    const [score, url] = await Promise.all([
      this.node.redis.zscore(this.node.key('alive'), id),
      this.node.redis.hget(this.node.key('instance-urls'), id),
    ]);
    if (score === null || Number(score) < Date.now() || !url) return undefined;
    return url;
  }

  /** Sends `call` to the peer at `base`; throws a 503 GatewayError saying `who` is unreachable. */
  async send(base: string, call: PeerCall, who: string): Promise<Dispatcher.ResponseData> {
    const headers: Record<string, string> = this.marks.headers(call.method, call.url, call.clientIp);
    for (const name of PASSED) {
      const v = call.headers[name];
      if (typeof v === 'string') headers[name] = v;
    }
    try {
      return await request(new URL(call.url, base), {
        method: call.method as Dispatcher.HttpMethod,
        headers,
        dispatcher: this.agent,
        headersTimeout: HEAD_TIMEOUT_MS,
        bodyTimeout: call.bodyTimeoutMs ?? 30_000,
        ...(call.signal ? { signal: call.signal } : {}),
      });
    } catch {
      throw unreachable(who);
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

export const unreachable = (who: string): GatewayError =>
  new GatewayError({ status: 503, code: 'instance_unreachable', type: 'api_error', retryAfter: 5, message: who });

/** Response headers that belong to one connection, not to the answer. */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authenticate',
]);
