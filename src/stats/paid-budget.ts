/**
 * The paid budget: what paid backends spent this UTC month, every caller together (users, the
 * master key, anonymous callers), against `paid_budget_usd_month`; and the `PaidGate` the
 * scheduler asks, per ticket, whether a paid candidate may be used now.
 *
 * What counts is a call's effective cost (stats/cost.ts `effectiveCost`: only paid backends
 * spend). The spend is kept in memory per UTC day (`PaidSpend`), seeded from stats.db's
 * `paid_spend` when the call log opens and added to by every `record()` — also with
 * `call_log: false`, whose calls still reach the counters (docs/decisions.md, "The paid budget
 * is a per-day total beside the quota counters"). The request path never reads the database.
 *
 * Like the user quotas, spend is checked before the call: the call that crosses the budget
 * completes, the next one does not go paid. Once the budget (or a user's `quota_cost_month`)
 * is spent, calls park for unpaid backends; only a call with no unpaid candidate is refused,
 * at the gate (routes/caller.ts). 0 (or less) = no budget.
 */
import type { DaySpend } from '../store/calls-repo.ts';
import { startOfNextUtcMonth, startOfUtcMonth, utcDayNumber } from './period.ts';
import { COST_EPSILON_USD, checkMonthQuota, iso, secondsUntil, type QuotaGate, type QuotaUser } from './quota.ts';

/** What paid backends spent per UTC day, every caller together. */
export class PaidSpend {
  private readonly days = new Map<number, number>();
  /** The last `spentSince` answer, until the next count: the gate asks it per scheduling decision. */
  private memo: { firstDay: number; total: number } | undefined;

  /** Adds a call's spend (or a `paid_spend` row) to its day. */
  count(s: DaySpend): void {
    if (!(s.cost > 0) || !Number.isFinite(s.cost)) return;
    this.days.set(s.day, (this.days.get(s.day) ?? 0) + s.cost);
    this.memo = undefined;
  }

  /** USD spent on the UTC days from the one holding `since` (unix ms) on. */
  spentSince(since: number): number {
    const firstDay = utcDayNumber(since);
    if (this.memo?.firstDay === firstDay) return this.memo.total;
    let total = 0;
    for (const [day, cost] of this.days) if (day >= firstDay) total += cost;
    this.memo = { firstDay, total };
    return total;
  }

  /** Forgets the days before `firstDay` (the prune drops them on disk too). */
  forgetBefore(firstDay: number): void {
    for (const day of this.days.keys()) if (day < firstDay) this.days.delete(day);
    this.memo = undefined;
  }
}

/** What a call's record adds to its day's paid spend; null when it spent nothing. */
export function daySpendOf(rec: { ts: number; cost: number }): DaySpend | null {
  if (!(rec.cost > 0) || !Number.isFinite(rec.cost) || !Number.isFinite(rec.ts)) return null;
  return { day: utcDayNumber(Math.max(0, Math.round(rec.ts))), cost: rec.cost };
}

/** The gateway-wide budget is spent: a call with no unpaid candidate is refused with this. */
export interface BudgetRefusal {
  retryAfterSec: number;
  message: string;
}

/** The budget as /health (admin) shows it. */
export interface PaidBudgetStatus {
  /** `paid_budget_usd_month`; 0 = no budget. */
  budget_usd: number;
  spent_usd: number;
  /** The UTC month counted, `YYYY-MM`. */
  month: string;
}

export interface PaidGateDeps {
  spend: Pick<PaidSpend, 'spentSince'>;
  /** The per-user counters (a user's `quota_cost_month`). */
  quotas: Pick<QuotaGate, 'costSince'>;
  /** `paid_budget_usd_month`, read at each decision (a reload applies at once). */
  budgetUsd: () => number;
  /** Unix ms; defaults to `Date.now` (the call log's clock). */
  now?: () => number;
}

/** Whether paid candidates may be used now: the month's budget and the caller's own cost quota. */
export class PaidGate {
  private readonly now: () => number;

  constructor(private readonly deps: PaidGateDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** The gate over a call log's counters (its paid spend and per-user quotas) and a budget read live. */
  static over(log: { paidSpend: PaidSpend; quotas: QuotaGate }, budgetUsd: () => number): PaidGate {
    return new PaidGate({ spend: log.paidSpend, quotas: log.quotas, budgetUsd });
  }

  /**
   * True while the month's paid budget is not spent and (no user, or) the user's
   * `quota_cost_month` is not reached. O(days on record) at most; called per scheduling decision.
   */
  allows(user?: QuotaUser): boolean {
    const now = this.now();
    if (this.spentBudget(now)) return false;
    return !user || checkMonthQuota(user, this.deps.quotas, now).ok;
  }

  /** The refusal of a call that could only go paid, while the month's budget is spent; undefined otherwise. */
  budgetRefusal(now: number = this.now()): BudgetRefusal | undefined {
    const reached = this.spentBudget(now);
    if (!reached) return undefined;
    const { budget, spent } = reached;
    const resetAt = startOfNextUtcMonth(now);
    return {
      retryAfterSec: secondsUntil(resetAt, now),
      message:
        `The gateway's monthly budget for paid backends is spent ($${spent.toFixed(4)} of $${budget.toFixed(2)},` +
        ` paid_budget_usd_month) and this model has no unpaid backend; it resets at ${iso(resetAt)}.`,
    };
  }

  /** The budget and the month's spend once the spend reached it; undefined while it has not, or with no budget. */
  private spentBudget(now: number): { budget: number; spent: number } | undefined {
    const budget = this.deps.budgetUsd();
    if (!isBudget(budget)) return undefined;
    const spent = this.deps.spend.spentSince(startOfUtcMonth(now));
    return spent < budget - COST_EPSILON_USD ? undefined : { budget, spent };
  }

  status(now: number = this.now()): PaidBudgetStatus {
    const budget = this.deps.budgetUsd();
    return {
      budget_usd: isBudget(budget) ? budget : 0,
      spent_usd: this.deps.spend.spentSince(startOfUtcMonth(now)),
      month: new Date(now).toISOString().slice(0, 7),
    };
  }
}

function isBudget(v: number): boolean {
  return typeof v === 'number' && Number.isFinite(v) && v > 0;
}
