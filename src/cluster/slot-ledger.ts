/**
 * The shared slot ledger of a cluster: which instance holds which slot of which backend, and
 * who waits for them, in Redis (the scripts are in slot-scripts.ts). A lease is an entry with a
 * TTL that this instance refreshes while the call runs; an instance that dies stops refreshing
 * and its slots come back within the TTL. This module does the Redis side only; what the local
 * scheduler does with the answers is in cluster/scheduler.ts.
 */
import type { Redis } from 'ioredis';
import { KEY_PREFIX, type ClusterNode } from './node.ts';
import { LuaScript } from './lua-script.ts';
import { COUNT, LEAVE, SETTLE } from './slot-scripts.ts';

/** The channel every take, release and leave publishes `<leases held>|<backend>` on. */
export const SLOTS_CHANNEL = 'slots';

const settle = new LuaScript(SETTLE);
const leaveLine = new LuaScript(LEAVE);
const countLeases = new LuaScript(COUNT);

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

interface PendingTake {
  req: TakeRequest;
  resolve: (verdict: TakeVerdict) => void;
  reject: (err: unknown) => void;
}

export type TakeVerdict = { held: true; leases: number } | { held: false; leases: number; entitled: string };

/** A parked call's places in the shared lines: its member in each backend's (`id|deadline|model`). */
export interface WaitEntry {
  arrivedAt: number;
  members: ReadonlyMap<string, string>;
}

export class SlotLedger {
  private readonly redis: Redis;
  /** Lease id → backend, of the leases this instance holds (refreshed while they run). */
  private readonly held = new Map<string, string>();
  private readonly heldCount = new Map<string, number>();
  /** Takes asked for in this turn of the event loop, sent together. */
  private readonly takes: PendingTake[] = [];
  /** Releases not sent yet: backend, lease id, … */
  private readonly releases: string[] = [];
  private flushScheduled = false;
  /** A script call is out (its answer not back yet). */
  private inFlight = false;
  /** Releases and leaves Redis did not take (it was unreachable): sent again when it is back. */
  private readonly owed = new Map<string, () => Promise<unknown>>();
  private refresher?: NodeJS.Timeout;

  constructor(private readonly node: ClusterNode) {
    const redis = node.redis;
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

  /**
   * Holds one slot of `backend` for this instance, or says why not. Rejects when Redis does not
   * answer. The takes (and releases) of one turn of the event loop go to Redis as one script call.
   */
  take(req: TakeRequest): Promise<TakeVerdict> {
    return new Promise((resolve, reject) => {
      this.takes.push({ req, resolve, reject });
      this.flushSoon();
    });
  }

  /** Gives a held slot back (once), at the end of this turn; sent again after a reconnect if Redis did not take it. */
  release(leaseId: string): void {
    const backend = this.held.get(leaseId);
    if (backend === undefined) return;
    this.held.delete(leaseId);
    this.heldCount.set(backend, (this.heldCount.get(backend) ?? 1) - 1);
    this.releases.push(backend, leaseId);
    this.flushSoon();
  }

  /**
   * Sends what is pending now, unless a script call is still out: then it goes when that one's
   * answer is back. One call alone goes at once; under load the calls that come in the
   * meantime ride together (one script call for many).
   */
  private flushSoon(): void {
    if (this.flushScheduled || this.inFlight) return;
    this.flushScheduled = true;
    queueMicrotask(() => this.flush());
  }

  private flush(): void {
    this.flushScheduled = false;
    const takes = this.takes.splice(0);
    const releases = this.releases.splice(0);
    if (takes.length === 0 && releases.length === 0) return;
    const failed = (err: unknown) => {
      // the takes fail (their calls get a 503); the releases are owed until Redis is back
      if (releases.length > 0) this.owe(releases);
      for (const t of takes) t.reject(err);
    };
    if (!this.reachable) return failed(new Error('the cluster store (Redis) is unreachable'));
    const args: (string | number)[] = [KEY_PREFIX, Date.now(), this.node.leaseTtlMs, releases.length / 2, ...releases];
    for (const { req } of takes) {
      args.push(req.backend, req.leaseId, req.cap, req.waitMember, req.arrivedAt, req.model, req.affinityMs);
    }
    this.inFlight = true;
    settle
      .run<[number, number, string][]>(this.redis, [], args)
      .then((verdicts) => this.settled(takes, verdicts), failed)
      .finally(() => {
        this.inFlight = false;
        if (this.takes.length > 0 || this.releases.length > 0) this.flushSoon();
      });
  }

  private settled(takes: PendingTake[], verdicts: [number, number, string][]): void {
    takes.forEach(({ req, resolve }, i) => {
      const [ok, leases, entitled] = verdicts[i];
      if (ok !== 1) return resolve({ held: false, leases, entitled });
      this.held.set(req.leaseId, req.backend);
      this.heldCount.set(req.backend, (this.heldCount.get(req.backend) ?? 0) + 1);
      resolve({ held: true, leases });
    });
  }

  /** Releases Redis did not take: sent (alone) once it is back. */
  private owe(releases: string[]): void {
    const send = () => settle.run(this.redis, [], [KEY_PREFIX, Date.now(), 0, releases.length / 2, ...releases]);
    this.owed.set(`release:${releases[1]}`, send);
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
        leaveLine.run(
          this.redis,
          [this.node.key('slots', backend), this.node.key('queue', backend)],
          [member, Date.now(), this.node.key(SLOTS_CHANNEL), backend],
        );
      this.sendOrOwe(`leave:${backend}:${member}`, send);
    }
  }

  /** Leases held on each of `backends` across the cluster. */
  async counts(backends: readonly string[]): Promise<number[]> {
    if (backends.length === 0) return [];
    const keys = backends.map((b) => this.node.key('slots', b));
    return countLeases.run<number[]>(this.redis, keys, [Date.now()]);
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
