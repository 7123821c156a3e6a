import type { FastifyRequest } from 'fastify';
import type { Caller } from '../auth/authenticator.ts';
import { attributeSource } from '../auth/source.ts';
import { GatewayError } from '../errors.ts';
import type { Gateway } from '../gateway.ts';
import { checkQuota } from '../stats/quota.ts';

/** The authenticated caller of a request plus who the call log attributes it to. */
export interface CallerContext {
  caller: Caller;
  source: string;
  userId: number | null;
}

/**
 * Resolves who is calling (throws 401) and the source the call is attributed to: the user,
 * else an `X-Source` header, else the client IP shown through its IP alias.
 */
export function identifyCaller(gateway: Gateway, req: FastifyRequest): CallerContext {
  const caller = gateway.authenticator.authenticate(req.headers);
  return { caller, ...attribution(gateway, req, caller) };
}

/**
 * Attribution for a request whose caller is unknown (it was refused before auth passed): its
 * IP (through its alias), never its `X-Source` header — an unauthenticated caller does not get
 * to name itself in the log, nor to dodge the per-source folding of 401s with a new name each time.
 */
export function anonymousAttribution(gateway: Gateway, req: FastifyRequest): Omit<CallerContext, 'caller'> {
  return attribution(gateway, req, undefined, false);
}

function attribution(
  gateway: Gateway,
  req: FastifyRequest,
  caller: Caller | undefined,
  trustHeader = true,
): Omit<CallerContext, 'caller'> {
  const source = attributeSource({
    user: caller?.user?.name,
    header: trustHeader ? req.headers['x-source'] : undefined,
    ip: req.ip,
    ipAliases: gateway.ipAliases.current(),
  });
  return { source, userId: caller?.user?.id ?? null };
}

/**
 * Admits a call within its user's quotas, or throws 429 `insufficient_quota` with Retry-After.
 * Calls admitted but not yet finished count too, so concurrent calls cannot all slip past a
 * limit; the returned `done` (idempotent) ends that count once the call is on record.
 */
export function admitWithinQuota(gateway: Gateway, ctx: CallerContext): () => void {
  const user = ctx.caller.user;
  if (!user) return () => {};
  const running = gateway.userInflight.get(user.id) ?? 0;
  const verdict = checkQuota(user, gateway.callLog, Date.now(), { inflightRequests: running });
  if (!verdict.ok) {
    throw new GatewayError({
      status: 429,
      code: 'insufficient_quota',
      type: 'insufficient_quota',
      message: verdict.message,
      retryAfter: verdict.retryAfterSec,
      reason: verdict.kind === 'day' ? 'quota_day' : 'quota_month',
    });
  }
  gateway.userInflight.set(user.id, running + 1);
  let finished = false;
  return () => {
    if (finished) return;
    finished = true;
    const left = (gateway.userInflight.get(user.id) ?? 1) - 1;
    if (left > 0) gateway.userInflight.set(user.id, left);
    else gateway.userInflight.delete(user.id);
  };
}
