/**
 * Fair share between users: start-time fair queueing in units of time (deficit round-robin
 * where the quantum is seconds of service). Each user has a virtual time that grows by the
 * seconds its leases hold a slot divided by its `share`; a freed slot goes to the user with
 * the smallest one (waiters.ts, groups.ts). A lease is charged an estimate when it is granted
 * and corrected by what it really held when it is released, so a user with calls running
 * already counts them.
 *
 * A user that becomes active (its first waiter or lease after being idle) starts at
 * max(its virtual time, the smallest among the other active users, less what their running
 * leases were charged in advance): idle time banks no credit, and a newcomer starts where the
 * service under way started (as in start-time fair queueing), not after the estimates.
 * Users with no waiter and no lease are forgotten at the next activation of another user, so
 * memory is bounded by the users active since then.
 *
 * Also each user's leases out, for `max_inflight`: a user at its cap gets no slot (its calls
 * park, waiters of its are passed over) until one of its leases is released.
 *
 * Pure logic: no clock, the scheduler passes the seconds.
 */
import type { BackendSlots } from './slots.ts';
import type { TicketUser } from './types.ts';

/** The user of a ticket that names none: every anonymous caller together. */
export const ANONYMOUS_USER: TicketUser = Object.freeze({ key: 'anon', share: 1, maxInflight: 0 });

/** Seconds a lease is charged at grant when its backend has learnt no service time yet. */
export const DEFAULT_ESTIMATE_SECONDS = 1;

/** One user's place in the fair share. */
interface UserRecord {
  /** Virtual time: seconds of service received / share, plus where it started. */
  vt: number;
  /** The part of `vt` charged in advance for leases still out (their estimates). */
  pending: number;
  share: number;
  /** 0 = no cap. */
  maxInflight: number;
  inflight: number;
  waiting: number;
}

/** The ticket's user, or the anonymous one. */
export function userOf(user: TicketUser | undefined): TicketUser {
  return user ?? ANONYMOUS_USER;
}

/** A usable share: finite and > 0, else 1. */
function validShare(share: number): number {
  return Number.isFinite(share) && share > 0 ? share : 1;
}

/** A usable cap: a whole number ≥ 0 (0 = none), else none. */
function validCap(cap: number): number {
  return Number.isFinite(cap) && cap >= 0 ? Math.floor(cap) : 0;
}

/**
 * What a lease on `slots` running `typeKey` is charged at grant, in seconds: for a media
 * backend its seconds per job of that type key (generation alias); for an LLM backend the mean
 * service time of that model there, else of the backend; else DEFAULT_ESTIMATE_SECONDS.
 */
export function serviceEstimate(slots: BackendSlots, typeKey: string): number {
  const seconds =
    slots.spec.kind === 'media'
      ? slots.jobSeconds?.get(typeKey)
      : (slots.serviceByModel?.get(typeKey)?.serviceSeconds ?? slots.service?.serviceSeconds);
  return seconds !== undefined && Number.isFinite(seconds) && seconds > 0 ? seconds : DEFAULT_ESTIMATE_SECONDS;
}

/** Virtual times and leases out per user. Every operation is O(1) but an activation, O(known users). */
export class FairShare {
  private readonly users = new Map<string, UserRecord>();

  /** Users known now (active ones and idle ones not yet forgotten). */
  get size(): number {
    return this.users.size;
  }

  /** Whether a call of `user` may take a slot now: it is below its `maxInflight` (the ticket's). */
  canStart(user: TicketUser): boolean {
    const cap = validCap(user.maxInflight);
    return cap === 0 || (this.users.get(user.key)?.inflight ?? 0) < cap;
  }

  /** The same for a parked waiter's user, by key, with the cap its latest ticket gave. */
  canStartKey(key: string): boolean {
    const record = this.users.get(key);
    return !record || record.maxInflight === 0 || record.inflight < record.maxInflight;
  }

  /** The user's virtual time (0 for an unknown one). */
  virtualTime(key: string): number {
    return this.users.get(key)?.vt ?? 0;
  }

  /** A waiter of `user` parked. */
  waiterAdded(user: TicketUser): void {
    this.recordOf(user).waiting++;
  }

  /** A waiter of the user left the queues (served, timed out or gone). */
  waiterRemoved(key: string): void {
    const record = this.users.get(key);
    if (record && record.waiting > 0) record.waiting--;
  }

  /** A lease of `user` was granted: it counts in flight and is charged `estimateSeconds`. */
  granted(user: TicketUser, estimateSeconds: number): void {
    const record = this.recordOf(user);
    record.inflight++;
    const charge = estimateSeconds / record.share;
    record.vt += charge;
    record.pending += charge;
  }

  /**
   * A lease of the user was released after holding its slot `heldSeconds`: the charge is
   * corrected from the estimate to that. True when the user was at its cap before, i.e. its
   * waiters may start again.
   */
  released(key: string, heldSeconds: number, estimateSeconds: number): boolean {
    const record = this.users.get(key);
    if (!record) return false;
    const wasCapped = record.maxInflight > 0 && record.inflight >= record.maxInflight;
    if (record.inflight > 0) record.inflight--;
    const held = Number.isFinite(heldSeconds) && heldSeconds > 0 ? heldSeconds : 0;
    record.vt += (held - estimateSeconds) / record.share;
    record.pending = record.inflight === 0 ? 0 : Math.max(0, record.pending - estimateSeconds / record.share);
    return wasCapped;
  }

  /** Virtual time, leases and waiters per known user, for tests and diagnostics. */
  snapshot(): Record<string, { vt: number; inflight: number; waiting: number }> {
    const out: Record<string, { vt: number; inflight: number; waiting: number }> = {};
    for (const [key, { vt, inflight, waiting }] of this.users) out[key] = { vt, inflight, waiting };
    return out;
  }

  /**
   * The user's record, share and cap taken from this ticket, activated if it was idle: it
   * starts at max(its virtual time, the smallest of the other active users' less their advance
   * charges). The activation also forgets the other idle users.
   */
  private recordOf(user: TicketUser): UserRecord {
    let record = this.users.get(user.key);
    if (!record) {
      record = { vt: 0, pending: 0, share: 1, maxInflight: 0, inflight: 0, waiting: 0 };
      this.users.set(user.key, record);
    }
    record.share = validShare(user.share);
    record.maxInflight = validCap(user.maxInflight);
    if (record.inflight === 0 && record.waiting === 0) this.activate(user.key, record);
    return record;
  }

  private activate(key: string, record: UserRecord): void {
    let floor = Infinity;
    for (const [other, r] of this.users) {
      if (other === key) continue;
      if (r.inflight === 0 && r.waiting === 0) this.users.delete(other);
      else if (r.vt - r.pending < floor) floor = r.vt - r.pending;
    }
    if (floor !== Infinity && floor > record.vt) record.vt = floor;
  }
}
