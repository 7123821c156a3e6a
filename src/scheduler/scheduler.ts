import { compareBackends } from './ordering.ts';
import { nextSpeed, tokensPerSecond } from './speed.ts';
import {
  SchedulerRejection,
  type BackendSlotSpec,
  type Candidate,
  type Lease,
  type SchedulerOptions,
  type SchedulerSnapshot,
  type SpeedSample,
  type Ticket,
} from './types.ts';
import { typeKeysByBackend, WaiterIndex, type Waiter } from './waiters.ts';

/** Live slot state of one backend. */
interface BackendSlots {
  spec: BackendSlotSpec;
  inflight: number;
  lastTypeKey?: string;
  speed?: number;
  /** Removed from the fleet but leases are still out: kept only so they release cleanly. */
  removed: boolean;
}

/**
 * The one queue every call goes through. A call either gets a lease on the best free
 * candidate now, or parks until a candidate frees. A freed slot is handed straight to one
 * designated waiter, so a fresh arrival can never take a slot a waiter is entitled to.
 *
 * Pure logic: no I/O, time comes from the injected clock.
 */
export class Scheduler {
  private readonly clock: SchedulerOptions['clock'];
  private maxParked: number;
  private affinityMaxWaitMs: number;
  private readonly backends = new Map<string, BackendSlots>();
  private readonly waiters = new WaiterIndex();
  /** The waiter of each parked ticket, for `queuePosition`. */
  private readonly waiterOfTicket = new WeakMap<Ticket, Waiter>();
  private nextSeq = 1;

  constructor(opts: SchedulerOptions) {
    this.clock = opts.clock;
    this.maxParked = opts.maxParked;
    this.affinityMaxWaitMs = opts.affinityMaxWaitMs;
  }

  /** Hot reload of the limits; waiters already parked stay parked. */
  configure(opts: Partial<Omit<SchedulerOptions, 'clock'>>): void {
    if (opts.maxParked !== undefined) this.maxParked = opts.maxParked;
    if (opts.affinityMaxWaitMs !== undefined) this.affinityMaxWaitMs = opts.affinityMaxWaitMs;
  }

  /** Adds a backend or changes its cap / paid flag / availability, then hands out free slots. */
  upsertBackend(spec: BackendSlotSpec): void {
    const existing = this.backends.get(spec.name);
    if (existing) {
      existing.spec = { ...spec };
      existing.removed = false;
    } else {
      this.backends.set(spec.name, { spec: { ...spec }, inflight: 0, removed: false });
    }
    this.handOffEverywhere();
  }

  /** Takes a backend out of routing. Leases already out stay valid and release harmlessly. */
  removeBackend(name: string): void {
    const slots = this.backends.get(name);
    if (!slots) return;
    if (slots.inflight > 0) slots.removed = true;
    else this.backends.delete(name);
  }

  /**
   * The fleet's model lists changed: every parked ticket that has `refresh` is re-resolved,
   * once each and oldest first, and also waits on the backends it did not have (in its place
   * by age there, not at the back). Then free slots are handed off as after any fleet change,
   * so a waiter whose new backend is free gets its lease at once.
   *
   * Backends the ticket already had are kept even if they no longer serve it: hand-off only
   * goes to available backends, and the request path checks the model again. New type keys
   * on a backend the ticket already had are not added either. A refresh that throws (or
   * returns a non-array) counts as no candidates. O(parked × their candidates), plus an
   * O(queue length) insert for each backend a ticket gains: for model-list changes, not for
   * every request.
   */
  refreshCandidates(): void {
    // A copy: a refresh may settle waiters (an abort) or park new ones.
    for (const waiter of [...this.waiters.values()]) {
      if (waiter.settled || !waiter.refresh) continue;
      this.waiters.widen(waiter, refreshedCandidates(waiter.refresh));
    }
    this.handOffEverywhere();
  }

