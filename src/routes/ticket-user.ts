/**
 * The scheduler's view of who is calling (`TicketUser`): one fair-share user per gateway user,
 * one for the master key, one for every anonymous caller together.
 */
import type { Caller } from '../auth/authenticator.ts';
import type { TicketUser } from '../scheduler/index.ts';

/** Fair-share weight of a user that sets none, of the master key and of anonymous callers. */
export const DEFAULT_SHARE = 1;

export function ticketUserOf(caller: Caller): TicketUser {
  if (caller.user) return { key: `u:${caller.user.id}`, share: DEFAULT_SHARE, maxInflight: 0 };
  return { key: caller.kind === 'master' ? 'master' : 'anon', share: DEFAULT_SHARE, maxInflight: 0 };
}
