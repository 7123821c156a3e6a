import { LazyFifo } from './lazy-fifo.ts';
import type { AheadCount, Candidate, Lease, SchedulerRejection } from './types.ts';

/** A parked ticket. Leaves every queue at once by being marked settled. */
export interface Waiter {
  /** Monotonic arrival number: smaller = older. */
  readonly seq: number;
  readonly alias: string;
  readonly enqueuedAt: number;
  readonly deadline: number;
  /**
   * Type keys the waiter can run as on each backend, in candidate order; backends gained by
   * `WaiterIndex.widen` come after. Change it only through the index, which queues by it.
   */
  readonly typeKeysByBackend: Map<string, readonly string[]>;
  /** Re-resolves the ticket's candidates against the current fleet; absent = fixed candidates. */
  readonly refresh?: () => Candidate[];
  readonly resolve: (lease: Lease) => void;
  readonly reject: (rejection: SchedulerRejection) => void;
  settled: boolean;
  timer: unknown;
  detachAbort?: () => void;
}

/** Groups a ticket's candidates by backend, keeping candidate order and dropping repeats. */
export function typeKeysByBackend(candidates: readonly Candidate[]): Map<string, string[]> {
  const byBackend = new Map<string, string[]>();
  for (const { backend, model: typeKey } of candidates) {
    const keys = byBackend.get(backend);
    if (!keys) byBackend.set(backend, [typeKey]);
    else if (!keys.includes(typeKey)) keys.push(typeKey);
  }
  return byBackend;
}

/**
 * 1 + the waiters of `parked` (oldest first) older than `waiter` that wait on one of its
 * backends, or on a backend in the same GPU group (`groupOf`) as one of them.
 */
export function positionOf(waiter: Waiter, parked: Iterable<Waiter>, groupOf: (backend: string) => object | undefined): number {
  const groups = new Set<object>();
  for (const backend of waiter.typeKeysByBackend.keys()) {
    const group = groupOf(backend);
    if (group) groups.add(group);
  }
  const competes = (backend: string): boolean => {
    if (waiter.typeKeysByBackend.has(backend)) return true;
    const group = groups.size > 0 ? groupOf(backend) : undefined;
    return group !== undefined && groups.has(group);
  };
  let ahead = 0;
  for (const other of parked) {
    if (other.seq >= waiter.seq) break;
    for (const backend of other.typeKeysByBackend.keys()) {
      if (competes(backend)) {
        ahead++;
        break;
      }
    }
  }
  return ahead + 1;
}

/**
 * How many older waiters `aheadByBackend` looks at, at most: the default `max_parked`, so the
 * count is exact with the defaults, and a short wait behind thousands of long ones costs a
 * bounded scan (measured: 10,000 waits ending youngest first cost what they cost before).
 */
export const AHEAD_SCAN_LIMIT = 100;

/**
 * For each backend of `waiter`: the waiters of `parked` (oldest first) older than it that wait
 * on that backend or on one in its GPU group (`groupOf`), i.e. the calls served there before
 * it. For a refusal's "N ahead", run only when a wait ends unserved: O(min(older waiters,
 * `limit`) × their backends × its backends). Waits that end in arrival order find the older
 * ones gone; the limit bounds the rest (a short wait behind thousands of long ones).
 */
export function aheadByBackend(
  waiter: Waiter,
  parked: Iterable<Waiter>,
  groupOf: (backend: string) => object | undefined,
  limit = AHEAD_SCAN_LIMIT,
): AheadCount {
  const mine = [...waiter.typeKeysByBackend.keys()].map((backend) => ({ backend, group: groupOf(backend) }));
  const ahead = new Map(mine.map(({ backend }) => [backend, 0]));
  let seen = 0;
  for (const other of parked) {
    if (other.seq >= waiter.seq) break;
    if (seen++ === limit) return { byBackend: ahead, atLeast: true };
    for (const { backend, group } of mine) {
      if (other.typeKeysByBackend.has(backend) || (group !== undefined && inGroup(other, group, groupOf))) {
        ahead.set(backend, ahead.get(backend)! + 1);
      }
    }
  }
  return { byBackend: ahead, atLeast: false };
}