  /**
   * A lease on the best free candidate now, or one handed over later while parked. Rejects with
   * a SchedulerRejection: 'no_backend' (no candidate is a known, available backend; never
   * parks), 'parking_off', 'queue_full', 'park_timeout' or 'aborted'.
   */
  acquire(ticket: Ticket): Promise<Lease> {
    if (ticket.signal?.aborted) return Promise.reject(aborted());
    const usable = this.order(ticket.candidates);
    if (usable.length === 0) {
      return Promise.reject(new SchedulerRejection('no_backend', `no available backend serves ${ticket.alias}`));
    }
    const lease = this.takeFreeSlot(usable);
    if (lease) return Promise.resolve(lease);
    if (!(ticket.parkMs > 0)) {
      return Promise.reject(new SchedulerRejection('parking_off', `every backend for ${ticket.alias} is busy`, 1));
    }
    if (this.waiters.size >= this.maxParked) {
      return Promise.reject(new SchedulerRejection('queue_full', `too many requests waiting (${this.maxParked})`, 2));
    }
    return this.park(ticket);
  }

  /**
   * Failover: a lease on the first free candidate in scheduler order whose backend is not in
   * `exclude`, or null. Never waits, and never takes a slot a waiter is entitled to.
   */
  tryAcquireNow(candidates: Candidate[], exclude: ReadonlySet<string>): Lease | null {
    const usable = this.order(candidates).filter((candidate) => !exclude.has(candidate.backend));
    return this.takeFreeSlot(usable);
  }

  /** Available candidates in scheduler order (busy ones included), for failover lists. */
  order(candidates: Candidate[]): Candidate[] {
    const usable = candidates.filter((candidate) => this.routable(candidate.backend) !== undefined);
    return usable.sort((a, b) => compareBackends(this.rank(a.backend), this.rank(b.backend)));
  }

  /** Feeds the speed EWMA (α 0.3 of output tok/s); only status 200 with ≥16 output tokens counts. */
  recordSpeed(backend: string, sample: SpeedSample): void {
    const slots = this.backends.get(backend);
    const tokPerSec = tokensPerSecond(sample);
    if (!slots || tokPerSec === undefined) return;
    slots.speed = nextSpeed(slots.speed, tokPerSec);
  }

  hasParked(): boolean {
    return this.waiters.size > 0;
  }

  /**
   * Where a parked ticket stands: 1 + the older waiters that wait on any of its backends (they
   * are served before it there), and how long it has waited. Undefined when it is not parked.
   * O(parked × backends): for keep-alive comments every few seconds, not per request.
   */
  queuePosition(ticket: Ticket): { position: number; waitedMs: number } | undefined {
    const waiter = this.waiterOfTicket.get(ticket);
    if (!waiter || waiter.settled) return undefined;
    let ahead = 0;
    for (const other of this.waiters.values()) {
      if (other.seq >= waiter.seq) break;
      for (const backend of other.typeKeysByBackend.keys()) {
        if (waiter.typeKeysByBackend.has(backend)) {
          ahead++;
          break;
        }
      }
    }
    return { position: ahead + 1, waitedMs: this.clock.now() - waiter.enqueuedAt };
  }

  snapshot(): SchedulerSnapshot {
    const now = this.clock.now();
    const backends = [...this.backends.values()]
      .filter((slots) => !slots.removed)
      .map(({ spec, inflight, lastTypeKey, speed }) => ({
        name: spec.name,
        inflight,
        cap: spec.cap,
        paid: spec.paid,
        available: spec.available,
        lastTypeKey,
        speed,
      }));
    const parked = [...this.waiters.values()].map((waiter) => ({
      alias: waiter.alias,
      typeKeys: [...new Set([...waiter.typeKeysByBackend.values()].flat())],
      backends: [...waiter.typeKeysByBackend.keys()],
      ageMs: now - waiter.enqueuedAt,
      remainingMs: Math.max(0, waiter.deadline - now),
    }));
    return { backends, parked, parkedByAlias: this.waiters.countsByAlias() };
  }

