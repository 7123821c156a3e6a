/**
 * The scheduler's view of who is calling (`TicketUser`): one fair-share user per gateway user,
 * with its `share` and `max_inflight`; one for the master key, one for every anonymous caller
 * together (each of those weighs 1 and has no cap).
 */
import type { Caller } from '../auth/authenticator.ts';
import type { TicketUser } from '../scheduler/index.ts';

/** Fair-share weight of a user that sets none, of the master key and of anonymous callers. */
export const DEFAULT_SHARE = 1;

export function ticketUserOf(caller: Caller): TicketUser {
  const user = caller.user;
  if (user) return { key: `u:${user.id}`, share: shareOf(user.share), maxInflight: maxInflightOf(user.max_inflight) };
  return { key: caller.kind === 'master' ? 'master' : 'anon', share: DEFAULT_SHARE, maxInflight: 0 };
}

/** A stored share as the scheduler takes it: a positive finite number, else the default. */
function shareOf(share: number | undefined): number {
  return typeof share === 'number' && Number.isFinite(share) && share > 0 ? share : DEFAULT_SHARE;
}

/** A stored cap as the scheduler takes it: a whole number of calls, 0 (null, absent) for none. */
function maxInflightOf(cap: number | null | undefined): number {
  return typeof cap === 'number' && Number.isInteger(cap) && cap > 0 ? cap : 0;
}