function inGroup(waiter: Waiter, group: object, groupOf: (backend: string) => object | undefined): boolean {
  for (const backend of waiter.typeKeysByBackend.keys()) if (groupOf(backend) === group) return true;
  return false;
}

/** Waiters that can use one backend: all of them, and split by the type key they would run. */
class BackendWaiters {
  readonly all = new LazyFifo<Waiter>();
  readonly byTypeKey = new Map<string, LazyFifo<Waiter>>();
}

/** The waiter a free slot goes to, and the type key it will run there. */
export interface Designation {
  waiter: Waiter;
  typeKey: string;
}

/** What `WaiterIndex.designate` weighs besides the queues. */
export interface DesignateOptions {
  /** Type key of the backend's latest lease: a waiter for it needs no model load. */
  lastTypeKey: string | undefined;
  now: number;
  /** A waiter parked longer than this gets the slot before affinity (and runnability) count. */
  affinityMaxWaitMs: number;
  /** Whether a waiter of this type key can start on the backend now; absent = every one can. */
  runnable?: (typeKey: string) => boolean;
}

/**
 * Parked tickets, indexed by backend name (known or not yet known) and by (backend, type key),
 * each queue FIFO by arrival. Every lookup touches queue heads only.
 */
export class WaiterIndex {
  private readonly byBackend = new Map<string, BackendWaiters>();
  /** Unsettled waiters in arrival order (a Set keeps insertion order). */
  private readonly parked = new Set<Waiter>();
  private readonly countByAlias = new Map<string, number>();

  get size(): number {
    return this.parked.size;
  }

  /** Parks a waiter younger than every parked one (it has the highest `seq`). */
  add(waiter: Waiter): void {
    this.parked.add(waiter);
    this.countByAlias.set(waiter.alias, (this.countByAlias.get(waiter.alias) ?? 0) + 1);
    for (const [backend, typeKeys] of waiter.typeKeysByBackend) this.enqueue(waiter, backend, typeKeys, false);
  }

  /**
   * Lets a parked waiter also wait on the backends among `candidates` it did not have yet: it
   * joins their queues in arrival order, not at the tail, so it is as old there as everywhere.
   * Backends it already has are left as they are (new type keys on them are ignored). Returns
   * the backends added. O(its candidates × queue length) for the ordered inserts.
   */
  widen(waiter: Waiter, candidates: readonly Candidate[]): string[] {
    if (waiter.settled) return [];
    const added: string[] = [];
    for (const [backend, typeKeys] of typeKeysByBackend(candidates)) {
      if (waiter.typeKeysByBackend.has(backend)) continue;
      waiter.typeKeysByBackend.set(backend, typeKeys);
      this.enqueue(waiter, backend, typeKeys, true);
      added.push(backend);
    }
    return added;
  }

  /** Marks the waiter settled and takes it out of every queue (O(its candidates)). */
  remove(waiter: Waiter): void {
    if (waiter.settled) return;
    waiter.settled = true;
    this.parked.delete(waiter);
    const left = (this.countByAlias.get(waiter.alias) ?? 1) - 1;
    if (left > 0) this.countByAlias.set(waiter.alias, left);
    else this.countByAlias.delete(waiter.alias);
    for (const [backend, typeKeys] of waiter.typeKeysByBackend) {
      const queues = this.byBackend.get(backend);
      if (!queues) continue;
      queues.all.noteSettled();
      for (const typeKey of typeKeys) {
        const queue = queues.byTypeKey.get(typeKey);
        if (!queue) continue;
        queue.noteSettled();
        if (queue.live === 0) queues.byTypeKey.delete(typeKey);
      }
      if (queues.all.live === 0) this.byBackend.delete(backend);
    }
  }

