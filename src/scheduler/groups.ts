/**
 * GPU groups: backends that share a card (e.g. a llama-swap and a ComfyUI on one GPU). A lease
 * on a grouped backend needs a free slot on the backend and on its group, and a slot freed on
 * the group may go to a waiter of any of its backends.
 */
import { canTakeLease, kindOf, type BackendSlots, type GroupSlots } from './slots.ts';
import type { GroupLimits, GroupSlotsSnapshot } from './types.ts';
import type { Waiter, WaiterIndex } from './waiters.ts';

/** Cap of a group that a backend names but the configuration does not. */
export const IMPLICIT_GROUP_CAP = 1;

/** The groups in use: configured ones and those a backend names. */
export class GroupTable {
  private readonly groups = new Map<string, GroupSlots>();
  private caps = new Map<string, number>();

  /** Replaces the configured caps; groups no longer configured fall back to the implicit cap. */
  configure(limits: Readonly<Record<string, GroupLimits>>): void {
    this.caps = new Map(Object.entries(limits).map(([name, limit]) => [name, validCap(limit?.cap)]));
    for (const name of this.caps.keys()) this.obtain(name);
    for (const group of [...this.groups.values()]) {
      group.cap = this.caps.get(group.name) ?? IMPLICIT_GROUP_CAP;
      this.prune(group);
    }
  }

  /** Puts the backend in the group its spec names now, leaving the one it was in. */
  assign(slots: BackendSlots): void {
    const name = slots.spec.group || undefined;
    const old = slots.group;
    if (old?.name === name) return;
    if (old) {
      old.members.delete(slots);
      slots.group = undefined;
      this.prune(old);
    }
    if (name === undefined) return;
    const group = this.obtain(name);
    group.members.add(slots);
    slots.group = group;
  }

  /** The backend left the fleet for good (no leases out). */
  leave(slots: BackendSlots): void {
    const group = slots.group;
    if (!group) return;
    group.members.delete(slots);
    slots.group = undefined;
    this.prune(group);
  }

  /** Drops a group that is not configured, has no members and no lease out. */
  prune(group: GroupSlots): void {
    if (group.members.size > 0 || group.inflight > 0 || this.caps.has(group.name)) return;
    if (this.groups.get(group.name) === group) this.groups.delete(group.name);
  }

  values(): IterableIterator<GroupSlots> {
    return this.groups.values();
  }

  snapshot(): GroupSlotsSnapshot[] {
    return [...this.groups.values()].map((group) => ({
      name: group.name,
      inflight: group.inflight,
      cap: group.cap,
      members: [...group.members].filter((slots) => !slots.removed).map((slots) => slots.spec.name),
      lastKind: group.lastKind,
    }));
  }

  private obtain(name: string): GroupSlots {
    let group = this.groups.get(name);
    if (!group) {
      group = { name, cap: this.caps.get(name) ?? IMPLICIT_GROUP_CAP, inflight: 0, members: new Set() };
      this.groups.set(name, group);
    }
    return group;
  }
}

function validCap(cap: unknown): number {
  return typeof cap === 'number' && Number.isFinite(cap) && cap >= 0 ? Math.floor(cap) : IMPLICIT_GROUP_CAP;
}

/** The waiter a free group slot goes to, the backend it runs on and the type key it runs there. */
export interface GroupDesignation {
  slots: BackendSlots;
  waiter: Waiter;
  typeKey: string;
}

/**
 * Orders two backends for the same waiter (negative = `a` first), used only when one waiter
 * heads the queues of several backends of the group.
 */
export type MemberPreference = (a: BackendSlots, aTypeKey: string, b: BackendSlots, bTypeKey: string) => number;

/**
 * Who gets a free slot of `group`, among the waiters of its backends that can take a lease
 * now (in the fleet, available, a free slot of their own). The per-backend rules, across the
 * group: (1) the oldest of them all if it is overdue (parked longer than `affinityMaxWaitMs`);
 * else (2) the oldest whose type key equals what its backend last ran, on a backend of the kind
 * the group last ran (so neither a model reload nor a GPU switch); else (3) the oldest.
 * O(group members), each lookup at queue heads only.
 */
export function designateInGroup(
  group: GroupSlots,
  waiters: WaiterIndex,
  now: number,
  affinityMaxWaitMs: number,
  prefer: MemberPreference,
  runnable?: (slots: BackendSlots, typeKey: string) => boolean,
): GroupDesignation | undefined {
  let oldest: GroupDesignation | undefined;
  let sameModel: GroupDesignation | undefined;
  for (const slots of group.members) {
    if (!canTakeLease(slots)) continue;
    const name = slots.spec.name;
    const head = waiters.oldest(name);
    if (!head) continue;
    const headTypeKey = head.typeKeysByBackend.get(name)![0];
    // a head that cannot start here now is no candidate for (1)/(3); a same-model waiter behind it still is
    const passedOver = runnable && now - head.enqueuedAt <= affinityMaxWaitMs && !runnable(slots, headTypeKey);
    if (!passedOver) {
      if (!oldest || head.seq < oldest.waiter.seq) oldest = { slots, waiter: head, typeKey: headTypeKey };
      else if (head === oldest.waiter && prefer(slots, headTypeKey, oldest.slots, oldest.typeKey) < 0) {
        oldest = { slots, waiter: head, typeKey: headTypeKey };
      }
    }
    const last = slots.lastTypeKey;
    if (last === undefined || kindOf(slots) !== group.lastKind || (runnable && !runnable(slots, last))) continue;
    const match = waiters.oldestWithTypeKey(name, last);
    if (!match) continue;
    if (!sameModel || match.seq < sameModel.waiter.seq) sameModel = { slots, waiter: match, typeKey: last };
    else if (match === sameModel.waiter && prefer(slots, last, sameModel.slots, sameModel.typeKey) < 0) {
      sameModel = { slots, waiter: match, typeKey: last };
    }
  }
  if (!oldest) return sameModel;
  if (now - oldest.waiter.enqueuedAt > affinityMaxWaitMs) return oldest;
  return sameModel ?? oldest;
}
