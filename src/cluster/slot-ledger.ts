/**
 * The shared slot ledger of a cluster: which instance holds which slot of which backend, and
 * who waits for them, in Redis (the scripts are in slot-scripts.ts). A lease is an entry with a
 * TTL that this instance refreshes while the call runs; an instance that dies stops refreshing
 * and its slots come back within the TTL. This module does the Redis side only; what the local
 * scheduler does with the answers is in cluster/scheduler.ts.
 */
import type { Redis } from 'ioredis';
import type { ClusterNode } from './node.ts';
import { COUNT, LEAVE, RELEASE, TAKE } from './slot-scripts.ts';

/** The channel every take, release and leave publishes `<leases held>|<backend>` on. */
export const SLOTS_CHANNEL = 'slots';

type LedgerRedis = Redis & {
  gwTake(...args: (string | number)[]): Promise<[number, number, string]>;
  gwRelease(...args: (string | number)[]): Promise<number>;
  gwLeave(...args: (string | number)[]): Promise<number>;
  gwCount(n: number, ...args: (string | number)[]): Promise<number[]>;
};

export interface TakeRequest {
  backend: string;
  model: string;
  leaseId: string;
  cap: number;
  /** The call's wait member while it is (or was) parked; '' for a call that never parked. */
  waitMember: string;
  arrivedAt: number;
  affinityMs: number;
}

export type TakeVerdict = { held: true; leases: number } | { held: false; leases: number; entitled: string };

/** A parked call's places in the shared lines: its member in each backend's (`id|deadline|model`). */
export interface WaitEntry {
  arrivedAt: number;
  members: ReadonlyMap<string, string>;
}

export class SlotLedger {
  private readonly redis: LedgerRedis;
  /** Lease id → backend, of the leases this instance holds (refreshed while they run). */
  private readonly held = new Map<string, string>();
  private readonly heldCount = new Map<string, number>();
  /** Releases and leaves Redis did not take (it was unreachable): sent again when it is back. */
  private readonly owed = new Map<string, () => Promise<unknown>>();
  private refresher?: NodeJS.Timeout;

  constructor(private readonly node: ClusterNode) {
    const redis = node.redis as LedgerRedis;
    if (typeof redis.gwTake !== 'function') {
      redis.defineCommand('gwTake', { numberOfKeys: 4, lua: TAKE });
      redis.defineCommand('gwRelease', { numberOfKeys: 1, lua: RELEASE });
      redis.defineCommand('gwLeave', { numberOfKeys: 2, lua: LEAVE });
      redis.defineCommand('gwCount', { lua: COUNT });
    }
    this.redis = redis;
    this.refresher = setInterval(() => void this.refresh(), Math.max(250, node.leaseTtlMs / 3));
    this.refresher.unref();
    node.onReconnect(() => void this.settleOwed().then(() => this.refresh()));
  }

  get instanceId(): string {
    return this.node.instanceId;
  }

  get reachable(): boolean {
    return this.node.connected;
  }

  /** Holds one slot of `backend` for this instance, or says why not. Rejects when Redis does not answer. */
  async take(req: TakeRequest): Promise<TakeVerdict> {
    const { node } = this;
    const [ok, leases, entitled] = await this.redis.gwTake(
      node.key('slots', req.backend),
      node.key('queue', req.backend),
      node.key('last', req.backend),
      node.key('alive'),
      req.leaseId,
      req.cap,
      Date.now(),
      node.leaseTtlMs,
      req.waitMember,
      req.arrivedAt,
      req.model,
      req.affinityMs,
      node.key(SLOTS_CHANNEL),
      req.backend,
    );
    if (ok !== 1) return { held: false, leases, entitled };
    this.held.set(req.leaseId, req.backend);
    this.heldCount.set(req.backend, (this.heldCount.get(req.backend) ?? 0) + 1);
    return { held: true, leases };
  }

  /** Gives a held slot back (once); sent again after a reconnect if Redis did not take it. */
  release(leaseId: string): void {
    const backend = this.held.get(leaseId);
    if (backend === undefined) return;
    this.held.delete(leaseId);
    this.heldCount.set(backend, (this.heldCount.get(backend) ?? 1) - 1);
    const send = () =>
      this.redis.gwRelease(this.node.key('slots', backend), leaseId, Date.now(), this.node.key(SLOTS_CHANNEL), backend);
    this.sendOrOwe(`release:${leaseId}`, send);
  }

  /** Slots this instance holds on `backend` now. */
  heldOn(backend: string): number {
    return this.heldCount.get(backend) ?? 0;
  }

  /** Puts a parked call in the shared line of each of its backends (fire and forget, in order on the connection). */
  join(entry: WaitEntry): void {
    if (!this.reachable) return;
    for (const [backend, member] of entry.members) {
      void this.redis.zadd(this.node.key('queue', backend), entry.arrivedAt, member).catch(() => {});
    }
  }

  /** Takes a parked call out of the shared lines; each backend it leaves is announced. */
  leave(entry: WaitEntry): void {
    for (const [backend, member] of entry.members) {
      const send = () =>
        this.redis.gwLeave(
          this.node.key('slots', backend),
          this.node.key('queue', backend),
          member,
          Date.now(),
          this.node.key(SLOTS_CHANNEL),
          backend,
        );
      this.sendOrOwe(`leave:${backend}:${member}`, send);
    }
  }

  /** Leases held on each of `backends` across the cluster. */
  async counts(backends: readonly string[]): Promise<number[]> {
    if (backends.length === 0) return [];
    const keys = backends.map((b) => this.node.key('slots', b));
    return this.redis.gwCount(keys.length, ...keys, Date.now());
  }

  close(): void {
    clearInterval(this.refresher);
  }

  /** Pushes the expiry of every lease this instance holds (re-adding one Redis lost: counted once, by its id). */
  private async refresh(): Promise<void> {
    if (this.held.size === 0 || !this.reachable) return;
    const expiry = Date.now() + this.node.leaseTtlMs;
    const pipe = this.redis.pipeline();
    for (const [leaseId, backend] of this.held) pipe.zadd(this.node.key('slots', backend), expiry, leaseId);
    await pipe.exec().catch(() => {});
  }

  private sendOrOwe(key: string, send: () => Promise<unknown>): void {
    if (!this.reachable) {
      this.owed.set(key, send);
      return;
    }
    send().catch(() => this.owed.set(key, send));
  }

  private async settleOwed(): Promise<void> {
    const owed = [...this.owed];
    this.owed.clear();
    for (const [key, send] of owed) await send().catch(() => this.owed.set(key, send));
  }
}