  /** Whether anyone is waiting for this backend. */
  hasWaitersFor(backend: string): boolean {
    return this.byBackend.get(backend)?.all.peek() !== undefined;
  }

  /** The oldest waiter for this backend, if any. O(1) amortised. */
  oldest(backend: string): Waiter | undefined {
    return this.byBackend.get(backend)?.all.peek();
  }

  /** The oldest waiter that would run `typeKey` on this backend, if any. O(1) amortised. */
  oldestWithTypeKey(backend: string, typeKey: string): Waiter | undefined {
    return this.byBackend.get(backend)?.byTypeKey.get(typeKey)?.peek();
  }

  /** Live waiters queued on this backend. O(1). */
  queuedOn(backend: string): number {
    return this.byBackend.get(backend)?.all.live ?? 0;
  }

  /** Live waiters on `backend` older than `waiter`. O(that queue): for keep-alive ETAs, not per request. */
  aheadOn(backend: string, waiter: Waiter): number {
    const queue = this.byBackend.get(backend)?.all;
    let ahead = 0;
    if (queue) for (const other of queue.values()) {
      if (other.seq >= waiter.seq) break;
      ahead++;
    }
    return ahead;
  }

  /**
   * Who gets a slot that frees on `backend`: (1) the oldest waiter if it is overdue (parked
   * longer than `affinityMaxWaitMs`), else (2) the oldest whose type key there equals
   * `lastTypeKey`, else (3) the oldest. With `runnable`, a waiter whose type key cannot start
   * there now (its model is not loaded on a busy box) is passed over unless it is overdue: (2)
   * and (3) only take runnable ones, then (4) the oldest runnable head of any type key there.
   * Undefined when no one may take the slot. O(1) amortised; (4) O(type keys queued there).
   */
  designate(backend: string, opts: DesignateOptions): Designation | undefined {
    const queues = this.byBackend.get(backend);
    const oldest = queues?.all.peek();
    if (!queues || !oldest) return undefined;
    const { lastTypeKey, runnable } = opts;
    const oldestTypeKey = oldest.typeKeysByBackend.get(backend)![0];
    if (opts.now - oldest.enqueuedAt > opts.affinityMaxWaitMs) return { waiter: oldest, typeKey: oldestTypeKey };
    if (lastTypeKey !== undefined && (!runnable || runnable(lastTypeKey))) {
      const sameModel = queues.byTypeKey.get(lastTypeKey)?.peek();
      if (sameModel) return { waiter: sameModel, typeKey: lastTypeKey };
    }
    if (!runnable || runnable(oldestTypeKey)) return { waiter: oldest, typeKey: oldestTypeKey };
    let best: Designation | undefined;
    for (const [typeKey, queue] of queues.byTypeKey) {
      const head = queue.peek();
      if (head && (!best || head.seq < best.waiter.seq) && runnable(typeKey)) best = { waiter: head, typeKey };
    }
    return best;
  }

  /** Unsettled waiters, oldest first. */
  values(): IterableIterator<Waiter> {
    return this.parked.values();
  }

  countsByAlias(): Record<string, number> {
    return Object.fromEntries(this.countByAlias);
  }

  /** Queues the waiter on one backend: in `all` and under each of its type keys there. */
  private enqueue(waiter: Waiter, backend: string, typeKeys: readonly string[], late: boolean): void {
    let queues = this.byBackend.get(backend);
    if (!queues) this.byBackend.set(backend, (queues = new BackendWaiters()));
    if (late) queues.all.insertInOrder(waiter);
    else queues.all.push(waiter);
    for (const typeKey of typeKeys) {
      let queue = queues.byTypeKey.get(typeKey);
      if (!queue) queues.byTypeKey.set(typeKey, (queue = new LazyFifo<Waiter>()));
      if (late) queue.insertInOrder(waiter);
      else queue.push(waiter);
    }
  }
}
