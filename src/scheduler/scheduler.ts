import { parkedEtas, retryAfterFromEta, shownEta, waiterEta } from './eta.ts';
import { designateInGroup, GroupTable } from './groups.ts';
import { compareMembers, sortMediaCandidates } from './ordering.ts';
import { planParking, takeHeld, type ParkedCall, type ParkingRules } from './parking.ts';
import { compareScored, predict, runnableBeside, type Ranked, type Residency } from './prediction.ts';
import { backendSnapshot, groupHasFreeSlot, hasFreeSlot, kindOf, type BackendSlots, type GroupSlots } from './slots.ts';
import { NO_LOCAL_SLOT_ROUTE, paidAllowed, paidGate, parkedSpillRoute } from './spill.ts';
import { countsAsCall, learnCall } from './service-time.ts';
import { isJobSeconds, nextSpeed } from './speed.ts';
import {
  SchedulerRejection,
  type BackendKind,
  type BackendSlotSpec,
  type Candidate,
  type FleetView,
  type GroupLimits,
  type Lease,
  type SchedulerOptions,
  type SchedulerSnapshot,
  type SpeedSample,
  type Ticket,
} from './types.ts';
import { aheadByBackend, positionOf, typeKeysByBackend, WaiterIndex, type Waiter } from './waiters.ts';

/**
 * The one queue every call goes through. A call either gets a lease on the best free
 * candidate now, or parks until a candidate frees. A freed slot is handed straight to one
 * designated waiter, so a fresh arrival can never take a slot a waiter is entitled to.
 * A backend in a GPU group also needs a free slot on its group; a slot freed on a group goes
 * to a waiter of any backend of the group (groups.ts).
 *
 * Candidates rank by one score, the predicted time to first token (prediction.ts); a slot is
 * free for a call only if its model can start there now (resident, or the box idle). Paid
 * candidates follow the spill rule (spill.ts); a conversation sticks to its previous backend
 * within `affinityMaxWaitMs` of the best other; a ticket may park on part of its candidates and
 * widen onto the rest later (parking.ts).
 *
 * Pure logic: no I/O, time comes from the injected clock.
 */
export class Scheduler {
  private readonly clock: SchedulerOptions['clock'];
  private maxParked: number;
  private affinityMaxWaitMs: number;
  private onGroupSwitch: SchedulerOptions['onGroupSwitch'];
  private fleet: FleetView | undefined;
  private readonly backends = new Map<string, BackendSlots>();
  private readonly groups = new GroupTable();
  /** Backends of kind 'media' in the map: while 0, ordering skips the media check. */
  private mediaBackends = 0;
  private readonly waiters = new WaiterIndex();
  /** The waiter of each parked ticket, for `queuePosition`. */
  private readonly waiterOfTicket = new WeakMap<Ticket, ParkedCall>();
  private nextSeq = 1;

  constructor(opts: SchedulerOptions) {
    this.clock = opts.clock;
    this.maxParked = opts.maxParked;
    this.affinityMaxWaitMs = opts.affinityMaxWaitMs;
    this.onGroupSwitch = opts.onGroupSwitch;
    this.fleet = opts.fleet;
  }

