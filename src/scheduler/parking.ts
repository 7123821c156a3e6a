/**
 * Where a ticket parks. Its queues hold the candidates it may take now; the rest are held back
 * and joined later by a timer (`WaiterIndex.widen`):
 * - paid candidates while its paid gate is closed (spill.ts): joined at `spillAfterMs` of
 *   parking if the gate allows paid use then;
 * - with stickiness, when the conversation's busy backend is predicted to free within the margin
 *   while another is free now: the other unpaid candidates, joined after `affinityMaxWaitMs` (at
 *   most half its wait).
 * `ParkingLot` parks tickets in the scheduler's WaiterIndex and owns every timer of a parked
 * call: its deadline and its widen timers, all cleared on every way out (grant, timeout, abort).
 */
import type { Clock } from './clock.ts';
import { userOf } from './fair-share.ts';
import { retryAfterFromEta, shownEta, waiterEta, type WaitEstimate } from './eta.ts';
import { NO_LOCAL_SLOT_ROUTE, paidAllowed, parkedSpillRoute } from './spill.ts';
import { SchedulerRejection, type Candidate, type Lease, type ParkedTicketSnapshot, type Ticket } from './types.ts';
import { aheadByBackend, typeKeysByBackend, type Waiter, type WaiterIndex } from './waiters.ts';

/** A parked ticket, with what the scheduler keeps beside the queues. */
export interface ParkedCall extends Waiter {
  readonly ticket: Ticket;
  /** Whether its paid candidates are in its queues (its paid gate was open, or opened). */
  paidOpen: boolean;
  /** `Lease.route` of a paid lease it gets. */
  paidRoute?: string;
  /** The conversation's backend, when stickiness counted: a lease there says 'sticky'. */
  readonly sticky?: string;
  /** Unpaid candidates held back by stickiness; joined by the first widen timer. */
  heldUnpaid: Candidate[];
  /** Paid candidates held back by the closed gate; joined by the spill timer. */
  heldPaid: Candidate[];
  /** Timers that widen it (cleared when it settles, whichever way). */
  widenTimers: unknown[];
  /** The spill timer now armed (one at a time: a look again replaces the one that fired). */
  spillTimer?: unknown;
}

/** Its queues now and what is held back. */
export interface ParkingPlan {
  /** Sticky backend first, then candidate order. */
  queues: Candidate[];
  heldUnpaid: Candidate[];
  heldPaid: Candidate[];
}

/** How the ticket parks: whether paid candidates may be waited on, and how stickiness holds it. */
export interface ParkingRules {
  paidOpen: boolean;
  /** The sticky backend, when stickiness counted. */
  sticky?: string;
  /** Wait on the sticky backend only for now (another is free, the sticky one will be soon enough). */
  stickyOnly: boolean;
}

/** Splits a ticket's candidates by `rules`; `isPaid` is false for a backend not (yet) known. */
export function planParking(
  candidates: readonly Candidate[],
  isPaid: (backend: string) => boolean,
  rules: ParkingRules,
): ParkingPlan {
  const plan: ParkingPlan = { queues: [], heldUnpaid: [], heldPaid: [] };
  const first: Candidate[] = [];
  for (const candidate of candidates) {
    const sticky = candidate.backend === rules.sticky;
    if (!rules.paidOpen && isPaid(candidate.backend)) plan.heldPaid.push(candidate);
    else if (sticky) first.push(candidate);
    else if (rules.stickyOnly) plan.heldUnpaid.push(candidate);
    else plan.queues.push(candidate);
  }
  if (first.length > 0) plan.queues.unshift(...first);
  return plan;
}

/** The held candidates of one kind, taken off the call (they join its queues). */
function takeHeld(call: ParkedCall, which: 'unpaid' | 'paid'): Candidate[] {
  if (which === 'unpaid') {
    const joined = call.heldUnpaid;
    call.heldUnpaid = [];
    return joined;
  }
  const joined = call.heldPaid;
  call.heldPaid = [];
  return joined;
}

/** What parking needs of the scheduler. */
export interface ParkingContext {
  readonly clock: Clock;
  readonly waiters: WaiterIndex;
  affinityMaxWaitMs(): number;
  /** Whether a backend is known to be paid. */
  isPaid(backend: string): boolean;
  /** The GPU group of a backend (for the calls ahead of a refused one). */
  groupOf(backend: string): object | undefined;
  estimateWait: WaitEstimate;
  /** Free slots of these backends go to their waiters now (a call was widened onto them). */
  handOffOn(backends: readonly string[]): void;
  /** Whether a backend's calls in flight have run longer on average than its mean service time. */
  overrunning(backend: string): boolean;
  /** Free slots of a backend now (Infinity when unlimited); undefined for one not routable now. */
  freeSlotsOn(backend: string): number | undefined;
}

