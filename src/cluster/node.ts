/**
 * This instance's membership in a cluster (`cluster:` in config.yaml): its name, its Redis
 * connections, pub/sub dispatch by channel, and its heartbeat (the instance is alive while
 * `<prefix>alive` scores it in the future). The parts that share state (slots and queue,
 * quotas, health, the store, sessions, media jobs) each take the node and use its connections.
 */
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import type { ClusterSpec } from '../config/types.ts';
import { CLUSTER_DEFAULTS } from '../config/cluster-schema.ts';
import { connectRedis } from './redis.ts';

/** Every key and channel the gateway uses starts with this. */
export const KEY_PREFIX = 'llmgw:';

type Listener = (message: string) => void;

export class ClusterNode {
  readonly instanceId: string;
  /** Where the other instances reach this one: `advertise_url`, else learnt from the listening address. */
  advertiseUrl?: string;
  readonly leaseTtlMs: number;
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly reconnectHooks = new Set<() => void>();
  private readonly closeHooks: (() => void)[] = [];
  private heartbeat?: NodeJS.Timeout;
  private closed = false;
  private wasDown = false;

  private constructor(
    /** Commands. */
    readonly redis: Redis,
    /** Pub/sub only. */
    private readonly sub: Redis,
    spec: ClusterSpec,
  ) {
    this.instanceId = spec.instance_id ?? `${hostname()}-${process.pid}`;
    this.advertiseUrl = spec.advertise_url;
    this.leaseTtlMs = (spec.lease_ttl_s ?? CLUSTER_DEFAULTS.lease_ttl_s) * 1000;
    sub.on('message', (channel: string, message: string) => {
      for (const listener of this.listeners.get(channel) ?? []) {
        try {
          listener(message);
        } catch {
          // a listener's failure is its own
        }
      }
    });
    redis.on('close', () => (this.wasDown = true));
    redis.on('ready', () => {
      if (!this.wasDown || this.closed) return;
      this.wasDown = false;
      void this.beat();
      for (const hook of this.reconnectHooks) hook();
    });
  }

  /** Connects both connections; throws a ClusterUnreachableError naming `cluster.redis_url`. */
  static async connect(spec: ClusterSpec): Promise<ClusterNode> {
    const redis = await connectRedis(spec.redis_url);
    let sub: Redis;
    try {
      sub = await connectRedis(spec.redis_url);
    } catch (err) {
      redis.disconnect();
      throw err;
    }
    const node = new ClusterNode(redis, sub, spec);
    await node.beat();
    node.heartbeat = setInterval(() => void node.beat(), Math.max(500, node.leaseTtlMs / 3));
    node.heartbeat.unref();
    return node;
  }

  /** Whether commands can be sent now (the connection is up). */
  get connected(): boolean {
    return this.redis.status === 'ready';
  }

  key(...parts: string[]): string {
    return KEY_PREFIX + parts.join(':');
  }

  /** Calls `listener` with every message on `channel` (prefixed here); returns the unsubscribe. */
  subscribe(channel: string, listener: Listener): () => void {
    const full = this.key(channel);
    let set = this.listeners.get(full);
    if (!set) {
      this.listeners.set(full, (set = new Set()));
      void this.sub.subscribe(full).catch(() => {});
    }
    set.add(listener);
    return () => set.delete(listener);
  }

  /** Fire and forget; a lost message is covered by each part's periodic re-check. */
  publish(channel: string, message: string): void {
    if (!this.connected) return;
    void this.redis.publish(this.key(channel), message).catch(() => {});
  }

  /** Runs `hook` each time the connection comes back after a loss (re-register what this instance holds). */
  onReconnect(hook: () => void): () => void {
    this.reconnectHooks.add(hook);
    return () => this.reconnectHooks.delete(hook);
  }

  /** Runs `hook` first when the node closes (the parts stop their timers). */
  onClose(hook: () => void): void {
    this.closeHooks.push(hook);
  }

  /** The URL derived from the listening address, used while `advertise_url` is unset. */
  learnUrl(url: string): void {
    if (this.advertiseUrl) return;
    this.advertiseUrl = url;
    void this.beat();
  }

  /** Instances alive now (their heartbeat not expired), this one included. */
  async aliveInstances(): Promise<{ id: string; url?: string }[]> {
    const now = Date.now();
    const ids = await this.redis.zrangebyscore(this.key('alive'), now, '+inf');
    if (ids.length === 0) return [];
    const urls = await this.redis.hmget(this.key('instance-urls'), ...ids);
    return ids.map((id, i) => (urls[i] ? { id, url: urls[i]! } : { id }));
  }

  /** Refreshes this instance's heartbeat and drops expired ones. */
  private async beat(): Promise<void> {
    if (!this.connected || this.closed) return;
    const now = Date.now();
    try {
      const pipe = this.redis.multi();
      pipe.zadd(this.key('alive'), now + this.leaseTtlMs, this.instanceId);
      pipe.zremrangebyscore(this.key('alive'), '-inf', now - 60_000);
      if (this.advertiseUrl) pipe.hset(this.key('instance-urls'), this.instanceId, this.advertiseUrl);
      await pipe.exec();
    } catch {
      // the next beat tries again
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.heartbeat);
    for (const hook of this.closeHooks.splice(0)) hook();
    try {
      if (this.connected) await this.redis.zrem(this.key('alive'), this.instanceId);
    } catch {
      // gone anyway: the heartbeat expires
    }
    this.sub.disconnect();
    this.redis.disconnect();
  }
}
