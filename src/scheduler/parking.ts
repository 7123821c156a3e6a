/**
 * Where a ticket parks. Its queues hold the candidates it may take now; the rest are held back
 * and joined later by a timer (`WaiterIndex.widen`):
 * - paid candidates while its paid gate is closed (spill.ts): joined at `spillAfterMs` of
 *   parking if the gate allows paid use then;
 * - with stickiness, when the conversation's busy backend is predicted to free within the margin
 *   while another is free now: the other unpaid candidates, joined after `affinityMaxWaitMs`.
 * Pure: the scheduler sets the timers.
 */
import type { Candidate, Ticket } from './types.ts';
import type { Waiter } from './waiters.ts';

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
export function planParking(candidates: readonly Candidate[], isPaid: (backend: string) => boolean, rules: ParkingRules): ParkingPlan {
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

/** The parked call's held candidates joined now: the unpaid ones, and the paid ones once its gate is open. */
export function takeHeld(call: ParkedCall, which: 'unpaid' | 'paid'): Candidate[] {
  if (which === 'unpaid') {
    const joined = call.heldUnpaid;
    call.heldUnpaid = [];
    return joined;
  }
  const joined = call.heldPaid;
  call.heldPaid = [];
  return joined;
}