/** How often a spill timer that kept its call local looks again (ms). */
export const SPILL_RECHECK_MS = 1000;
/** Calls ahead on a box beyond which a spill timer does not count further (the call is far from its turn). */
const NEARLY_SERVED_SCAN = 64;
/**
 * A call that waited the spill threshold stays local while a box is predicted to serve it within
 * this share of the threshold again. 1 (was 0.5): on the simulated-fleet scheduling benchmark with
 * spill_after_s 15, paid calls 59 → 53 (seed 1) at p95 21.6 → 22.6 s; seed 2: 49 paid, p95 24.6 s
 * (the test in test/scheduler-spill.test.ts fails with 0.5).
 */
const NEARLY_SERVED_SHARE = 1;

/** How a ticket parks: its rules, and the route a paid lease gets under its open gate. */
export type ParkRequest = ParkingRules & { paidRoute?: string };

/** Parked calls: parking, the timers that end or widen a wait, and unparking. */
export class ParkingLot {
  private nextSeq = 1;
  /** The parked call of each ticket, for `queuePosition`. */
  private readonly calls = new WeakMap<Ticket, ParkedCall>();

  constructor(private readonly ctx: ParkingContext) {}

  /** An arrival number for a call that may park later (cluster mode: its place is its arrival). */
  reserveSeq(): number {
    return this.nextSeq++;
  }

  /** The ticket's call while it is parked. */
  callOf(ticket: Ticket): ParkedCall | undefined {
    const call = this.calls.get(ticket);
    return call && !call.settled ? call : undefined;
  }

  /** Parks the ticket until a hand-off resolves it, its wait ends ('park_timeout') or it aborts. */
  park(ticket: Ticket, request: ParkRequest): Promise<Lease> {
    const { clock, waiters } = this.ctx;
    const plan = planParking(ticket.candidates, (backend) => this.ctx.isPaid(backend), request);
    return new Promise<Lease>((resolve, reject) => {
      const now = clock.now();
      const resume = ticket.resume;
      const enqueuedAt = resume?.enqueuedAt ?? now;
      const call: ParkedCall = {
        seq: resume?.seq ?? this.nextSeq++,
        alias: ticket.alias,
        user: userOf(ticket.user),
        enqueuedAt,
        deadline: now + ticket.parkMs,
        typeKeysByBackend: typeKeysByBackend(plan.queues),
        refresh: ticket.refresh,
        resolve,
        reject,
        settled: false,
        timer: undefined,
        ticket,
        paidOpen: request.paidOpen,
        paidRoute: request.paidRoute,
        sticky: request.sticky,
        heldUnpaid: plan.heldUnpaid,
        heldPaid: plan.heldPaid,
        widenTimers: [],
      };
      call.timer = clock.setTimeout(() => {
        const ahead = aheadByBackend(call, waiters.values(), this.ctx.groupOf);
        const eta = waiterEta(call, (backend) => ahead.byBackend.get(backend) ?? 0, this.ctx.estimateWait);
        this.unpark(call);
        const message = `no backend for ${ticket.alias} freed within ${ticket.parkMs} ms`;
        reject(new SchedulerRejection('park_timeout', message, retryAfterFromEta(eta), ahead));
      }, ticket.parkMs);
      this.setWidenTimers(call);
      const signal = ticket.signal;
      if (signal) {
        const onAbort = (): void => {
          if (call.settled) return;
          this.unpark(call);
          reject(abortedRejection());
        };
        signal.addEventListener('abort', onAbort, { once: true });
        call.detachAbort = () => signal.removeEventListener('abort', onAbort);
      }
      waiters.add(call, resume !== undefined);
      this.calls.set(ticket, call);
    });
  }

  /** Takes the call out of the queues and drops its timers and abort listener. */
  unpark(call: ParkedCall): void {
    this.ctx.waiters.remove(call);
    this.ctx.clock.clearTimeout(call.timer);
    if (call.widenTimers.length > 0) for (const timer of call.widenTimers) this.ctx.clock.clearTimeout(timer);
    if (call.spillTimer !== undefined) this.ctx.clock.clearTimeout(call.spillTimer);
    call.detachAbort?.();
  }

  /**
   * The timers that widen a parked call onto its held-back candidates: the other unpaid ones
   * after `affinityMaxWaitMs` or half its wait, whichever is shorter (stickiness), then, under
   * the rule of before (spill 0), the paid ones too; the paid ones at `spillAfterMs` if its paid
   * gate allows them then (`armSpill`). Only those due before its wait ends.
   */
  private setWidenTimers(call: ParkedCall): void {
    const { clock } = this.ctx;
    const { ticket } = call;
    const spillMs = ticket.spillAfterMs ?? 0;
    // the margin, but never more than half the wait: a sticky box that overruns its prediction is left in time
    const stickMs = Math.min(this.ctx.affinityMaxWaitMs(), ticket.parkMs / 2);
    if (call.heldUnpaid.length > 0) {
      call.widenTimers.push(
        clock.setTimeout(() => {
          this.widen(call, takeHeld(call, 'unpaid'));
          if (!(spillMs > 0)) this.openPaid(call, NO_LOCAL_SLOT_ROUTE);
        }, stickMs),
      );
    }
    if (call.heldPaid.length > 0 && spillMs > 0 && spillMs < ticket.parkMs) this.armSpill(call, spillMs, spillMs);
  }

