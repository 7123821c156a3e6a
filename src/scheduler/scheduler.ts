import { parkedEtas, shownEta, waiterEta } from './eta.ts';
import { FairShare, userOf } from './fair-share.ts';
import { GroupTable } from './groups.ts';
import { grantParked, handOff, handOffGroup, handOffOn, takeFreeSlot, type HandOffContext } from './hand-off.ts';
import { grantLease, type LeaseDeskContext } from './lease-desk.ts';
import { FleetScore, stickyPick } from './fleet-score.ts';
import { abortedRejection, ParkingLot, parkedSnapshot, refreshedCandidates, type ParkedCall } from './parking.ts';
import { backendSnapshot, hasFreeSlot, kindOf, occupied, type BackendSlots } from './slots.ts';
import { paidAllowed, paidBudgetRejection, paidGate } from './spill.ts';
import { learnJobSeconds } from './learning.ts';
import { learnSpeed } from './learn-speed.ts';
import { swapSecondsFor } from './swap-cost.ts';
import {
  SchedulerRejection,
  type BackendSlotSpec,
  type Candidate,
  type FailoverTicket,
  type GroupLimits,
  type Lease,
  type ParkedPlace,
  type QueuePosition,
  type SchedulerOptions,
  type SchedulerSnapshot,
  type SpeedSample,
  type Ticket,
} from './types.ts';
import { positionOf, WaiterIndex } from './waiters.ts';

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
  private readonly backends = new Map<string, BackendSlots>();
  private readonly groups = new GroupTable();
  /** Backends of kind 'media' in the map: while 0, ordering skips the media check. */
  private mediaBackends = 0;
  /** Fair share between users and their leases out (`max_inflight`); the index reads it at hand-off. */
  private readonly fair = new FairShare();
  private readonly waiters = new WaiterIndex(this.fair);
  private readonly parking: ParkingLot;
  private readonly score: FleetScore;
  private readonly desk: LeaseDeskContext;
  private readonly hand: HandOffContext;

  constructor(opts: SchedulerOptions) {
    this.clock = opts.clock;
    this.maxParked = opts.maxParked;
    this.affinityMaxWaitMs = opts.affinityMaxWaitMs;
    this.onGroupSwitch = opts.onGroupSwitch;
    this.score = new FleetScore(
      {
        routable: (name) => this.routable(name),
        queuedOn: (name) => this.waiters.queuedOn(name),
        mediaBackends: () => this.mediaBackends,
      },
      opts.fleet,
    );
    this.parking = new ParkingLot({
      clock: this.clock,
      waiters: this.waiters,
      affinityMaxWaitMs: () => this.affinityMaxWaitMs,
      isPaid: (backend) => this.isPaid(backend),
      groupOf: (backend) => this.backends.get(backend)?.group,
      estimateWait: this.score.estimateWait,
      handOffOn: (backends) => handOffOn(this.hand, backends),
      overrunning: (backend) => this.score.overrunning(backend, this.clock.now()),
      freeSlotsOn: (backend) => {
        const slots = this.routable(backend);
        return slots && (slots.spec.cap === 0 ? Infinity : Math.max(0, slots.spec.cap - occupied(slots)));
      },
    });
    this.desk = {
      clock: this.clock,
      fair: this.fair,
      backendsOf: (user) => this.waiters.backendsOf(user),
      handOff: (slots) => handOff(this.hand, slots),
      handOffGroup: (group) => handOffGroup(this.hand, group),
      handOffOn: (backends) => handOffOn(this.hand, backends),
      forgetIfDrained: (slots) => {
        if (slots.inflight === 0 && this.backends.get(slots.spec.name) === slots) this.forget(slots);
      },
      pruneGroup: (group) => this.groups.prune(group),
      onGroupSwitch: () => this.onGroupSwitch,
    };
    this.hand = {
      clock: this.clock,
      fair: this.fair,
      waiters: this.waiters,
      score: this.score,
      parking: this.parking,
      affinityMaxWaitMs: () => this.affinityMaxWaitMs,
      routable: (name) => this.routable(name),
      grant: (slots, typeKey, waitedMs, user, route) => grantLease(this.desk, slots, typeKey, waitedMs, user, route),
    };
  }

  /** Hot reload of the limits (and of the switch hook when given); waiters already parked stay parked. */
  configure(opts: Partial<Omit<SchedulerOptions, 'clock'>>): void {
    if (opts.maxParked !== undefined) this.maxParked = opts.maxParked;
    if (opts.affinityMaxWaitMs !== undefined) this.affinityMaxWaitMs = opts.affinityMaxWaitMs;
    if ('onGroupSwitch' in opts) this.onGroupSwitch = opts.onGroupSwitch;
    if ('fleet' in opts) this.score.fleet = opts.fleet;
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
    if (ticket.signal?.aborted) return Promise.reject(abortedRejection());
    const ranked = this.score.rank(ticket.candidates, ticket.promptTokens);
    if (ranked.length === 0) {
      if (ticket.parkWhileDown) return this.parkWhileDown(ticket);
      return Promise.reject(new SchedulerRejection('no_backend', `no available backend serves ${ticket.alias}`));
    }
    const unpaid = ranked[ranked.length - 1].paid ? ranked.filter((r) => !r.paid) : ranked;
    const hasUnpaid = unpaid.length > 0 || ticket.candidates.some((c) => !this.isPaid(c.backend));
    if (!hasUnpaid && !paidAllowed(ticket)) return Promise.reject(paidBudgetRejection(ticket.alias));
    const user = userOf(ticket.user);
    const sticky = stickyPick(ticket.stickTo, unpaid, this.affinityMaxWaitMs / 1000);
    const stickyLease = sticky?.prediction.freeNow ? takeFreeSlot(this.hand, [sticky], user, 'sticky') : null;
    if (stickyLease) return Promise.resolve(stickyLease);
    // the conversation's box frees soon enough while another is free now: wait for it alone (parking.ts)
    const stickyOnly =
      sticky !== undefined &&
      !sticky.prediction.freeNow &&
      ticket.parkMs > 0 &&
      this.waiters.size < this.maxParked &&
      unpaid.some((r) => r.prediction.freeNow);
    const lease = stickyOnly ? null : takeFreeSlot(this.hand, unpaid, user);
    if (lease) return Promise.resolve(lease);
    // also without a paid candidate now: the gate decides whether paid ones a refresh brings are waited on
    const canPark = ticket.parkMs > 0 && this.waiters.size < this.maxParked;
    const gate = stickyOnly ? { open: false } : paidGate(ticket, unpaid, hasUnpaid, canPark);
    const paid = gate.open && unpaid.length < ranked.length ? ranked.slice(unpaid.length) : [];
    const paidLease = takeFreeSlot(this.hand, paid, user, gate.route);
    if (paidLease) return Promise.resolve(paidLease);
    if (!(ticket.parkMs > 0)) {
      const busy = this.fair.canStart(user) ? 'every backend is busy' : `its caller has ${user.maxInflight} in flight`;
      return Promise.reject(new SchedulerRejection('parking_off', `${busy} for ${ticket.alias}`, 1));
    }
    if (this.waiters.size >= this.maxParked) {
      return Promise.reject(new SchedulerRejection('queue_full', `too many requests waiting (${this.maxParked})`, 2));
    }
    const stickTo = sticky?.candidate.backend;
    return this.parking.park(ticket, { paidOpen: gate.open, paidRoute: gate.route, sticky: stickTo, stickyOnly });
  }

  /**
   * Failover: a lease on the first free candidate in scheduler order whose backend is not in
   * `exclude`, or null. Never waits, and never takes a slot a waiter is entitled to. Paid
   * candidates follow the spill rule of `ticket` (absent: paid when no unpaid one is free).
   */
  tryAcquireNow(candidates: Candidate[], exclude: ReadonlySet<string>, ticket?: FailoverTicket): Lease | null {
    const ranked = this.score.rank(
      candidates.filter((c) => !exclude.has(c.backend)),
      ticket?.promptTokens,
    );
    const firstPaid = ranked.findIndex((r) => r.paid);
    const unpaid = firstPaid < 0 ? ranked : ranked.slice(0, firstPaid);
    const user = userOf(ticket?.user);
    const lease = takeFreeSlot(this.hand, unpaid, user);
    if (lease || firstPaid < 0) return lease;
    const gate = paidGate(ticket ?? {}, unpaid, unpaid.length > 0);
    return gate.open ? takeFreeSlot(this.hand, ranked.slice(firstPaid), user, gate.route) : null;
  }

  /**
   * Available candidates in scheduler order (busy ones included), for failover lists: by the
   * score (prediction.ts) for a call of `promptTokens`, unpaid first. When every candidate is on
   * a media backend they rank by seconds per job of their type key (the generation alias).
   */
  order(candidates: Candidate[], promptTokens?: number): Candidate[] {
    return this.score.rank(candidates, promptTokens).map((r) => r.candidate);
  }

  /**
   * Learns from one finished call (learn-speed.ts): decode and prefill rates and mean service
   * time of the backend and of the sample's model there, and the model's swap cost when the call
   * needed a load. Only status 200 counts; every such call does, stream or not, short or long.
   */
  recordSpeed(backend: string, sample: SpeedSample): void {
    const slots = this.backends.get(backend);
    if (slots) learnSpeed(slots, sample);
  }

  /** Learnt swap seconds of `model` on `backend`, else its mean over models (swap-cost.ts); O(1). */
  swapSecondsOf(backend: string, model: string): number | undefined {
    const slots = this.backends.get(backend);
    return slots && swapSecondsFor(slots, model);
  }

  /**
   * Cluster mode: the slots other gateways hold on `backend` now (cluster/scheduler.ts), counted
   * as in use here. Fewer than before: the freed ones are handed to waiters at once.
   */
  setExternal(backend: string, slotsElsewhere: number, handOut = true): void {
    const slots = this.backends.get(backend);
    if (!slots || slots.external === slotsElsewhere) return;
    const freed = slotsElsewhere < (slots.external ?? 0);
    slots.external = slotsElsewhere;
    if (freed && handOut) handOffOn(this.hand, [backend]);
  }

  /** The ticket's place in line while it is parked. */
  parkedPlace(ticket: Ticket): ParkedPlace | undefined {
    const call = this.parking.callOf(ticket);
    return call && { seq: call.seq, enqueuedAt: call.enqueuedAt };
  }

  /** A place in line by arrival now, for a call that may park later (cluster mode). */
  placeNow(): ParkedPlace {
    return { seq: this.parking.reserveSeq(), enqueuedAt: this.clock.now() };
  }

  /**
   * Hands a free slot of `backend` to this parked ticket, whoever is first in the local line
   * (cluster mode: the shared line says it is entitled). False when it is not parked there or
   * no slot is free. O(1) plus the grant.
   */
  grantTo(ticket: Ticket, backend: string): boolean {
    const call = this.parking.callOf(ticket);
    const slots = this.routable(backend);
    const typeKey = call?.typeKeysByBackend.get(backend)?.[0];
    if (!call || !slots || typeKey === undefined || slots.group !== undefined || !hasFreeSlot(slots)) return false;
    grantParked(this.hand, call, slots, typeKey, this.clock.now());
    return true;
  }

  /** The backend's slot cap (0 = unlimited); undefined for one not in the fleet. O(1). */
  capOf(backend: string): number | undefined {
    return this.backends.get(backend)?.spec.cap;
  }

  /** Leases out on `backend` now (0 for one not in the fleet). O(1). */
  inflightOf(backend: string): number {
    return this.backends.get(backend)?.inflight ?? 0;
  }

  /**
   * Feeds the seconds-per-job EWMA (α 0.3, as for tok/s) of one type key (generation alias) on
   * a backend; what media candidates are ranked by. Ignored unless finite and > 0.
   */
  recordJobSeconds(backend: string, typeKey: string, seconds: number): void {
    const slots = this.backends.get(backend);
    if (slots) learnJobSeconds(slots, typeKey, seconds);
  }

  /** Live waiters parked on `backend` (for idle_sleep: nothing may wait for a box put to sleep). O(1). */
  parkedOn(backend: string): number {
    return this.waiters.queuedOn(backend);
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
  queuePosition(ticket: Ticket): QueuePosition | undefined {
    const waiter = this.parking.callOf(ticket);
    if (!waiter) return undefined;
    const groupOf = (backend: string) => this.backends.get(backend)?.group;
    const position = positionOf(waiter, this.waiters.values(), groupOf, (user) => this.fair.virtualTime(user));
    const etaS = waiterEta(waiter, (backend) => this.waiters.aheadOn(backend, waiter), this.score.estimateWait);
    const where = { position, waitedMs: this.clock.now() - waiter.enqueuedAt };
    return etaS === undefined ? where : { ...where, etaS: shownEta(etaS) };
  }

  /** The scheduler's state; parked calls carry their user, and the oldest SNAPSHOT_ETA_LIMIT an ETA. */
  snapshot(): SchedulerSnapshot {
    const now = this.clock.now();
    const backends = [...this.backends.values()].filter((slots) => !slots.removed).map(backendSnapshot);
    const etas = parkedEtas(this.waiters.values(), this.score.estimateWait);
    const parked = [...this.waiters.values()].map((w) => parkedSnapshot(w as ParkedCall, now, etas.get(w)));
    return { backends, parked, parkedByAlias: this.waiters.countsByAlias(), groups: this.groups.snapshot() };
  }

  /** A ticket none of whose candidates is routable parks for them (a box being woken); `parkWhileDown`. */
  private parkWhileDown(ticket: Ticket): Promise<Lease> {
    const hasUnpaid = ticket.candidates.some((c) => !this.isPaid(c.backend));
    if (!hasUnpaid && !paidAllowed(ticket)) return Promise.reject(paidBudgetRejection(ticket.alias));
    if (!(ticket.parkMs > 0) || this.waiters.size >= this.maxParked) {
      return Promise.reject(new SchedulerRejection('queue_full', `too many requests waiting (${this.maxParked})`, 2));
    }
    const gate = paidGate(ticket, [], hasUnpaid);
    return this.parking.park(ticket, { paidOpen: gate.open, paidRoute: gate.route, stickyOnly: false });
  }

  private handOffEverywhere(): void {
    for (const slots of this.backends.values()) if (slots.group === undefined) handOff(this.hand, slots);
    for (const group of this.groups.values()) handOffGroup(this.hand, group);
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

  /** Whether a backend is known to be paid (an unknown one is not, until it joins). */
  private isPaid(name: string): boolean {
    return this.backends.get(name)?.spec.paid === true;
  }
}
