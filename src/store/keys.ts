/** API key primitives: generation, constant-time comparison, extraction from request headers. */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Bytes of randomness in a generated key (256 bits; the floor is 192). */
export const KEY_RANDOM_BYTES = 32;
/** Shortest key a user may paste instead of a generated one. */
export const MIN_PASTED_KEY_LENGTH = 16;

/** A fresh `sk-` key: base64url of 32 random bytes. */
export function generateKey(): string {
  return `sk-${randomBytes(KEY_RANDOM_BYTES).toString('base64url')}`;
}

/**
 * A constant-time test of candidates against one expected key. Both sides are hashed, so not
 * even the lengths leak; the expected key's digest is computed once.
 */
export function keyMatcher(expected: string): (candidate: string) => boolean {
  const digest = sha256(expected);
  const seen = new DigestMemo();
  return (candidate) => timingSafeEqual(seen.digest(candidate), digest);
}

const sha256 = (text: string): Buffer => hash('sha256', text, 'buffer'); // one-shot: no Hash object per call

/** How many candidates' digests a matcher remembers (a client sends the same key call after call). */
const REMEMBERED_DIGESTS = 256;

/**
 * The digests of the last candidates seen, so a client's key is hashed once, not per call. Held
 * in memory only, bounded (the oldest goes first); a flood of wrong keys only makes them slower.
 */
class DigestMemo {
  private readonly digests = new Map<string, Buffer>();

  digest(candidate: string): Buffer {
    let known = this.digests.get(candidate);
    if (known) return known;
    known = sha256(candidate);
    if (this.digests.size >= REMEMBERED_DIGESTS) this.digests.delete(this.digests.keys().next().value as string);
    this.digests.set(candidate, known);
    return known;
  }
}

/** A safe-to-show hint of a key: `sk-…wxyz` (or `…wxyz` for keys without the `sk-` prefix). */
export function keyHint(key: string): string {
  return `${key.startsWith('sk-') ? 'sk-' : ''}…${key.slice(-4)}`;
}
