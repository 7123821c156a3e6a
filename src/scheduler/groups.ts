/**
 * GPU groups: backends that share a card (e.g. a llama-swap and a ComfyUI on one GPU). A lease
 * on a grouped backend needs a free slot on the backend and on its group, and a slot freed on
 * the group may go to a waiter of any of its backends.
 */
import { canTakeLease, kindOf, type BackendSlots, type GroupSlots } from './slots.ts';
import type { GroupLimits, GroupSlotsSnapshot } from './types.ts';
import { firstTypeKey, type Waiter, type WaiterIndex } from './waiters.ts';

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

/** The older of two designations (for the same waiter on two backends: the preferred backend), `b` on a tie. */
function older(a: GroupDesignation, b: GroupDesignation, prefer: MemberPreference): GroupDesignation {
  if (a.waiter.seq !== b.waiter.seq) return a.waiter.seq < b.waiter.seq ? a : b;
  return prefer(a.slots, a.typeKey, b.slots, b.typeKey) < 0 ? a : b;
}

/** One user's best waiters across the group: its oldest (that may start), and its oldest that needs no reload. */
interface UserInGroup {
  oldest?: GroupDesignation;
  sameModel?: GroupDesignation;
}

/**
 * Who gets a free slot of `group`, among the waiters of its backends that can take a lease
 * now (in the fleet, available, a free slot of their own), by the per-backend rules
 * (`WaiterIndex.designate`) across the group: the user with the smallest virtual time among
 * those with such waiters and below their `max_inflight`, and within it its oldest if it is
 * overdue (parked longer than `affinityMaxWaitMs`), else its oldest whose type key equals what
 * its backend last ran, on a backend of the kind the group last ran (so neither a model reload
 * nor a GPU switch), else its oldest. Equal virtual times go to no reload, then the older. With
 * `runnable`, a queue head whose type key cannot start on its backend now is passed over unless
 * it is overdue, and so is a no-reload waiter that cannot. With one user this is the rule of
 * before. O(group members × users waiting there), each lookup at queue heads only.
 */
export function designateInGroup(
  group: GroupSlots,
  waiters: WaiterIndex,
  now: number,
  affinityMaxWaitMs: number,
  prefer: MemberPreference,
  runnable?: (slots: BackendSlots, typeKey: string) => boolean,
): GroupDesignation | undefined {
  const fair = waiters.fair;
  const byUser = new Map<string, UserInGroup>();
  for (const slots of group.members) {
    if (!canTakeLease(slots)) continue;
    const name = slots.spec.name;
    const users = waiters.usersOn(name);
    if (!users) continue;
    const last = slots.lastTypeKey;
    const affine = last !== undefined && kindOf(slots) === group.lastKind && (!runnable || runnable(slots, last));
    for (const [key, queues] of users) {
      if (!fair.canStartKey(key)) continue;
      let mine = byUser.get(key);
      if (!mine) byUser.set(key, (mine = {}));
      const head = queues.all.peek()!;
      const headTypeKey = firstTypeKey(head, name);
      const overdue = now - head.enqueuedAt > affinityMaxWaitMs;
      if (overdue || !runnable || runnable(slots, headTypeKey)) {
        const headPick: GroupDesignation = { slots, waiter: head, typeKey: headTypeKey };
        mine.oldest = mine.oldest ? older(headPick, mine.oldest, prefer) : headPick;
      }
      const match = affine ? queues.byTypeKey.get(last!)?.peek() : undefined;
      if (!match) continue;
      const matchPick: GroupDesignation = { slots, waiter: match, typeKey: last! };
      mine.sameModel = mine.sameModel ? older(matchPick, mine.sameModel, prefer) : matchPick;
    }
  }
  let best: GroupDesignation | undefined;
  let bestAffine = false;
  let bestVt = Infinity;
  for (const [key, mine] of byUser) {
    const vt = fair.virtualTime(key);
    if (vt > bestVt) continue;
    const overdue = mine.oldest !== undefined && now - mine.oldest.waiter.enqueuedAt > affinityMaxWaitMs;
    const choice = overdue ? mine.oldest : (mine.sameModel ?? mine.oldest);
    if (!choice) continue;
    const affine = choice === mine.sameModel;
    if (!best || vt < bestVt || (affine !== bestAffine ? affine : choice.waiter.seq < best.waiter.seq)) {
      best = choice;
      bestAffine = affine;
      bestVt = vt;
    }
  }
  return best;
}
