import { startOfUtcDay, utcDayNumber } from './period.ts';
import { countsTowardQuota, quotaUsageOfRecord } from './quota-rules.ts';
import type { CallRecord } from './record.ts';

export interface Usage {
  requests: number;
  cost: number;
}

/**
 * Quota usage of calls recorded but not yet on disk (queued, or in flight to the writer
 * thread), per user. Summed per UTC day, so the quota checks (which start at a day or month
 * boundary) cost O(days), not O(pending rows); an arbitrary start scans the user's rows.
 */
export class PendingUsage {
  /** Pending rows per user, oldest first. */
  private byUser = new Map<number, CallRecord[]>();
  /** Rows that count toward quotas, summed per user and UTC day. */
  private dayTotals = new Map<number, Map<number, Usage>>();

  add(rec: CallRecord): void {
    if (typeof rec.user_id !== 'number') return;
    const mine = this.byUser.get(rec.user_id);
    if (mine) mine.push(rec);
    else this.byUser.set(rec.user_id, [rec]);
    if (!countsTowardQuota(rec)) return;
    let days = this.dayTotals.get(rec.user_id);
    if (!days) this.dayTotals.set(rec.user_id, (days = new Map()));
    const day = utcDayNumber(rec.ts);
    const total = days.get(day) ?? { requests: 0, cost: 0 };
    const adds = quotaUsageOfRecord(rec);
    total.requests += adds.requests;
    total.cost += adds.cost;
    days.set(day, total);
  }

  /** Rows now on disk leave the pending counts. */
  forget(written: readonly CallRecord[]): void {
    const users = new Set<number>();
    for (const rec of written) {
      if (typeof rec.user_id !== 'number') continue;
      users.add(rec.user_id);
      if (!countsTowardQuota(rec)) continue;
      const total = this.dayTotals.get(rec.user_id)?.get(utcDayNumber(rec.ts));
      if (total) {
        const adds = quotaUsageOfRecord(rec);
        total.requests -= adds.requests;
        total.cost -= adds.cost;
      }
    }
    const gone = new Set(written);
    for (const user of users) {
      const rest = this.byUser.get(user)?.filter((rec) => !gone.has(rec)) ?? [];
      if (rest.length) this.byUser.set(user, rest);
      else {
        this.byUser.delete(user);
        this.dayTotals.delete(user);
      }
    }
  }

  /** Nothing is pending any more. */
  clear(): void {
    this.byUser = new Map();
    this.dayTotals = new Map();
  }

  /** Pending usage of a user since `since` (unix ms) that counts toward quotas. */
  since(userId: number, since: number): Usage {
    const sum = { requests: 0, cost: 0 };
    if (startOfUtcDay(since) === since) {
      const first = utcDayNumber(since);
      for (const [day, total] of this.dayTotals.get(userId) ?? []) {
        if (day < first) continue;
        sum.requests += total.requests;
        sum.cost += total.cost;
      }
      return sum;
    }
    for (const rec of this.byUser.get(userId) ?? []) {
      if (rec.ts < since) continue;
      const adds = quotaUsageOfRecord(rec);
      sum.requests += adds.requests;
      sum.cost += adds.cost;
    }
    return sum;
  }
}
