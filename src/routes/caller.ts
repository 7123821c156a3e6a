/**
 * Who is calling: the authenticated caller of a request, who the call log attributes it to,
 * and the quota gate it must pass. The routes' one view of authentication and quotas.
 */
import type { FastifyRequest } from 'fastify';
import type { Caller } from '../auth/authenticator.ts';
import { attributeSource } from '../auth/source.ts';
import { GatewayError } from '../errors.ts';
import type { Admission, QuotaUser } from '../stats/quota.ts';

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
  /** The quota gate: admits a user's call (counting it as running) or refuses it. */
  admit: (user: QuotaUser, now: number) => Admission;
}

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
   * Admits a call within its user's quotas, or throws 429 `insufficient_quota` with Retry-After.
   * Calls admitted but not yet finished count too, so concurrent calls cannot all slip past a
   * limit; the returned `done` (idempotent) ends that count once the call is on record.
   */
  admit(ctx: CallerContext): () => void {
    const user = ctx.caller.user;
    if (!user) return noop;
    const admission = this.deps.admit(user, Date.now());
    if (admission.ok) return admission.done;
    throw new GatewayError({
      status: 429,
      code: 'insufficient_quota',
      type: 'insufficient_quota',
      message: admission.message,
      retryAfter: admission.retryAfterSec,
      reason: admission.kind === 'day' ? 'quota_day' : 'quota_month',
    });
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
