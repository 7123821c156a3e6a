import { ANONYMOUS_USER, FairShare, serviceEstimate, userOf } from './fair-share.ts';
import { designateInGroup, GroupTable } from './groups.ts';
import { compareBackends, compareMembers, sortMediaCandidates } from './ordering.ts';
import { backendSnapshot, groupHasFreeSlot, hasFreeSlot, kindOf, type BackendSlots, type GroupSlots } from './slots.ts';
import { countsAsCall, learnCall } from './service-time.ts';
import { isJobSeconds, nextSpeed } from './speed.ts';
import {
  SchedulerRejection,
  type BackendKind,
  type BackendSlotSpec,
  type Candidate,
  type GroupLimits,
  type Lease,
  type SchedulerOptions,
  type SchedulerSnapshot,
  type SpeedSample,
  type Ticket,
  type TicketUser,
} from './types.ts';
import { aheadByBackend, positionOf, typeKeysByBackend, WaiterIndex, type Waiter } from './waiters.ts';

/**
 * The one queue every call goes through. A call either gets a lease on the best free
 * candidate now, or parks until a candidate frees. A freed slot is handed straight to one
 * designated waiter, so a fresh arrival can never take a slot a waiter is entitled to.
 * A backend in a GPU group also needs a free slot on its group; a slot freed on a group goes
 * to a waiter of any backend of the group (groups.ts).
 *
 * Pure logic: no I/O, time comes from the injected clock.
 */
export class Scheduler {
  private readonly clock: SchedulerOptions['clock'];
  private maxParked: number;
  private affinityMaxWaitMs: number;
  private onGroupSwitch: SchedulerOptions['onGroupSwitch'];
  private readonly backends = new Map<string, BackendSlots>();
  private readonly groups = new GroupTable();
  /** Backends of kind 'media' in the map: while 0, ordering skips the media check. */
  private mediaBackends = 0;
  /** Fair share between users and their leases out (`max_inflight`); the index reads it at hand-off. */
  private readonly fair = new FairShare();
  private readonly waiters = new WaiterIndex(this.fair);
  /** The waiter of each parked ticket, for `queuePosition`. */
  private readonly waiterOfTicket = new WeakMap<Ticket, Waiter>();
  private nextSeq = 1;

  constructor(opts: SchedulerOptions) {
    this.clock = opts.clock;
    this.maxParked = opts.maxParked;
    this.affinityMaxWaitMs = opts.affinityMaxWaitMs;
    this.onGroupSwitch = opts.onGroupSwitch;
  }

  /** Hot reload of the limits (and of the switch hook when given); waiters already parked stay parked. */
  configure(opts: Partial<Omit<SchedulerOptions, 'clock'>>): void {
    if (opts.maxParked !== undefined) this.maxParked = opts.maxParked;
    if (opts.affinityMaxWaitMs !== undefined) this.affinityMaxWaitMs = opts.affinityMaxWaitMs;
    if ('onGroupSwitch' in opts) this.onGroupSwitch = opts.onGroupSwitch;
  }

  /**
   * The GPU groups' caps (`gpu_groups`), replacing the previous ones; a group a backend names
   * but `groups` does not has cap 1. Leases out keep counting; free slots are handed out.
   */
  configureGroups(groups: Readonly<Record<string, GroupLimits>>): void {
    this.groups.configure(groups);
    this.handOffEverywhere();
  }

  /** Adds a backend or changes its cap / paid flag / availability / group, then hands out free slots. */
  upsertBackend(spec: BackendSlotSpec): void {
    let slots = this.backends.get(spec.name);
    if (slots) {
      if (kindOf(slots) === 'media') this.mediaBackends--;
      slots.spec = { ...spec };
      slots.removed = false;
    } else {
      slots = { spec: { ...spec }, inflight: 0, removed: false };
      this.backends.set(spec.name, slots);
    }
    if (kindOf(slots) === 'media') this.mediaBackends++;
    this.groups.assign(slots);
    this.handOffEverywhere();
  }

