/**
 * A backend's pool of API keys (`api_keys`): round robin over the keys not muted, a key muted
 * when the upstream refuses it (429: for its Retry-After, else a growing backoff; 401/403: ten
 * minutes, or until a reload changes the key), and each key's state as it may be shown (a hint,
 * never the key). Pure logic on the times it is given; the registry holds one per backend.
 */
import { keyHint } from '../store/keys.ts';

/** Why a key (or a sole key's backend) is muted: the status that refused it. */
export type MuteReason = 429 | 401 | 403;

/** A 401/403 mutes a key this long (a reload that changes the key lifts it). */
export const AUTH_MUTE_MS = 10 * 60_000;
/** A 429 without a usable Retry-After: 2 s, doubling per 429 in a row, capped at 2 min. */
export const BACKOFF_FIRST_MS = 2_000;
export const BACKOFF_MAX_MS = 120_000;
/** The shortest mute (a `Retry-After: 0` would make the next attempt the same key again). */
export const MIN_MUTE_MS = 1_000;
/** The longest Retry-After honoured (a date a day away is a misconfigured upstream). */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/** One key's state as /health and the console show it: masked. */
export interface KeyStateView {
  index: number;
  hint: string;
  state: 'ok' | 'muted';
  muted_until?: string;
  seconds_left?: number;
  reason?: MuteReason;
  /** Attempts sent with the key, answers that refused it (429 and 401/403). */
  uses: number;
  rate_limited: number;
  rejected: number;
}

interface KeyState {
  readonly key: string;
  mutedUntil: number;
  reason?: MuteReason;
  /** 429s in a row (the backoff's exponent); a served attempt resets it. */
  strikes: number;
  uses: number;
  rateLimited: number;
  rejected: number;
}

/** The mute a 429 gets: its Retry-After (seconds or an HTTP date) when it has one, else the backoff. */
export function rateLimitMs(retryAfter: string | string[] | undefined, strikes: number, now: number): number {
  const given = retryAfterMs(retryAfter, now);
  if (given !== undefined) return Math.min(MAX_RETRY_AFTER_MS, Math.max(MIN_MUTE_MS, given));
  return Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** Math.max(0, Math.min(strikes - 1, 16)));
}

/** `Retry-After` in ms from now: delta seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(header: string | string[] | undefined, now: number): number | undefined {
  const text = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!text) return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export class KeyPool {
  private readonly keys: KeyState[];
  private turn = 0;

  /** `previous`: the pool before a reload; a key it also held keeps its state (a changed key starts afresh). */
  constructor(keys: readonly string[], previous?: KeyPool) {
    const before = new Map(previous?.keys.map((k) => [k.key, k]));
    this.keys = keys.map((key) => before.get(key) ?? fresh(key));
  }

  get size(): number {
    return this.keys.length;
  }

  /** The next key not muted at `now` (round robin), counted as used; undefined when all are muted. */
  next(now: number): string | undefined {
    for (let i = 0; i < this.keys.length; i++) {
      const k = this.keys[(this.turn + i) % this.keys.length];
      if (k.mutedUntil > now) continue;
      this.turn = (this.turn + i + 1) % this.keys.length;
      k.uses++;
      return k.key;
    }
    return undefined;
  }

  /** A key not muted at `now`, without turning or counting (the gateway's own requests: discovery). */
  peek(now: number): string | undefined {
    return this.keys.find((k) => k.mutedUntil <= now)?.key ?? this.keys[0]?.key;
  }

  /** The upstream refused `key` with `status`: muted; returns until when (unix ms). */
  refused(key: string, status: MuteReason, retryAfter: string | string[] | undefined, now: number): number {
    const k = this.keys.find((s) => s.key === key);
    if (!k) return now;
    if (status === 429) {
      k.strikes++;
      k.rateLimited++;
      k.mutedUntil = now + rateLimitMs(retryAfter, k.strikes, now);
    } else {
      k.rejected++;
      k.mutedUntil = now + AUTH_MUTE_MS;
    }
    k.reason = status;
    return k.mutedUntil;
  }

  /** An attempt with `key` was accepted: its 429 backoff starts again from the first step. */
  served(key: string): void {
    const k = this.keys.find((s) => s.key === key);
    if (k) k.strikes = 0;
  }

  /** Whether some key is not muted at `now`. */
  usable(now: number): boolean {
    return this.keys.some((k) => k.mutedUntil <= now);
  }

  /** When the first muted key comes back (unix ms); `now` when one is usable already. */
  nextUsableAt(now: number): number {
    return this.usable(now) ? now : Math.min(...this.keys.map((k) => k.mutedUntil));
  }

  /** Whether every key is muted for a 401/403 (the backend's credential is refused, not rate-limited). */
  allRefused(now: number): boolean {
    return this.keys.every((k) => k.mutedUntil > now && (k.reason === 401 || k.reason === 403));
  }

  /** A hint of `key` (for an alert naming the refused key); undefined for a key not in the pool. */
  hintOf(key: string): string | undefined {
    const i = this.keys.findIndex((k) => k.key === key);
    return i < 0 ? undefined : hintAt(this.keys[i].key, i);
  }

  /** Every key's state at `now`, masked. */
  states(now: number): KeyStateView[] {
    return this.keys.map((k, index) => {
      const view: KeyStateView = {
        index,
        hint: hintAt(k.key, index),
        state: k.mutedUntil > now ? 'muted' : 'ok',
        uses: k.uses,
        rate_limited: k.rateLimited,
        rejected: k.rejected,
      };
      if (k.mutedUntil > now) {
        view.muted_until = new Date(k.mutedUntil).toISOString();
        view.seconds_left = Math.ceil((k.mutedUntil - now) / 1000);
        view.reason = k.reason;
      }
      return view;
    });
  }
}

function fresh(key: string): KeyState {
  return { key, mutedUntil: 0, strikes: 0, uses: 0, rateLimited: 0, rejected: 0 };
}

/** `#2 sk-…wxyz`: the position says which entry of `api_keys` it is, the last four which key. */
function hintAt(key: string, index: number): string {
  return `#${index + 1} ${key.length > 8 ? keyHint(key) : '…'}`;
}
