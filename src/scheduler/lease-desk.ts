/**
 * Granting a lease: one slot on a backend (and on its GPU group), counted for the caller's user
 * in the fair share, and a release that gives the slot back once and hands it on. The
 * scheduler decides who gets a slot; this is what taking and giving one back does.
 */
import type { Clock } from './clock.ts';
import { serviceEstimate, type FairShare } from './fair-share.ts';
import { kindOf, type BackendSlots, type GroupSlots } from './slots.ts';
import type { BackendKind, GroupSwitchEvent, Lease, TicketUser } from './types.ts';

/** What a grant and its release reach of the scheduler. */
export interface LeaseDeskContext {
  clock: Clock;
  fair: FairShare;
  /** Backends the user's parked calls wait on (for a user below its cap again). */
  backendsOf(userKey: string): readonly string[];
  handOff(slots: BackendSlots): void;
  handOffGroup(group: GroupSlots): void;
  handOffOn(backends: readonly string[]): void;
  /** A removed backend whose last lease came back: drop it (unless it rejoined meanwhile). */
  forgetIfDrained(slots: BackendSlots): void;
  pruneGroup(group: GroupSlots): void;
  onGroupSwitch(): ((e: GroupSwitchEvent) => void) | undefined;
}

/**
 * A lease of one slot of `slots` for `typeKey`, charged to `user`. Its release (idempotent)
 * charges the user what it held, frees the slot (and the group's) and hands it to a waiter.
 */
export function grantLease(
  ctx: LeaseDeskContext,
  slots: BackendSlots,
  typeKey: string,
  waitedMs: number,
  user: TicketUser,
  route?: string,
): Lease {
  // fair share: the lease counts in flight for its user and is charged an estimate now
  const estimate = serviceEstimate(slots, typeKey);
  const grantedAt = ctx.clock.now();
  ctx.fair.granted(user, estimate);
  slots.inflight++;
  slots.grantedAtSum = (slots.grantedAtSum ?? 0) + grantedAt;
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
    const uncapped = ctx.fair.released(user.key, (ctx.clock.now() - grantedAt) / 1000, estimate);
    if (uncapped) ctx.handOffOn(ctx.backendsOf(user.key));
    slots.inflight--;
    slots.grantedAtSum = slots.inflight === 0 ? 0 : slots.grantedAtSum! - grantedAt;
    if (group !== undefined) return releaseGrouped(ctx, slots, group);
    if (slots.removed) return ctx.forgetIfDrained(slots);
    if (slots.group === undefined) ctx.handOff(slots);
    else ctx.handOffGroup(slots.group); // it joined a group while the lease was out
  };
  const lease = Object.freeze({ backend: slots.spec.name, model: typeKey, waitedMs, route, release });
  if (switched !== undefined) {
    notifySwitch(ctx, { group: group!.name, from: switched, to: kindOf(slots), backend: slots.spec.name });
  }
  return lease;
}

/** A lease granted on `group` released: its slot there and on the backend go to waiters. */
function releaseGrouped(ctx: LeaseDeskContext, slots: BackendSlots, group: GroupSlots): void {
  group.inflight--;
  if (slots.removed) ctx.forgetIfDrained(slots);
  ctx.handOffGroup(group);
  // The backend moved to another group (or out of groups) while the lease was out.
  if (!slots.removed && slots.group !== group) {
    if (slots.group) ctx.handOffGroup(slots.group);
    else ctx.handOff(slots);
  }
  ctx.pruneGroup(group);
}

function notifySwitch(ctx: LeaseDeskContext, event: GroupSwitchEvent): void {
  const hook = ctx.onGroupSwitch();
  if (!hook) return;
  try {
    hook(event);
  } catch {
    // The hook only starts work; its failures are its own business.
  }
}