  /** Takes a backend out of routing. Leases already out stay valid and release harmlessly. */
  removeBackend(name: string): void {
    const slots = this.backends.get(name);
    if (!slots) return;
    if (slots.inflight > 0) slots.removed = true;
    else this.forget(slots);
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
    const user = userOf(ticket.user);
    const lease = this.takeFreeSlot(usable, user);
    if (lease) return Promise.resolve(lease);
    if (!(ticket.parkMs > 0)) {
      const busy = this.fair.canStart(user) ? 'every backend is busy' : `its caller has ${user.maxInflight} in flight`;
      return Promise.reject(new SchedulerRejection('parking_off', `${busy} for ${ticket.alias}`, 1));
    }
    if (this.waiters.size >= this.maxParked) {
      return Promise.reject(new SchedulerRejection('queue_full', `too many requests waiting (${this.maxParked})`, 2));
    }
    return this.park(ticket);
  }

  /**
   * Failover: a lease on the first free candidate in scheduler order whose backend is not in
   * `exclude`, or null. Never waits, and never takes a slot a waiter is entitled to. The lease
   * is charged to the call's user (`ticket.user`; absent = the anonymous one); null while that
   * user is at its cap.
   */
  tryAcquireNow(candidates: Candidate[], exclude: ReadonlySet<string>, ticket?: Pick<Ticket, 'user'>): Lease | null {
    const usable = this.order(candidates).filter((candidate) => !exclude.has(candidate.backend));
    return this.takeFreeSlot(usable, userOf(ticket?.user));
  }

  /**
   * Available candidates in scheduler order (busy ones included), for failover lists. When
   * every candidate is on a media backend they rank by seconds per job of their type key (the
   * generation alias), otherwise by tok/s (a media backend among LLM ones counts as unmeasured).
   * The tok/s path is the one of before media existed, so LLM calls pay nothing for it.
   */
  order(candidates: Candidate[]): Candidate[] {
    const usable = candidates.filter((candidate) => this.routable(candidate.backend) !== undefined);
    if (this.mediaBackends > 0 && usable.length > 1 && sortMediaCandidates(usable, this.slotsOf)) return usable;
    return usable.sort((a, b) => compareBackends(this.rank(a.backend), this.rank(b.backend)));
  }

  /**
   * Learns from one finished call (service-time.ts): decode and prefill rates and mean service
   * time of the backend, and of the sample's model there. Only status 200 counts; every such
   * call does, stream or not, short or long (short ones weigh less).
   */
  recordSpeed(backend: string, sample: SpeedSample): void {
    const slots = this.backends.get(backend);
    if (!slots || !countsAsCall(sample)) return;
    const figures = (slots.service ??= { samples: 0 });
    learnCall(figures, sample);
    slots.speed = figures.decodeRate;
    if (sample.model === undefined) return;
    const byModel = (slots.serviceByModel ??= new Map());
    let perModel = byModel.get(sample.model);
    if (!perModel) byModel.set(sample.model, (perModel = { samples: 0 }));
    learnCall(perModel, sample);
  }

  /**
   * Feeds the seconds-per-job EWMA (α 0.3, as for tok/s) of one type key (generation alias) on
   * a backend; what media candidates are ranked by. Ignored unless finite and > 0.
   */
  recordJobSeconds(backend: string, typeKey: string, seconds: number): void {
    const slots = this.backends.get(backend);
    if (!slots || !isJobSeconds(seconds)) return;
    const perKey = (slots.jobSeconds ??= new Map());
    perKey.set(typeKey, nextSpeed(perKey.get(typeKey), seconds));
  }

  hasParked(): boolean {
    return this.waiters.size > 0;
  }