  /** Hot reload of the limits (and of the switch hook when given); waiters already parked stay parked. */
  configure(opts: Partial<Omit<SchedulerOptions, 'clock'>>): void {
    if (opts.maxParked !== undefined) this.maxParked = opts.maxParked;
    if (opts.affinityMaxWaitMs !== undefined) this.affinityMaxWaitMs = opts.affinityMaxWaitMs;
    if ('onGroupSwitch' in opts) this.onGroupSwitch = opts.onGroupSwitch;
    if ('fleet' in opts) this.fleet = opts.fleet;
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
   * on a backend the ticket already had are not added either. Paid backends are added only to a
   * ticket whose paid gate is open; stickiness does not hold refreshed ones back. A refresh that throws (or
   * returns a non-array) counts as no candidates. O(parked × their candidates), plus an
   * O(queue length) insert for each backend a ticket gains: for model-list changes, not for
   * every request.
   */
  refreshCandidates(): void {
    // A copy: a refresh may settle waiters (an abort) or park new ones.
    for (const waiter of [...this.waiters.values()] as ParkedCall[]) {
      if (waiter.settled || !waiter.refresh) continue;
      const fresh = refreshedCandidates(waiter.refresh);
      this.waiters.widen(waiter, waiter.paidOpen ? fresh : fresh.filter((c) => !this.isPaid(c.backend)));
    }
    this.handOffEverywhere();
  }

  /**
   * A lease on the best free candidate now, or one handed over later while parked. Rejects with
   * a SchedulerRejection: 'no_backend' (no candidate is a known, available backend; never
   * parks), 'paid_budget' (only paid candidates and the paid gate is closed; never parks),
   * 'parking_off', 'queue_full', 'park_timeout' or 'aborted'.
   */
  acquire(ticket: Ticket): Promise<Lease> {
    if (ticket.signal?.aborted) return Promise.reject(aborted());
    const ranked = this.rank(ticket.candidates, ticket.promptTokens);
    if (ranked.length === 0) {
      return Promise.reject(new SchedulerRejection('no_backend', `no available backend serves ${ticket.alias}`));
    }
    const unpaid = ranked[ranked.length - 1].paid ? ranked.filter((r) => !r.paid) : ranked;
    const hasUnpaid = unpaid.length > 0 || ticket.candidates.some((c) => !this.isPaid(c.backend));
    if (!hasUnpaid && !paidAllowed(ticket)) {
      const message = `the paid budget allows no more calls to the paid backends serving ${ticket.alias}`;
      return Promise.reject(new SchedulerRejection('paid_budget', message));
    }
    const sticky = this.stickyPick(ticket, unpaid);
    if (sticky?.prediction.freeNow) {
      const lease = this.takeFreeSlot([sticky], 'sticky');
      if (lease) return Promise.resolve(lease);
    }
    // the conversation's box frees soon enough while another is free now: wait for it alone (parking.ts)
    const stickyOnly = sticky !== undefined && !sticky.prediction.freeNow && ticket.parkMs > 0
      && this.waiters.size < this.maxParked && unpaid.some((r) => r.prediction.freeNow);
    const lease = stickyOnly ? null : this.takeFreeSlot(unpaid);
    if (lease) return Promise.resolve(lease);
    // also without a paid candidate now: the gate decides whether paid ones a refresh brings are waited on
    const gate = stickyOnly ? { open: false } : paidGate(ticket, unpaid[0]?.prediction, hasUnpaid);
    const paidLease = gate.open && unpaid.length < ranked.length ? this.takeFreeSlot(ranked.slice(unpaid.length), gate.route) : null;
    if (paidLease) return Promise.resolve(paidLease);
    if (!(ticket.parkMs > 0)) {
      return Promise.reject(new SchedulerRejection('parking_off', `every backend for ${ticket.alias} is busy`, 1));
    }
    if (this.waiters.size >= this.maxParked) {
      return Promise.reject(new SchedulerRejection('queue_full', `too many requests waiting (${this.maxParked})`, 2));
    }
    return this.park(ticket, { paidOpen: gate.open, paidRoute: gate.route, sticky: sticky?.candidate.backend, stickyOnly });
  }

  /**
   * Failover: a lease on the first free candidate in scheduler order whose backend is not in
   * `exclude`, or null. Never waits, and never takes a slot a waiter is entitled to. Paid
   * candidates follow the spill rule of `ticket` (absent: paid when no unpaid one is free).
   */
  tryAcquireNow(
    candidates: Candidate[], exclude: ReadonlySet<string>, ticket?: Pick<Ticket, 'promptTokens' | 'spillAfterMs' | 'paidAllowed'>,
  ): Lease | null {
    const ranked = this.rank(candidates.filter((c) => !exclude.has(c.backend)), ticket?.promptTokens);
    const firstPaid = ranked.findIndex((r) => r.paid);
    const unpaid = firstPaid < 0 ? ranked : ranked.slice(0, firstPaid);
    const lease = this.takeFreeSlot(unpaid);
    if (lease || firstPaid < 0) return lease;
    const gate = paidGate(ticket ?? {}, unpaid[0]?.prediction, unpaid.length > 0);
    return gate.open ? this.takeFreeSlot(ranked.slice(firstPaid), gate.route) : null;
  }

  /**
   * Available candidates in scheduler order (busy ones included), for failover lists: by the
   * score (prediction.ts) for a call of `promptTokens`, unpaid first. When every candidate is on
   * a media backend they rank by seconds per job of their type key (the generation alias).
   */
  order(candidates: Candidate[], promptTokens?: number): Candidate[] {
    return this.rank(candidates, promptTokens).map((r) => r.candidate);
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
   * a backend of a GPU group one of its backends is in (they are served before it there), how
   * long it has waited, and its ETA: predicted seconds until it gets a slot (and its model
   * loaded), the best over its backends behind the calls parked ahead of it there. Undefined
   * when it is not parked. O(parked × backends): for keep-alive comments every few seconds.
   */
  queuePosition(ticket: Ticket): { position: number; waitedMs: number; etaS?: number } | undefined {
    const waiter = this.waiterOfTicket.get(ticket);
    if (!waiter || waiter.settled) return undefined;
    const position = positionOf(waiter, this.waiters.values(), (backend) => this.backends.get(backend)?.group);
    const etaS = waiterEta(waiter, (backend) => this.waiters.aheadOn(backend, waiter), this.estimateWait);
    const where = { position, waitedMs: this.clock.now() - waiter.enqueuedAt };
    return etaS === undefined ? where : { ...where, etaS: shownEta(etaS) };
  }

  /** The scheduler's state; parked calls carry their user, and the oldest SNAPSHOT_ETA_LIMIT an ETA. */
  snapshot(): SchedulerSnapshot {
    const now = this.clock.now();
    const backends = [...this.backends.values()].filter((slots) => !slots.removed).map(backendSnapshot);
    const etas = parkedEtas(this.waiters.values(), this.estimateWait);
    const parked = [...this.waiters.values()].map((waiter) => {
      const user = (waiter as ParkedCall).ticket.user?.key;
      const eta = etas.get(waiter);
      return {
        alias: waiter.alias,
        typeKeys: [...new Set([...waiter.typeKeysByBackend.values()].flat())],
        backends: [...waiter.typeKeysByBackend.keys()],
        ageMs: now - waiter.enqueuedAt,
        remainingMs: Math.max(0, waiter.deadline - now),
        ...(eta === undefined ? {} : { etaS: shownEta(eta) }),
        ...(user === undefined ? {} : { user }),
      };
    });
    return { backends, parked, parkedByAlias: this.waiters.countsByAlias(), groups: this.groups.snapshot() };
  }

  private park(ticket: Ticket, rules: ParkingRules & { paidRoute?: string }): Promise<Lease> {
    const plan = planParking(ticket.candidates, (backend) => this.isPaid(backend), rules);
    return new Promise<Lease>((resolve, reject) => {
      const enqueuedAt = this.clock.now();
      const waiter: ParkedCall = {
        seq: this.nextSeq++,
        alias: ticket.alias,
        enqueuedAt,
        deadline: enqueuedAt + ticket.parkMs,
        typeKeysByBackend: typeKeysByBackend(plan.queues),
        refresh: ticket.refresh,
        resolve,
        reject,
        settled: false,
        timer: undefined,
        ticket,
        paidOpen: rules.paidOpen,
        paidRoute: rules.paidRoute,
        sticky: rules.sticky,
        heldUnpaid: plan.heldUnpaid,
        heldPaid: plan.heldPaid,
        widenTimers: [],
      };
      waiter.timer = this.clock.setTimeout(() => {
        const ahead = aheadByBackend(waiter, this.waiters.values(), (backend) => this.backends.get(backend)?.group);
        const eta = waiterEta(waiter, (backend) => ahead.byBackend.get(backend) ?? 0, this.estimateWait);
        this.unpark(waiter);
        const message = `no backend for ${ticket.alias} freed within ${ticket.parkMs} ms`;
        reject(new SchedulerRejection('park_timeout', message, retryAfterFromEta(eta), ahead));
      }, ticket.parkMs);
      this.setWidenTimers(waiter);
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

  /**
   * The timers that widen a parked call onto its held-back candidates (parking.ts): the other
   * unpaid ones after `affinityMaxWaitMs` (stickiness); the paid ones at `spillAfterMs` if its
   * paid gate allows them then. Only those due before its wait ends.
   */
  private setWidenTimers(waiter: ParkedCall): void {
    const { ticket } = waiter;
    const spillMs = ticket.spillAfterMs ?? 0;
    if (waiter.heldUnpaid.length > 0 && this.affinityMaxWaitMs < ticket.parkMs) {
      waiter.widenTimers.push(this.clock.setTimeout(() => {
        this.widen(waiter, takeHeld(waiter, 'unpaid'));
        // today's rule (spill 0): paid candidates are waited on once no unpaid one could start
        if (!(spillMs > 0)) this.openPaid(waiter, NO_LOCAL_SLOT_ROUTE);
      }, this.affinityMaxWaitMs));
    }
    if (waiter.heldPaid.length > 0 && spillMs > 0 && spillMs < ticket.parkMs) {
      waiter.widenTimers.push(this.clock.setTimeout(() => {
        this.openPaid(waiter, parkedSpillRoute(this.clock.now() - waiter.enqueuedAt, spillMs));
      }, spillMs));
    }
  }

  /** A parked call's paid candidates join its queues, if it is still parked and its paid gate allows them now. */
  private openPaid(waiter: ParkedCall, route: string): void {
    if (waiter.settled || waiter.heldPaid.length === 0 || !paidAllowed(waiter.ticket)) return;
    waiter.paidOpen = true;
    waiter.paidRoute = route;
    this.widen(waiter, takeHeld(waiter, 'paid'));
  }

  /** The parked call also waits on `candidates` now; free slots there are handed off at once. */
  private widen(waiter: ParkedCall, candidates: Candidate[]): void {
    for (const backend of this.waiters.widen(waiter, candidates)) {
      const slots = this.routable(backend);
      if (!slots) continue;
      if (slots.group === undefined) this.handOff(slots);
      else this.handOffGroup(slots.group);
    }
  }

  /** Takes the waiter out of the queues and drops its timers and abort listener. */
  private unpark(waiter: ParkedCall): void {
    this.waiters.remove(waiter);
    this.clock.clearTimeout(waiter.timer);
    for (const timer of waiter.widenTimers) this.clock.clearTimeout(timer);
    waiter.detachAbort?.();
  }

  /**
   * First candidate (already in scheduler order) with a free slot its model can use now, leased
   * with `route`; null if none.
   */
  private takeFreeSlot(ordered: readonly Ranked[], route?: string): Lease | null {
    for (const { slots, candidate } of ordered) {
      if (!hasFreeSlot(slots)) continue;
      const group = slots.group;
      if (group === undefined) {
        // Waiters are served first: a free slot with waiters exists only when none of them
        // can use it now (their model is not loaded on this busy box).
        if (this.waiters.hasWaitersFor(candidate.backend)) this.handOff(slots);
        if (this.canStart(slots, candidate.model)) return this.grant(slots, candidate.model, 0, route);
      } else if (groupHasFreeSlot(group)) {
        // The same for a free group slot, which waiters of any backend of the group may take.
        this.handOffGroup(group);
        if (this.canStart(slots, candidate.model) && groupHasFreeSlot(group)) {
          return this.grant(slots, candidate.model, 0, route);
        }
      }
    }
    return null;
  }

  /**
   * Gives free slots of this (ungrouped) backend to designated waiters, one decision per slot.
   * On a busy box only a waiter whose model can start beside the running calls is designated
   * (unless overdue); the slot stays free otherwise, until the box drains.
   */
  private handOff(slots: BackendSlots): void {
    while (!slots.removed && slots.spec.available && hasFreeSlot(slots)) {
      const now = this.clock.now();
      const runnable = this.fleet && slots.inflight > 0 ? this.runnableOn(slots) : undefined;
      const pick = this.waiters.designate(slots.spec.name, {
        lastTypeKey: slots.lastTypeKey, now, affinityMaxWaitMs: this.affinityMaxWaitMs, runnable,
      });
      if (!pick) return;
      this.grantParked(pick.waiter as ParkedCall, slots, pick.typeKey, now);
    }
  }

  /**
   * Gives free slots of this group to designated waiters of its backends, one decision per
   * slot, while a backend of the group with a free slot of its own has one.
   */
  private handOffGroup(group: GroupSlots): void {
    while (groupHasFreeSlot(group)) {
      const now = this.clock.now();
      const runnable = this.fleet ? this.runnableInGroup : undefined;
      const pick = designateInGroup(group, this.waiters, now, this.affinityMaxWaitMs, compareMembers, runnable);
      if (!pick) return;
      this.grantParked(pick.waiter as ParkedCall, pick.slots, pick.typeKey, now);
    }
  }

  /** Hands a slot to a parked call: a paid one says why it spilled, the conversation's box 'sticky'. */
  private grantParked(waiter: ParkedCall, slots: BackendSlots, typeKey: string, now: number): void {
    this.unpark(waiter);
    const route = slots.spec.paid ? waiter.paidRoute : waiter.sticky === slots.spec.name ? 'sticky' : undefined;
    waiter.resolve(this.grant(slots, typeKey, now - waiter.enqueuedAt, route));
  }

  private handOffEverywhere(): void {
    for (const slots of this.backends.values()) if (slots.group === undefined) this.handOff(slots);
    for (const group of this.groups.values()) this.handOffGroup(group);
  }

  private grant(slots: BackendSlots, typeKey: string, waitedMs: number, route?: string): Lease {
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
      slots.inflight--;
      if (group !== undefined) return this.releaseGrouped(slots, group);
      if (slots.removed) {
        if (slots.inflight === 0 && this.backends.get(slots.spec.name) === slots) this.forget(slots);
        return;
      }
      if (slots.group === undefined) this.handOff(slots);
      else this.handOffGroup(slots.group); // it joined a group while the lease was out
    };
    const lease = Object.freeze({ backend: slots.spec.name, model: typeKey, waitedMs, route, release });
    if (switched !== undefined) this.notifySwitch(group!.name, switched, kindOf(slots), slots.spec.name);
    return lease;
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

  /** Whether a backend is known to be paid (an unknown one is not, until it joins). */
  private isPaid(name: string): boolean {
    return this.backends.get(name)?.spec.paid === true;
  }

  /**
   * Routable candidates with their scores, in scheduler order: by `compareScored`, or, when all
   * are on media backends, by seconds per job (ordering.ts). O(candidates), no per-waiter work.
   */
  private rank(candidates: readonly Candidate[], promptTokens: number | undefined): Ranked[] {
    const usable = candidates.filter((candidate) => this.routable(candidate.backend) !== undefined);
    const media = this.mediaBackends > 0 && usable.length > 1 && sortMediaCandidates(usable, this.slotsOf);
    const ranked = usable.map((candidate): Ranked => {
      const slots = this.slotsOf(candidate.backend);
      const queued = this.waiters.queuedOn(candidate.backend);
      const prediction = predict(slots, candidate.model, promptTokens, this.residencyOf(slots, candidate.model), queued);
      return { candidate, slots, paid: slots.spec.paid, speed: slots.speed, prediction };
    });
    return media ? ranked : ranked.sort(compareScored);
  }

  /**
   * The conversation's previous backend (`stickTo`) among the unpaid candidates, when its
   * prediction is within `affinityMaxWaitMs` of the best other's; else undefined.
   */
  private stickyPick(ticket: Ticket, unpaid: readonly Ranked[]): Ranked | undefined {
    const name = ticket.stickTo;
    if (name === undefined) return undefined;
    let own: Ranked | undefined;
    let bestOther = Infinity;
    for (const r of unpaid) {
      if (r.candidate.backend !== name) bestOther = Math.min(bestOther, r.prediction.total);
      else own ??= r;
    }
    return own && own.prediction.total <= bestOther + this.affinityMaxWaitMs / 1000 ? own : undefined;
  }

  /** What the fleet view says of `model` there, and of the box's latest lease's model when another one runs. */
  private residencyOf(slots: BackendSlots, model: string): Residency {
    const fleet = this.fleet;
    if (!fleet) return UNKNOWN_RESIDENCY;
    const name = slots.spec.name;
    const last = slots.lastTypeKey;
    const other = last !== undefined && last !== model && slots.inflight > 0;
    return { model: fleet.isResident(name, model), lastTypeKey: other ? fleet.isResident(name, last) : undefined };
  }

  /** Whether a call for `model` can start on the box now: a free slot, and its model can run beside the others. */
  private canStart(slots: BackendSlots, model: string): boolean {
    return hasFreeSlot(slots) && runnableBeside(slots, model, this.residencyOf(slots, model));
  }

  private runnableOn(slots: BackendSlots): (typeKey: string) => boolean {
    return (typeKey) => runnableBeside(slots, typeKey, this.residencyOf(slots, typeKey));
  }

  private readonly runnableInGroup = (slots: BackendSlots, typeKey: string): boolean =>
    runnableBeside(slots, typeKey, this.residencyOf(slots, typeKey));

  /** Seconds until a slot for `typeKey` frees on `backend` behind `ahead` parked calls (and its load). */
  private readonly estimateWait = (backend: string, typeKey: string, ahead: number): number | undefined => {
    const slots = this.routable(backend);
    if (!slots || slots.service?.serviceSeconds === undefined) return undefined; // no guess shown as a forecast
    const prediction = predict(slots, typeKey, undefined, this.residencyOf(slots, typeKey), ahead);
    return prediction.slotWait + prediction.swap;
  };
}

const UNKNOWN_RESIDENCY: Residency = Object.freeze({ model: undefined, lastTypeKey: undefined });

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