  private park(ticket: Ticket): Promise<Lease> {
    return new Promise<Lease>((resolve, reject) => {
      const enqueuedAt = this.clock.now();
      const waiter: Waiter = {
        seq: this.nextSeq++,
        alias: ticket.alias,
        enqueuedAt,
        deadline: enqueuedAt + ticket.parkMs,
        typeKeysByBackend: typeKeysByBackend(ticket.candidates),
        refresh: ticket.refresh,
        resolve,
        reject,
        settled: false,
        timer: undefined,
      };
      waiter.timer = this.clock.setTimeout(() => {
        this.unpark(waiter);
        reject(new SchedulerRejection('park_timeout', `no backend for ${ticket.alias} freed within ${ticket.parkMs} ms`, 2));
      }, ticket.parkMs);
      const signal = ticket.signal;
      if (signal) {
        const onAbort = (): void => {
          if (waiter.settled) return;
          this.unpark(waiter);
          reject(aborted());
        };
        signal.addEventListener('abort', onAbort, { once: true });
        waiter.detachAbort = () => signal.removeEventListener('abort', onAbort);
      }
      this.waiters.add(waiter);
      this.waiterOfTicket.set(ticket, waiter);
    });
  }

  /** Takes the waiter out of the queues and drops its timer and abort listener. */
  private unpark(waiter: Waiter): void {
    this.waiters.remove(waiter);
    this.clock.clearTimeout(waiter.timer);
    waiter.detachAbort?.();
  }

  /** First candidate (already in scheduler order) with a free slot, leased; null if none. */
  private takeFreeSlot(ordered: readonly Candidate[]): Lease | null {
    for (const candidate of ordered) {
      const slots = this.routable(candidate.backend);
      if (!slots || !hasFreeSlot(slots)) continue;
      // Hand-offs happen the moment a slot frees, so a free slot with waiters should not
      // exist; if it ever does, the waiters are served first.
      if (this.waiters.hasWaitersFor(candidate.backend)) this.handOff(slots);
      if (hasFreeSlot(slots)) return this.grant(slots, candidate.model, 0);
    }
    return null;
  }

  /** Gives free slots of this backend to designated waiters, one decision per slot. */
  private handOff(slots: BackendSlots): void {
    while (!slots.removed && slots.spec.available && hasFreeSlot(slots)) {
      const now = this.clock.now();
      const pick = this.waiters.designate(slots.spec.name, slots.lastTypeKey, now, this.affinityMaxWaitMs);
      if (!pick) return;
      this.unpark(pick.waiter);
      pick.waiter.resolve(this.grant(slots, pick.typeKey, now - pick.waiter.enqueuedAt));
    }
  }

  private handOffEverywhere(): void {
    for (const slots of this.backends.values()) this.handOff(slots);
  }

  private grant(slots: BackendSlots, typeKey: string, waitedMs: number): Lease {
    slots.inflight++;
    slots.lastTypeKey = typeKey;
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      slots.inflight--;
      if (slots.removed) {
        if (slots.inflight === 0 && this.backends.get(slots.spec.name) === slots) this.backends.delete(slots.spec.name);
        return;
      }
      this.handOff(slots);
    };
    return Object.freeze({ backend: slots.spec.name, model: typeKey, waitedMs, release });
  }

  /** The backend's slots if it is known, in the fleet and available. */
  private routable(name: string): BackendSlots | undefined {
    const slots = this.backends.get(name);
    return slots && !slots.removed && slots.spec.available ? slots : undefined;
  }

  private rank(name: string): { paid: boolean; speed: number | undefined } {
    const slots = this.backends.get(name)!;
    return { paid: slots.spec.paid, speed: slots.speed };
  }
}

function hasFreeSlot(slots: BackendSlots): boolean {
  return slots.spec.cap === 0 || slots.inflight < slots.spec.cap;
}

/** What a ticket's refresh returns now; nothing if it throws or returns something else. */
function refreshedCandidates(refresh: () => Candidate[]): readonly Candidate[] {
  try {
    const candidates = refresh();
    return Array.isArray(candidates) ? candidates : [];
  } catch {
    return [];
  }
}

function aborted(): SchedulerRejection {
  return new SchedulerRejection('aborted', 'the client went away while waiting for a backend');
}
