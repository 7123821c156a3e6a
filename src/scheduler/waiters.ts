import type { FairShare } from './fair-share.ts';
import { LazyFifo } from './lazy-fifo.ts';
import type { Candidate } from './types.ts';

import type { Waiter } from './waiter.ts';

export type { Waiter } from './waiter.ts';
export { AHEAD_SCAN_LIMIT, aheadByBackend, positionOf } from './queue-position.ts';

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

/** The type key a waiter runs on `backend` when nothing else decides: its first candidate there. */
export function firstTypeKey(waiter: Waiter, backend: string): string {
  return waiter.typeKeysByBackend.get(backend)![0];
}

/** One user's waiters on one backend: all of them, and split by the type key they would run. */
export class UserQueues {
  readonly all = new LazyFifo<Waiter>();
  readonly byTypeKey = new Map<string, LazyFifo<Waiter>>();
}

/** Waiters that can use one backend, per user. */
class BackendWaiters {
  /** By `TicketUser.key`; a user leaves the map with its last waiter here. */
  readonly byUser = new Map<string, UserQueues>();
  /** Live waiters across users. */
  live = 0;
}

/** The waiter a free slot goes to, and the type key it will run there. */
export interface Designation {
  waiter: Waiter;
  typeKey: string;
}

/** How `WaiterIndex.designate` decides for one free slot. */
export interface DesignateOptions {
  /** What the backend ran last (model affinity). */
  lastTypeKey: string | undefined;
  now: number;
  /** A waiter parked longer than this is overdue: it goes first, affinity and fairness aside. */
  affinityMaxWaitMs: number;
  /**
   * Whether a type key can run on the backend now; a waiter that cannot is passed over unless
   * overdue. Absent = all can.
   */
  runnable?: (typeKey: string) => boolean;
}

/** A user's choice on a backend, and whether it matched what the backend ran last. */
interface UserChoice extends Designation {
  affine: boolean;
}

/**
 * The waiter of one user's queues on `backend` a free slot there goes to: its oldest if it is
 * overdue; else its oldest whose type key equals `lastTypeKey` (no model reload); else its
 * oldest that is runnable; undefined when none is. O(1) amortised; O(its type keys there) when a
 * `runnable` test passes its oldest over.
 */
export function chooseWithinUser(
  queues: UserQueues,
  backend: string,
  options: DesignateOptions,
): UserChoice | undefined {
  const oldest = queues.all.peek();
  if (!oldest) return undefined;
  const { lastTypeKey, runnable } = options;
  const typeKey = firstTypeKey(oldest, backend);
  if (options.now - oldest.enqueuedAt > options.affinityMaxWaitMs) return { waiter: oldest, typeKey, affine: false };
  if (lastTypeKey !== undefined && (!runnable || runnable(lastTypeKey))) {
    const sameModel = queues.byTypeKey.get(lastTypeKey)?.peek();
    if (sameModel) return { waiter: sameModel, typeKey: lastTypeKey, affine: true };
  }
  if (!runnable || runnable(typeKey)) return { waiter: oldest, typeKey, affine: false };
  let best: UserChoice | undefined;
  for (const [key, queue] of queues.byTypeKey) {
    const head = queue.peek();
    if (head && (!best || head.seq < best.waiter.seq) && runnable(key)) {
      best = { waiter: head, typeKey: key, affine: false };
    }
  }
  return best;
}

/** Between two users' choices of equal virtual time: the one without a model reload, then the older. */
function preferChoice(a: UserChoice, b: UserChoice): boolean {
  return a.affine !== b.affine ? a.affine : a.waiter.seq < b.waiter.seq;
}

/**
 * Parked tickets, indexed by backend name (known or not yet known), then by user, then by type
 * key, each queue FIFO by arrival. Every lookup touches queue heads only. The index tells the
 * fair share (fair-share.ts) of each waiter's coming and going.
 */
export class WaiterIndex {
  private readonly byBackend = new Map<string, BackendWaiters>();
  /** Backends each user has waiters on, for the hand-off when a capped user's lease ends. */
  private readonly backendsByUser = new Map<string, Set<string>>();
  /** Unsettled waiters in arrival order (a Set keeps insertion order). */
  private readonly parked = new Set<Waiter>();
  private readonly countByAlias = new Map<string, number>();

  constructor(readonly fair: FairShare) {}

  get size(): number {
    return this.parked.size;
  }

  /** Parks a waiter younger than every parked one (it has the highest `seq`), or a `late` one in its place. */
  add(waiter: Waiter, late = false): void {
    this.parked.add(waiter);
    this.countByAlias.set(waiter.alias, (this.countByAlias.get(waiter.alias) ?? 0) + 1);
    this.fair.waiterAdded(waiter.user);
    for (const [backend, typeKeys] of waiter.typeKeysByBackend) this.enqueue(waiter, backend, typeKeys, late);
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
    const userKey = waiter.user.key;
    this.fair.waiterRemoved(userKey);
    for (const [backend, typeKeys] of waiter.typeKeysByBackend) {
      const queues = this.byBackend.get(backend);
      if (!queues) continue;
      queues.live--;
      const mine = queues.byUser.get(userKey);
      if (mine && settleIn(mine, typeKeys)) this.leaveBackend(queues, backend, userKey);
      if (queues.live === 0) this.byBackend.delete(backend);
    }
  }

