/**
 * Failed console logins per client address: after `max` failures within a minute the address
 * is refused (429) until the minute is over. Only failures count, so an admin logging in
 * often is never locked out; a guesser is held to a few keys a minute. Bounded memory.
 * In cluster mode the count is Redis's (src/ui/cluster-stores.ts), shared by every instance.
 */
export const WINDOW_MS = 60_000;
const MAX_ADDRESSES = 10_000;

/** This process's count (`LoginThrottle`, synchronous) or the cluster's (promises). */
export interface ThrottleStore {
  retryAfter(address: string, now: number): number | Promise<number>;
  failed(address: string, now: number): void | Promise<void>;
}

export class LoginThrottle implements ThrottleStore {
  private readonly failures = new Map<string, { count: number; since: number }>();

  constructor(private readonly max: number) {}

  /** Seconds until the address may try again; 0 = it may now. */
  retryAfter(address: string, now: number): number {
    const entry = this.failures.get(address);
    if (!entry || now - entry.since >= WINDOW_MS) return 0;
    return entry.count >= this.max ? Math.ceil((entry.since + WINDOW_MS - now) / 1000) : 0;
  }

  failed(address: string, now: number): void {
    const entry = this.failures.get(address);
    if (entry && now - entry.since < WINDOW_MS) {
      entry.count++;
      return;
    }
    if (this.failures.size >= MAX_ADDRESSES) this.failures.delete(this.failures.keys().next().value!);
    this.failures.set(address, { count: 1, since: now });
  }
}
