/**
 * The console's state shared through the cluster's Redis (`cluster:` in config.yaml), so any
 * instance behind a load balancer answers any browser without sticky sessions:
 * - sessions: one key per session, `llmgw:ui:session:<sha256 of the id>` (never the cookie's
 *   value itself), holding who logged in, the name shown and the expiry, with a TTL equal to the
 *   session's lifetime; a logout on any instance deletes it for all;
 * - the login throttle: one counter per client address, INCR and PEXPIRE in one Lua script, so
 *   failures on instance A count on instance B;
 * - the cookie signing secret: agreed once through Redis (SET NX), so a cookie signed by one
 *   instance (the session's, the CSRF secret's) unsigns on every other.
 * A Redis that does not answer makes a console request needing a session a 503 saying so
 * (`ClusterStoreUnreachable`), never a crash.
 */
import { createHash, randomBytes } from 'node:crypto';
import { signerFactory, type UnsignResult } from '@fastify/cookie';
import type { ClusterNode } from '../cluster/node.ts';
import { WINDOW_MS, type ThrottleStore } from './login-throttle.ts';
import { SESSION_TTL_MS, type Session, type SessionStore, type SessionWho } from './sessions.ts';

/** How long a console request waits for Redis before its 503. */
const COMMAND_TIMEOUT_MS = 2_000;

export const STORE_UNREACHABLE = 'CLUSTER_STORE_UNREACHABLE';

/** A console request that needed the cluster's store while Redis did not answer: a 503 page saying so. */
export class ClusterStoreUnreachable extends Error {
  readonly statusCode = 503;
  readonly code = STORE_UNREACHABLE;
  constructor(what: string) {
    super(
      `The cluster store (Redis) is unreachable, so this gateway instance cannot ${what}. ` +
        'Try again in a moment; an administrator should check that Redis is running.',
    );
    this.name = 'ClusterStoreUnreachable';
  }
}

/** `op` against Redis, or a ClusterStoreUnreachable (down, refused, or no answer in time). */
async function ask<T>(node: ClusterNode, what: string, op: () => Promise<T>): Promise<T> {
  if (!node.connected) throw new ClusterStoreUnreachable(what);
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      op(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), COMMAND_TIMEOUT_MS);
      }),
    ]);
  } catch {
    throw new ClusterStoreUnreachable(what);
  } finally {
    clearTimeout(timer);
  }
}

type CookieSigner = ReturnType<typeof signerFactory>;

/** What a session key holds (its id is only in the key, hashed). */
interface StoredSession {
  who: SessionWho;
  name: string;
  expiresAt: number;
}

export class RedisSessions implements SessionStore {
  constructor(private readonly node: ClusterNode) {}

  private keyOf(id: string): string {
    return this.node.key('ui', 'session', createHash('sha256').update(id).digest('hex'));
  }

  async create(who: SessionWho, name: string, now: number): Promise<Session> {
    const id = randomBytes(24).toString('base64url');
    const stored: StoredSession = { who, name, expiresAt: now + SESSION_TTL_MS };
    await ask(this.node, 'start a console session', () =>
      this.node.redis.set(this.keyOf(id), JSON.stringify(stored), 'PX', SESSION_TTL_MS),
    );
    return { id, ...stored };
  }

  async get(id: string | undefined, now: number): Promise<Session | undefined> {
    if (!id) return undefined;
    const raw = await ask(this.node, 'check your console session', () => this.node.redis.get(this.keyOf(id)));
    if (!raw) return undefined;
    let stored: StoredSession;
    try {
      stored = JSON.parse(raw) as StoredSession;
    } catch {
      return undefined;
    }
    if (!stored || typeof stored.expiresAt !== 'number' || stored.expiresAt <= now) return undefined;
    return { id, who: stored.who, name: stored.name, expiresAt: stored.expiresAt };
  }

  async delete(id: string | undefined): Promise<void> {
    if (!id) return;
    await ask(this.node, 'end the console session', () => this.node.redis.del(this.keyOf(id)));
  }
}

/** Counts a failure; the first one of a window starts its expiry (also if a key somehow lost its TTL). */
const COUNT_FAILURE = `
local n = redis.call('INCR', KEYS[1])
if n == 1 or redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`;

export class RedisLoginThrottle implements ThrottleStore {
  constructor(
    private readonly node: ClusterNode,
    private readonly max: number,
  ) {}

  private keyOf(address: string): string {
    return this.node.key('ui', 'login-failures', address);
  }

  async retryAfter(address: string, _now: number): Promise<number> {
    const key = this.keyOf(address);
    const [count, ttl] = await ask(this.node, 'check the login throttle', () =>
      Promise.all([this.node.redis.get(key), this.node.redis.pttl(key)]),
    );
    return Number(count ?? 0) >= this.max && ttl > 0 ? Math.ceil(ttl / 1000) : 0;
  }

  async failed(address: string, _now: number): Promise<void> {
    await ask(this.node, 'count a failed login', () =>
      this.node.redis.eval(COUNT_FAILURE, 1, this.keyOf(address), String(WINDOW_MS)),
    );
  }
}

/**
 * The cookie signer every instance shares: the secret is agreed through Redis (the first
 * instance's wins, SET NX) and re-agreed after Redis came back empty; cookies signed with a
 * secret this instance used before still unsign (a rotation, not a logout of every browser).
 */
export class SharedCookieSigner implements CookieSigner {
  private signer: CookieSigner;
  private secrets: string[];

  private constructor(
    private readonly node: ClusterNode,
    secret: string,
  ) {
    this.secrets = [secret];
    this.signer = signerFactory(this.secrets);
  }

  static async agree(node: ClusterNode): Promise<SharedCookieSigner> {
    const shared = new SharedCookieSigner(node, randomBytes(32).toString('hex'));
    await shared.sync();
    node.onReconnect(() => void shared.sync().catch(() => {}));
    return shared;
  }

  sign(value: string): string {
    return this.signer.sign(value);
  }

  unsign(signed: string): UnsignResult {
    return this.signer.unsign(signed);
  }

  /** Offers this instance's secret, adopts the one Redis holds. */
  private async sync(): Promise<void> {
    const key = this.node.key('ui', 'cookie-secret');
    await this.node.redis.set(key, this.secrets[0], 'NX');
    const agreed = await this.node.redis.get(key);
    if (!agreed || agreed === this.secrets[0]) return;
    this.secrets = [agreed, ...this.secrets.filter((s) => s !== agreed)].slice(0, 4);
    this.signer = signerFactory(this.secrets);
  }
}

/** The console's stores for a cluster member. */
export async function clusterConsoleStores(
  node: ClusterNode,
  loginAttempts: number,
): Promise<{ sessions: RedisSessions; throttle: RedisLoginThrottle; signer: SharedCookieSigner }> {
  return {
    sessions: new RedisSessions(node),
    throttle: new RedisLoginThrottle(node, loginAttempts),
    signer: await SharedCookieSigner.agree(node),
  };
}