  /** Whether anyone is waiting for this backend. */
  hasWaitersFor(backend: string): boolean {
    return (this.byBackend.get(backend)?.live ?? 0) > 0;
  }

  /** Live waiters of this backend. O(1). */
  queuedOn(backend: string): number {
    return this.byBackend.get(backend)?.live ?? 0;
  }

  /**
   * Live waiters on `backend` older than `waiter` (in arrival order; the fair order may serve
   * some younger ones of other users first), counted up to `limit`. O(that queue, or `limit`):
   * for keep-alive ETAs and spill timers, not per request.
   */
  aheadOn(backend: string, waiter: Waiter, limit = Infinity): number {
    let ahead = 0;
    for (const mine of this.byBackend.get(backend)?.byUser.values() ?? []) {
      for (const other of mine.all.values()) {
        if (other.seq >= waiter.seq) break;
        if (++ahead >= limit) return ahead;
      }
    }
    return ahead;
  }

  /** The oldest waiter for this backend, if any. O(users waiting there). */
  oldest(backend: string): Waiter | undefined {
    let oldest: Waiter | undefined;
    for (const mine of this.byBackend.get(backend)?.byUser.values() ?? []) {
      const head = mine.all.peek();
      if (head && (!oldest || head.seq < oldest.seq)) oldest = head;
    }
    return oldest;
  }

  /** The users with waiters on this backend and their queues there (each has at least one). */
  usersOn(backend: string): ReadonlyMap<string, UserQueues> | undefined {
    return this.byBackend.get(backend)?.byUser;
  }

  /** The backends the user has waiters on (a copy). */
  backendsOf(userKey: string): string[] {
    const backends = this.backendsByUser.get(userKey);
    return backends ? [...backends] : [];
  }

  /**
   * Who gets a slot that frees on `backend`: the user with the smallest virtual time among those
   * with waiters here that are below their `max_inflight`, and within it (`chooseWithinUser`)
   * its oldest waiter if it is overdue (parked longer than `affinityMaxWaitMs`), else its oldest
   * whose type key equals `lastTypeKey`, else its oldest; waiters whose type key is not
   * `runnable` are passed over unless overdue. Equal virtual times go to no reload, then the
   * older. With one user this is the FIFO-with-affinity of before. O(users with waiters here),
   * each lookup at queue heads.
   */
  designate(backend: string, options: DesignateOptions): Designation | undefined {
    const users = this.byBackend.get(backend)?.byUser;
    if (!users) return undefined;
    const fair = this.fair;
    let best: UserChoice | undefined;
    let bestVt = Infinity;
    for (const [key, mine] of users) {
      if (!fair.canStartKey(key)) continue;
      const vt = fair.virtualTime(key);
      if (vt > bestVt) continue;
      const choice = chooseWithinUser(mine, backend, options);
      if (choice && (!best || vt < bestVt || preferChoice(choice, best))) {
        best = choice;
        bestVt = vt;
      }
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

  /** Queues the waiter on one backend: in `all`, and in its user's queues under each of its type keys there. */
  private enqueue(waiter: Waiter, backend: string, typeKeys: readonly string[], late: boolean): void {
    let queues = this.byBackend.get(backend);
    if (!queues) this.byBackend.set(backend, (queues = new BackendWaiters()));
    const userKey = waiter.user.key;
    let mine = queues.byUser.get(userKey);
    if (!mine) {
      queues.byUser.set(userKey, (mine = new UserQueues()));
      let backends = this.backendsByUser.get(userKey);
      if (!backends) this.backendsByUser.set(userKey, (backends = new Set()));
      backends.add(backend);
    }
    queues.live++;
    put(mine.all, waiter, late);
    for (const typeKey of typeKeys) {
      let queue = mine.byTypeKey.get(typeKey);
      if (!queue) mine.byTypeKey.set(typeKey, (queue = new LazyFifo<Waiter>()));
      put(queue, waiter, late);
    }
  }

  /** The user has no waiter left on the backend. */
  private leaveBackend(queues: BackendWaiters, backend: string, userKey: string): void {
    queues.byUser.delete(userKey);
    const backends = this.backendsByUser.get(userKey);
    backends?.delete(backend);
    if (backends?.size === 0) this.backendsByUser.delete(userKey);
  }
}

/** Notes a settled waiter in one user's queues on a backend; true when it was the user's last there. */
function settleIn(mine: UserQueues, typeKeys: readonly string[]): boolean {
  mine.all.noteSettled();
  for (const typeKey of typeKeys) {
    const queue = mine.byTypeKey.get(typeKey);
    if (!queue) continue;
    queue.noteSettled();
    if (queue.live === 0) mine.byTypeKey.delete(typeKey);
  }
  return mine.all.live === 0;
}

/** Appends (the hot path) or, for a late joiner, inserts in arrival order. */
function put(queue: LazyFifo<Waiter>, waiter: Waiter, late: boolean): void {
  if (late) queue.insertInOrder(waiter);
  else queue.push(waiter);
}
