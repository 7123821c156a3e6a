/**
 * Keys and refusals on the way of one attempt. A pooled backend's attempt takes the pool's next
 * key; an answer that refuses it before any body is relayed (429, 401, 403) mutes that key, and
 * while another key is usable the proxy tries it on the same lease before any other candidate.
 * With every key muted the backend rests (the scheduler skips it) until the first comes back,
 * and is marked down instead when every key was refused (401/403). A sole `api_key` that gets a
 * 429 rests for its Retry-After, else a growing backoff. A backend without a key pays nothing.
 */
import type { BackendState, BackendRegistry } from '../backends/registry.ts';
import { rateLimitMs, type MuteReason } from '../backends/key-pool.ts';
import type { AttemptEnd } from './attempt-end.ts';
import type { HealthEffect } from './classify.ts';
import type { UpstreamHeaders } from './forward.ts';

/** What a refused key means for the attempt: try the next key here, or leave the backend (with its health effect). */
export interface KeyTurn {
  rotate: boolean;
  health?: HealthEffect;
}

const KEY_STATUSES: ReadonlySet<number> = new Set([401, 403, 429]);

/** Whether `status` may mute the attempt's key (a keyed backend's 429, 401 or 403). */
export function refusesKey(status: number, backend: BackendState, key: string | undefined): boolean {
  return KEY_STATUSES.has(status) && (key !== undefined || backend.spec.api_key !== undefined);
}

/**
 * The upstream answered `status` to `key` (the pool's; undefined for a sole api_key): mutes it,
 * rests the backend when nothing is left, and says what the attempt does next.
 */
export function keyRefused(
  registry: Pick<BackendRegistry, 'rest' | 'keyRejected'>,
  backend: BackendState,
  key: string | undefined,
  status: number,
  headers: UpstreamHeaders,
  now: number,
): KeyTurn {
  const reason = status as MuteReason;
  const retryAfter = headers['retry-after'];
  const pool = backend.keys;
  if (!pool || key === undefined) {
    // a sole key: a 401/403 marks the backend down as ever (classify.ts); a 429 rests it
    if (reason !== 429) return { rotate: false };
    backend.restStrikes = (backend.restStrikes ?? 0) + 1;
    registry.rest(backend.name, now + rateLimitMs(retryAfter, backend.restStrikes, now), 429);
    return { rotate: false };
  }
  pool.refused(key, reason, retryAfter, now);
  registry.keyRejected({ backend: backend.name, key_hint: pool.hintOf(key) ?? '', status: reason });
  if (pool.usable(now)) return { rotate: true };
  if (pool.allRefused(now)) return { rotate: false, health: 'auth' };
  registry.rest(backend.name, pool.nextUsableAt(now), reason);
  return { rotate: false, health: 'none' };
}

/**
 * A lease on a pooled backend whose every key is muted (since the lease was granted, or a reload
 * kept muted keys and lifted the rest): it rests until the first comes back; the call moves on.
 */
export function keysExhausted(registry: Pick<BackendRegistry, 'rest'>, backend: BackendState, now: number): AttemptEnd {
  const pool = backend.keys!;
  registry.rest(backend.name, pool.nextUsableAt(now), pool.states(now).find((k) => k.reason)?.reason ?? 429);
  return { health: 'none', error: { kind: 'upstream', status: 429, detail: 'every key is muted' }, failover: true };
}

/** An attempt with `key` was accepted (2xx): its backoff starts again. */
export function keyServed(backend: BackendState, key: string | undefined): void {
  if (key !== undefined) backend.keys?.served(key);
  else backend.restStrikes = 0;
}
