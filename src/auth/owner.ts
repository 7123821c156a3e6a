/**
 * Who owns what a call leaves behind: a stored or background response, the output items kept
 * for `item_reference`, a native backend's response id, a media job. One rule for every room
 * (docs/decisions.md, "One owner rule for an open gateway"): `user:<id>` for a user's key,
 * `master` for the master key, and while the gateway is open (no key at all: every caller is
 * anonymous) `ip:<address>`, the client's address. Each address owns its own, so an open gateway
 * is not a place where every caller's jobs and conversations are one heap; they stay apart when
 * the gateway is closed later (then only admins see them). Pure.
 */
import type { Caller } from './authenticator.ts';

export type OwnerKind = Caller['kind'];

/** The owner of what `caller`, calling from `ip` (the request's address as `trust_proxy` reads it), leaves. */
export function ownerOf(caller: Pick<Caller, 'kind' | 'user'>, ip: string): string {
  if (caller.kind === 'user' && caller.user) return `user:${caller.user.id}`;
  return caller.kind === 'anonymous' ? `ip:${ip}` : 'master';
}

/** The kind of caller an owner names: the inverse of `ownerOf`. */
export function ownerKind(owner: string): OwnerKind {
  return owner === 'master' ? 'master' : owner.startsWith('user:') ? 'user' : 'anonymous';
}

/** Whether `viewer` (a caller's own owner) may see or act on what `owner` left: its own, anyone's for an admin. */
export function mayAccess(owner: string, viewer: string, isAdmin: boolean): boolean {
  return isAdmin || owner === viewer;
}
