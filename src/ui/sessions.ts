/**
 * Console sessions: a random id in a signed, HttpOnly, SameSite=Strict cookie, mapped here to
 * who logged in and until when (12 h). Kept in memory: a restart logs everyone out, and a
 * logout ends the session at once (a signed cookie alone could not be revoked). A session
 * remembers the digest of the key it logged in with and is re-checked against the live state
 * on every request, and every second by an open event stream (src/ui/auth.ts `stillViewing`):
 * a disabled or demoted user, a rotated user key, or a changed master key ends it.
 * In cluster mode the same API is backed by Redis (src/ui/cluster-stores.ts, `SessionStore`).
 */
import { createHash, randomBytes } from 'node:crypto';

export const SESSION_COOKIE = 'gw_ui';
export const SESSION_TTL_MS = 12 * 3_600_000;
/** Sessions held at most; the oldest goes first (a flood of logins cannot grow memory). */
const MAX_SESSIONS = 1_000;

export type SessionWho =
  /** `keyDigest`: sha256 of the master key logged in with (`keyDigest` below). */
  | { kind: 'master'; keyDigest: string }
  /** `keyDigest`: the users repository's digest of the user's key at login (`UsersRepo.digestOf`). */
  | { kind: 'user'; userId: number; keyDigest: string };

export interface Session {
  id: string;
  who: SessionWho;
  /** Shown in the header. */
  name: string;
  expiresAt: number;
}

/**
 * Where sessions live: this process (`Sessions`, synchronous) or the cluster's Redis (promises). Callers
 * take the value as it comes, so the single-instance path never waits on a promise.
 */
export interface SessionStore {
  create(who: SessionWho, name: string, now: number): Session | Promise<Session>;
  get(id: string | undefined, now: number): Session | undefined | Promise<Session | undefined>;
  delete(id: string | undefined): void | Promise<void>;
}

export function keyDigest(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export class Sessions implements SessionStore {
  private readonly byId = new Map<string, Session>();

  create(who: SessionWho, name: string, now: number): Session {
    if (this.byId.size >= MAX_SESSIONS) this.byId.delete(this.byId.keys().next().value!);
    const session = { id: randomBytes(24).toString('base64url'), who, name, expiresAt: now + SESSION_TTL_MS };
    this.byId.set(session.id, session);
    return session;
  }

  get(id: string | undefined, now: number): Session | undefined {
    if (!id) return undefined;
    const session = this.byId.get(id);
    if (!session) return undefined;
    if (session.expiresAt <= now) {
      this.byId.delete(id);
      return undefined;
    }
    return session;
  }

  delete(id: string | undefined): void {
    if (id) this.byId.delete(id);
  }
}