  /**
   * Where a parked ticket stands: 1 + the older waiters that wait on any of its backends, or on
   * a backend of a GPU group one of its backends is in (they are served before it there), and
   * how long it has waited. Undefined when it is not parked. O(parked × backends): for
   * keep-alive comments every few seconds, not per request.
   */
  queuePosition(ticket: Ticket): { position: number; waitedMs: number } | undefined {
    const waiter = this.waiterOfTicket.get(ticket);
    if (!waiter || waiter.settled) return undefined;
    const position = positionOf(waiter, this.waiters.values(), (backend) => this.backends.get(backend)?.group);
    return { position, waitedMs: this.clock.now() - waiter.enqueuedAt };
  }

  snapshot(): SchedulerSnapshot {
    const now = this.clock.now();
    const backends = [...this.backends.values()].filter((slots) => !slots.removed).map(backendSnapshot);
    const parked = [...this.waiters.values()].map((waiter) => ({
      alias: waiter.alias,
      typeKeys: [...new Set([...waiter.typeKeysByBackend.values()].flat())],
      backends: [...waiter.typeKeysByBackend.keys()],
      ageMs: now - waiter.enqueuedAt,
      remainingMs: Math.max(0, waiter.deadline - now),
      ...(waiter.user === ANONYMOUS_USER ? {} : { user: waiter.user.key }),
    }));
    return { backends, parked, parkedByAlias: this.waiters.countsByAlias(), groups: this.groups.snapshot() };
  }

