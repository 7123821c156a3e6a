/**
 * Handing free slots out: to the first ranked candidate a new call can use now, or to the one
 * designated waiter of a freed slot (of a backend, or of its GPU group), one decision per slot.
 * Waiters are served first: a call never takes a slot a waiter is entitled to.
 */
import type { Clock } from './clock.ts';
import type { FairShare } from './fair-share.ts';
import type { FleetScore } from './fleet-score.ts';
import { designateInGroup } from './groups.ts';
import { compareMembers } from './ordering.ts';
import type { ParkedCall, ParkingLot } from './parking.ts';
import type { Ranked } from './prediction.ts';
import { groupHasFreeSlot, hasFreeSlot, type BackendSlots, type GroupSlots } from './slots.ts';
import type { Lease, TicketUser } from './types.ts';
import type { WaiterIndex } from './waiters.ts';

/** What handing slots out reaches of the scheduler. */
export interface HandOffContext {
  clock: Clock;
  fair: FairShare;
  waiters: WaiterIndex;
  score: FleetScore;
  parking: ParkingLot;
  affinityMaxWaitMs(): number;
  /** The backend's slots if it is known, in the fleet and available. */
  routable(name: string): BackendSlots | undefined;
  /** A lease of one slot (lease-desk.ts). */
  grant(slots: BackendSlots, typeKey: string, waitedMs: number, user: TicketUser, route?: string): Lease;
}

/**
 * First candidate (already in scheduler order) with a free slot its model can use now, leased
 * to `user` with `route`; null if none or the user is at its cap (`max_inflight`).
 */
export function takeFreeSlot(
  ctx: HandOffContext,
  ordered: readonly Ranked[],
  user: TicketUser,
  route?: string,
): Lease | null {
  if (!ctx.fair.canStart(user)) return null;
  for (const { slots, candidate } of ordered) {
    if (!hasFreeSlot(slots)) continue;
    const group = slots.group;
    if (group === undefined) {
      // Waiters are served first: a free slot with waiters exists only when none of them
      // can use it now (their model is not loaded on this busy box).
      if (ctx.waiters.hasWaitersFor(candidate.backend)) handOff(ctx, slots);
      if (ctx.score.canStart(slots, candidate.model)) return ctx.grant(slots, candidate.model, 0, user, route);
    } else if (groupHasFreeSlot(group)) {
      // The same for a free group slot, which waiters of any backend of the group may take.
      handOffGroup(ctx, group);
      if (ctx.score.canStart(slots, candidate.model) && groupHasFreeSlot(group)) {
        return ctx.grant(slots, candidate.model, 0, user, route);
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
export function handOff(ctx: HandOffContext, slots: BackendSlots): void {
  while (!slots.removed && slots.spec.available && hasFreeSlot(slots)) {
    const now = ctx.clock.now();
    const runnable = ctx.score.runnableOn(slots);
    const pick = ctx.waiters.designate(slots.spec.name, {
      lastTypeKey: slots.lastTypeKey,
      now,
      affinityMaxWaitMs: ctx.affinityMaxWaitMs(),
      runnable,
    });
    if (!pick) return;
    grantParked(ctx, pick.waiter as ParkedCall, slots, pick.typeKey, now);
  }
}

/**
 * Gives free slots of this group to designated waiters of its backends, one decision per
 * slot, while a backend of the group with a free slot of its own has one.
 */
export function handOffGroup(ctx: HandOffContext, group: GroupSlots): void {
  while (groupHasFreeSlot(group)) {
    const now = ctx.clock.now();
    const runnable = ctx.score.runnableInGroup();
    const pick = designateInGroup(group, ctx.waiters, now, ctx.affinityMaxWaitMs(), compareMembers, runnable);
    if (!pick) return;
    grantParked(ctx, pick.waiter as ParkedCall, pick.slots, pick.typeKey, now);
  }
}

/** Hands a slot to a parked call: a paid one says why it spilled, the conversation's box 'sticky'. */
export function grantParked(
  ctx: HandOffContext,
  waiter: ParkedCall,
  slots: BackendSlots,
  typeKey: string,
  now: number,
): void {
  const route = slots.spec.paid ? waiter.paidRoute : waiter.sticky === slots.spec.name ? 'sticky' : undefined;
  // granted before unparked, so the user is never idle in between (fair-share.ts)
  const lease = ctx.grant(slots, typeKey, now - waiter.enqueuedAt, waiter.user, route);
  ctx.parking.unpark(waiter);
  waiter.resolve(lease);
}

/** Hands off free slots of these backends (and of their groups). */
export function handOffOn(ctx: HandOffContext, backends: readonly string[]): void {
  for (const backend of backends) {
    const slots = ctx.routable(backend);
    if (slots?.group === undefined) {
      if (slots) handOff(ctx, slots);
    } else handOffGroup(ctx, slots.group);
  }
}
