/**
 * The paid spill rule, pure. A paid candidate is used only when the paid gate allows it
 * (`Ticket.paidAllowed`: the paid budget, the user's cost quota) and the local boxes cannot do
 * better: with `spillAfterMs` ≤ 0 (the default, the rule of before) as soon as no unpaid
 * candidate can start now; above 0 only when the best unpaid candidate's predicted wait (slot
 * wait + swap; prefill happens on the paid box too) exceeds it, or the call has been parked
 * that long, and never past a free local slot (a box that only drains before it loads the
 * call's model). Each spill says why in `Lease.route`.
 */
import { pooledLocalWait } from './pooled-wait.ts';
import { hasFreeSlot } from './slots.ts';
import type { Ranked } from './prediction.ts';
import { SchedulerRejection, type Ticket } from './types.ts';

/** Whether a ticket may use its paid candidates now, and the route words if it takes one. */
export interface PaidGate {
  open: boolean;
  /** `Lease.route` of a paid lease under this gate; undefined when the ticket has no unpaid candidate. */
  route?: string;
}

const CLOSED: PaidGate = Object.freeze({ open: false });

/** Route of a paid lease for a call that could not park for a local box (parking off, or the queue full). */
export const CANNOT_WAIT_ROUTE = 'spill: no local slot free and no parking';

/** Route of a paid lease under the rule of before (`spillAfterMs` 0): no unpaid candidate could start. */
export const NO_LOCAL_SLOT_ROUTE = 'spill: no local slot free';

/** Whether the ticket's paid gate lets it use paid backends at all now. */
export function paidAllowed(ticket: Pick<Ticket, 'paidAllowed'>): boolean {
  return ticket.paidAllowed?.() !== false;
}

/**
 * The gate for a ticket none of whose unpaid candidates could start now. `unpaid`: its routable
 * ones with their scores (the local wait: pooled-wait.ts, at most the least slot wait + swap); when none is
 * routable, `hasUnpaid` says whether it has unpaid candidates at all (down or not yet known). `canWait`: the call could
 * park for them; one that cannot (parking off, queue full) would be refused, so a local wait
 * under the threshold does not keep it from the paid box.
 */
export function paidGate(
  ticket: Pick<Ticket, 'paidAllowed' | 'spillAfterMs'>,
  unpaid: readonly Ranked[],
  hasUnpaid: boolean,
  canWait = true,
): PaidGate {
  if (!paidAllowed(ticket)) return CLOSED;
  if (unpaid.length === 0) return hasUnpaid ? { open: true, route: 'spill: no local box available' } : { open: true };
  const spillMs = ticket.spillAfterMs ?? 0;
  if (!(spillMs > 0)) return { open: true, route: NO_LOCAL_SLOT_ROUTE };
  // a free local slot it cannot use yet (the box drains before it loads the model): it waits
  if (canWait && unpaid.some((r) => hasFreeSlot(r.slots))) return CLOSED;
  const localEta = pooledLocalWait(unpaid);
  if (localEta * 1000 <= spillMs) return canWait ? CLOSED : { open: true, route: CANNOT_WAIT_ROUTE };
  const route = `spill: local eta ${secondsText(localEta, Math.ceil)} s > ${secondsText(spillMs / 1000)} s`;
  return { open: true, route };
}

/** The refusal of a ticket whose only candidates are paid while its paid gate is closed (it never parks). */
export function paidBudgetRejection(alias: string): SchedulerRejection {
  const message = `the paid budget allows no more calls to the paid backends serving ${alias}`;
  return new SchedulerRejection('paid_budget', message);
}

/** The route of a parked call whose spill timer opened its paid candidates after `waitedMs`. */
export function parkedSpillRoute(waitedMs: number, spillAfterMs: number): string {
  return `spill: parked ${secondsText(waitedMs / 1000)} s >= ${secondsText(spillAfterMs / 1000)} s`;
}

/** Seconds as a short number: whole from 10 up, else one decimal (rounded by `round`, trailing .0 dropped). */
export function secondsText(seconds: number, round: (n: number) => number = Math.round): string {
  if (seconds >= 10) return String(round(seconds));
  return String(round(seconds * 10) / 10);
}