  private park(ticket: Ticket): Promise<Lease> {
    return new Promise<Lease>((resolve, reject) => {
      const enqueuedAt = this.clock.now();
      const waiter: Waiter = {
        seq: this.nextSeq++,
        alias: ticket.alias,
        user: userOf(ticket.user),
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
        const ahead = aheadByBackend(waiter, this.waiters.values(), (backend) => this.backends.get(backend)?.group);
        this.unpark(waiter);
        const message = `no backend for ${ticket.alias} freed within ${ticket.parkMs} ms`;
        reject(new SchedulerRejection('park_timeout', message, 2, ahead));
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

  /** First candidate (already in scheduler order) with a free slot, leased; null if none or `user` is at its cap. */
  private takeFreeSlot(ordered: readonly Candidate[], user: TicketUser): Lease | null {
    if (!this.fair.canStart(user)) return null;
    for (const candidate of ordered) {
      const slots = this.routable(candidate.backend);
      if (!slots || !hasFreeSlot(slots)) continue;
      const group = slots.group;
      if (group === undefined) {
        // Hand-offs happen the moment a slot frees, so a free slot with waiters should not
        // exist; if it ever does, the waiters are served first.
        if (this.waiters.hasWaitersFor(candidate.backend)) this.handOff(slots);
        if (hasFreeSlot(slots)) return this.grant(slots, candidate.model, 0, user);
      } else if (groupHasFreeSlot(group)) {
        // The same for a free group slot, which waiters of any backend of the group may take.
        this.handOffGroup(group);
        if (hasFreeSlot(slots) && groupHasFreeSlot(group)) return this.grant(slots, candidate.model, 0, user);
      }
    }
    return null;
  }

  /** Gives free slots of this (ungrouped) backend to designated waiters, one decision per slot. */
  private handOff(slots: BackendSlots): void {
    while (!slots.removed && slots.spec.available && hasFreeSlot(slots)) {
      const now = this.clock.now();
      const pick = this.waiters.designate(slots.spec.name, {
        lastTypeKey: slots.lastTypeKey, now, affinityMaxWaitMs: this.affinityMaxWaitMs,
      });
      if (!pick) return;
      // granted before unparked, so the user is never idle in between (fair-share.ts)
      const lease = this.grant(slots, pick.typeKey, now - pick.waiter.enqueuedAt, pick.waiter.user);
      this.unpark(pick.waiter);
      pick.waiter.resolve(lease);
    }
  }

  /**
   * Gives free slots of this group to designated waiters of its backends, one decision per
   * slot, while a backend of the group with a free slot of its own has one.
   */
  private handOffGroup(group: GroupSlots): void {
    while (groupHasFreeSlot(group)) {
      const now = this.clock.now();
      const pick = designateInGroup(group, this.waiters, now, this.affinityMaxWaitMs, compareMembers);
      if (!pick) return;
      const lease = this.grant(pick.slots, pick.typeKey, now - pick.waiter.enqueuedAt, pick.waiter.user);
      this.unpark(pick.waiter);
      pick.waiter.resolve(lease);
    }
  }

  private handOffEverywhere(): void {
    for (const slots of this.backends.values()) if (slots.group === undefined) this.handOff(slots);
    for (const group of this.groups.values()) this.handOffGroup(group);
  }

  private grant(slots: BackendSlots, typeKey: string, waitedMs: number, user: TicketUser): Lease {
    // fair share: the lease counts in flight for its user and is charged an estimate now
    const estimate = serviceEstimate(slots, typeKey);
    const grantedAt = this.clock.now();
    this.fair.granted(user, estimate);
    slots.inflight++;
    slots.lastTypeKey = typeKey;
    const group = slots.group;
    let switched: BackendKind | undefined;
    if (group !== undefined) {
      group.inflight++;
      const kind = kindOf(slots);
      if (group.lastKind !== undefined && group.lastKind !== kind) switched = group.lastKind;
      group.lastKind = kind;
    }
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      // fair share: charged what it held; a user below its cap again takes free slots where it waits
      const uncapped = this.fair.released(user.key, (this.clock.now() - grantedAt) / 1000, estimate);
      if (uncapped) this.handOffOn(this.waiters.backendsOf(user.key));
      slots.inflight--;
      if (group !== undefined) return this.releaseGrouped(slots, group);
      if (slots.removed) {
        if (slots.inflight === 0 && this.backends.get(slots.spec.name) === slots) this.forget(slots);
        return;
      }
      if (slots.group === undefined) this.handOff(slots);
      else this.handOffGroup(slots.group); // it joined a group while the lease was out
    };
    const lease = Object.freeze({ backend: slots.spec.name, model: typeKey, waitedMs, release });
    if (switched !== undefined) this.notifySwitch(group!.name, switched, kindOf(slots), slots.spec.name);
    return lease;
  }

  /** Hands off free slots of these backends (and of their groups). */
  private handOffOn(backends: readonly string[]): void {
    for (const backend of backends) {
      const slots = this.routable(backend);
      if (slots?.group === undefined) {
        if (slots) this.handOff(slots);
      } else this.handOffGroup(slots.group);
    }
  }

  /** A lease granted on `group` released: its slot there and on the backend go to waiters. */
  private releaseGrouped(slots: BackendSlots, group: GroupSlots): void {
    group.inflight--;
    if (slots.removed && slots.inflight === 0 && this.backends.get(slots.spec.name) === slots) this.forget(slots);
    this.handOffGroup(group);
    // The backend moved to another group (or out of groups) while the lease was out.
    if (!slots.removed && slots.group !== group) {
      if (slots.group) this.handOffGroup(slots.group);
      else this.handOff(slots);
    }
    this.groups.prune(group);
  }

  private notifySwitch(group: string, from: BackendKind, to: BackendKind, backend: string): void {
    const hook = this.onGroupSwitch;
    if (!hook) return;
    try {
      hook({ group, from, to, backend });
    } catch {
      // The hook only starts work; its failures are its own business.
    }
  }

  /** Drops a backend with no lease out. */
  private forget(slots: BackendSlots): void {
    if (kindOf(slots) === 'media') this.mediaBackends--;
    this.backends.delete(slots.spec.name);
    this.groups.leave(slots);
  }

  /** The backend's slots if it is known, in the fleet and available. */
  private routable(name: string): BackendSlots | undefined {
    const slots = this.backends.get(name);
    return slots && !slots.removed && slots.spec.available ? slots : undefined;
  }

  /** A known backend's slots (for the ordering of routable candidates). */
  private readonly slotsOf = (name: string): BackendSlots => this.backends.get(name)!;

  private rank(name: string): { paid: boolean; speed: number | undefined } {
    const slots = this.backends.get(name)!;
    return { paid: slots.spec.paid, speed: slots.speed };
  }
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