  /**
   * The spill timer: at `delayMs` the call's paid candidates open (after any local boxes held
   * back by stickiness), unless one of its local boxes has a free slot then (that box only
   * drains its running calls before it loads the call's model, and no call goes paid past a
   * free local slot) or is about to serve it (`nearlyServed`); the timer then looks again every
   * `SPILL_RECHECK_MS` while the call waits.
   */
  private armSpill(call: ParkedCall, delayMs: number, spillMs: number): void {
    const { clock } = this.ctx;
    call.spillTimer = clock.setTimeout(() => {
      call.spillTimer = undefined;
      if (call.settled) return;
      // local boxes held back by stickiness first: a free one takes it before any paid one
      this.widen(call, takeHeld(call, 'unpaid'));
      if (call.settled) return;
      const left = call.deadline - clock.now();
      if (this.localSlotFree(call) || this.nearlyServed(call, spillMs)) {
        if (left > SPILL_RECHECK_MS) this.armSpill(call, SPILL_RECHECK_MS, spillMs);
        return;
      }
      this.openPaid(call, parkedSpillRoute(clock.now() - call.enqueuedAt, spillMs));
    }, delayMs);
  }

  /**
   * Whether a local box is predicted to serve the call within the spill threshold from now (its
   * calls ahead there, counted up to `NEARLY_SERVED_SCAN`): having waited the threshold once, it
   * waits up to as long again rather than go paid just before its turn.
   */
  private nearlyServed(call: ParkedCall, spillMs: number): boolean {
    for (const [backend, typeKeys] of call.typeKeysByBackend) {
      // a box whose running calls already overran their mean: its prediction is no promise
      if (this.ctx.isPaid(backend) || this.ctx.overrunning(backend)) continue;
      const ahead = this.ctx.waiters.aheadOn(backend, call, NEARLY_SERVED_SCAN);
      if (ahead >= NEARLY_SERVED_SCAN) continue;
      const eta = this.ctx.estimateWait(backend, typeKeys[0], ahead);
      if (eta !== undefined && eta * 1000 <= spillMs * NEARLY_SERVED_SHARE) return true;
    }
    return false;
  }

  /** Whether one of the call's local boxes has a free slot now (one it cannot use yet: it is parked). */
  private localSlotFree(call: ParkedCall): boolean {
    for (const backend of call.typeKeysByBackend.keys()) {
      if (!this.ctx.isPaid(backend) && (this.ctx.freeSlotsOn(backend) ?? 0) > 0) return true;
    }
    return false;
  }

  /** A parked call's paid candidates join its queues, if it is still parked and its paid gate allows them now. */
  private openPaid(call: ParkedCall, route: string): void {
    if (call.settled || call.heldPaid.length === 0 || !paidAllowed(call.ticket)) return;
    call.paidOpen = true;
    call.paidRoute = route;
    this.widen(call, takeHeld(call, 'paid'));
  }

  /** The parked call also waits on `candidates` now; free slots there are handed off at once. */
  private widen(call: ParkedCall, candidates: Candidate[]): void {
    if (call.settled) return;
    this.ctx.handOffOn(this.ctx.waiters.widen(call, candidates));
  }
}

/** A parked call as the snapshot shows it; `etaS` when its ETA was computed. */
export function parkedSnapshot(call: ParkedCall, now: number, etaS: number | undefined): ParkedTicketSnapshot {
  const user = call.ticket.user?.key;
  return {
    alias: call.alias,
    typeKeys: [...new Set([...call.typeKeysByBackend.values()].flat())],
    backends: [...call.typeKeysByBackend.keys()],
    ageMs: now - call.enqueuedAt,
    remainingMs: Math.max(0, call.deadline - now),
    ...(etaS === undefined ? {} : { etaS: shownEta(etaS) }),
    ...(user === undefined ? {} : { user }),
  };
}

/** What a ticket's refresh returns now; nothing if it throws or returns something else. */
export function refreshedCandidates(refresh: () => Candidate[]): readonly Candidate[] {
  try {
    const candidates = refresh();
    return Array.isArray(candidates) ? candidates : [];
  } catch {
    return [];
  }
}

export function abortedRejection(): SchedulerRejection {
  return new SchedulerRejection('aborted', 'the client went away while waiting for a backend');
}
