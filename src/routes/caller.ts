/**
 * Who is calling: the authenticated caller of a request, who the call log attributes it to,
 * and the gate it must pass (the user's quotas, the gateway's paid budget). The routes' one
 * view of authentication, quotas and the paid budget.
 */
import type { FastifyRequest } from 'fastify';
import type { Caller } from '../auth/authenticator.ts';
import { attributeSource } from '../auth/source.ts';
import { GatewayError } from '../errors.ts';
import type { BudgetRefusal } from '../stats/paid-budget.ts';
import type { Admission, QuotaUser } from '../stats/quota.ts';
import { RefusalReason } from '../stats/record.ts';

/** The authenticated caller of a request plus who the call log attributes it to. */
export interface CallerContext {
  caller: Caller;
  source: string;
  userId: number | null;
}

export type Attribution = Omit<CallerContext, 'caller'>;

export interface CallersDeps {
  /** Resolves the request's key to a caller; throws a 401 GatewayError. */
  authenticate: (headers: FastifyRequest['headers']) => Caller;
  /** IP address → name, for attribution. */
  ipAliases: () => Readonly<Record<string, string>>;
  /**
   * The quota gate: admits a user's call (counting it as running) or refuses it. `hasUnpaid`:
   * the call has an unpaid candidate, so a spent cost quota does not refuse it.
   */
  admit: (user: QuotaUser, now: number, hasUnpaid: boolean) => Admission | Promise<Admission>;
  /** Whether `user` (undefined = the master key or anonymous) may spend on paid backends now; absent = always. */
  paidAllowed?: (user: QuotaUser | undefined) => boolean;
  /** The refusal of a call that could only go paid while `paid_budget_usd_month` is spent; undefined otherwise. */
  paidBudget?: (now: number) => BudgetRefusal | undefined;
  /** Whether a backend is paid (`paid: true`); undefined for a backend not in the fleet. */
  isPaid?: (backend: string) => boolean | undefined;
}

/** Where a call may run, as far as the paid gate cares. */
export interface PaidChoice {
  /** One of the call's candidates is an unpaid backend: a spent budget or cost quota parks it for that one. */
  hasUnpaid: boolean;
}

/** What a route that does not say gets: every candidate counted as paid (a spent budget refuses it). */
const ONLY_PAID: PaidChoice = { hasUnpaid: false };

export class Callers {
  constructor(private readonly deps: CallersDeps) {}

  /**
   * Resolves who is calling (throws 401) and the source the call is attributed to: the user,
   * else an `X-Source` header, else the client IP shown through its IP alias.
   */
  identify(req: FastifyRequest): CallerContext {
    const caller = this.deps.authenticate(req.headers);
    return { caller, ...this.attribution(req, caller, true) };
  }

  /**
   * Attribution for a request whose caller is unknown (it was refused before auth passed): its
   * IP (through its alias), never its `X-Source` header — an unauthenticated caller does not get
   * to name itself in the log, nor to dodge the per-source folding of 401s with a new name each time.
   */
  anonymous(req: FastifyRequest): Attribution {
    return this.attribution(req, undefined, false);
  }

  /**
   * Admits a call within its user's quotas and the paid budget, or throws 429
   * `insufficient_quota` with Retry-After. The day quota refuses any call; a spent cost quota
   * (`quota_cost_month`) or paid budget (`paid_budget_usd_month`, code `paid_budget_reached`)
   * refuses only a call with no unpaid candidate (`paid.hasUnpaid`, see `hasUnpaid`): one
   * with an unpaid candidate is admitted and kept off the paid ones by the ticket's paid gate.
   * Calls admitted but not yet finished count too, so concurrent calls cannot all slip past a
   * limit; the returned `done` (idempotent) ends that count once the call is on record.
   */
  admit(ctx: CallerContext, paid: PaidChoice = ONLY_PAID): (() => void) | Promise<() => void> {
    const now = Date.now();
    const user = ctx.caller.user;
    if (!user) return this.withinBudget(noop, now, paid);
    const admission = this.deps.admit(user, now, paid.hasUnpaid);
    if (!(admission instanceof Promise)) return this.withinBudget(admitted(admission), now, paid);
    // cluster mode: the shared counters answer later
    return admission.then(
      (a) => this.withinBudget(admitted(a), now, paid),
      () => {
        throw clusterStoreError();
      },
    );
  }

  /** The paid budget's part of `admit`: `done` is ended at once when the budget refuses the call. */
  private withinBudget(done: () => void, now: number, paid: PaidChoice): () => void {
    const spent = paid.hasUnpaid ? undefined : this.deps.paidBudget?.(now);
    if (spent) {
      done();
      throw quotaError(spent.message, spent.retryAfterSec, RefusalReason.paidBudget);
    }
    return done;
  }

  /**
   * Whether any of a call's candidates is an unpaid backend (`paid: false`), for `admit`. A
   * backend not in the fleet any more counts as paid: nothing unpaid can take the call there.
   */
  hasUnpaid(candidates: readonly { backend: string }[]): boolean {
    const isPaid = this.deps.isPaid;
    if (!isPaid) return false;
    for (const c of candidates) if (isPaid(c.backend) === false) return true;
    return false;
  }

  /**
   * The ticket's paid gate for this caller (`Ticket.paidAllowed`): re-asked at each scheduling
   * decision, so a budget or cost quota spent while the call is parked keeps it off paid backends.
   */
  paidAllowed(ctx: CallerContext): (() => boolean) | undefined {
    const gate = this.deps.paidAllowed;
    if (!gate) return undefined;
    const user = ctx.caller.user;
    return () => gate(user);
  }

  private attribution(req: FastifyRequest, caller: Caller | undefined, trustHeader: boolean): Attribution {
    const source = attributeSource({
      user: caller?.user?.name,
      header: trustHeader ? req.headers['x-source'] : undefined,
      ip: req.ip,
      ipAliases: this.deps.ipAliases(),
    });
    return { source, userId: caller?.user?.id ?? null };
  }
}

const noop = () => {};

/** An admission's `done`, or the 429 of its refusal. */
function admitted(admission: Admission): () => void {
  if (admission.ok) return admission.done;
  const reason = admission.kind === 'day' ? RefusalReason.quotaDay : RefusalReason.quotaMonth;
  throw quotaError(admission.message, admission.retryAfterSec, reason);
}

/** Cluster mode, and the shared quota counters (Redis) do not answer. */
function clusterStoreError(): GatewayError {
  return new GatewayError({
    status: 503,
    code: 'cluster_unavailable',
    type: 'api_error',
    reason: 'cluster_unavailable',
    message: 'The cluster store (Redis) is unreachable, so this gateway takes no new calls; retry shortly.',
    retryAfter: 2,
  });
}

/** 429 `insufficient_quota` (OpenAI's type and code for a spent budget), with Retry-After. */
function quotaError(message: string, retryAfter: number, reason: string): GatewayError {
  const code = reason === RefusalReason.paidBudget ? reason : 'insufficient_quota';
  return new GatewayError({ status: 429, code, type: 'insufficient_quota', message, retryAfter, reason });
}
