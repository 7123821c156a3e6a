/**
 * Where a parked waiter stands: its position for keep-alive comments, and the calls ahead of it
 * per backend for a refusal's "N ahead". Scans of the parked list, for rare events only.
 */
import type { AheadCount } from './types.ts';
import type { Waiter } from './waiter.ts';

type GroupOf = (backend: string) => object | undefined;

/** Whether `other` waits on one of `waiter`'s backends, or on a backend of one of their GPU groups. */
function competitorTest(waiter: Waiter, groupOf: GroupOf): (other: Waiter) => boolean {
  const groups = new Set<object>();
  for (const backend of waiter.typeKeysByBackend.keys()) {
    const group = groupOf(backend);
    if (group) groups.add(group);
  }
  const competes = (backend: string): boolean => {
    if (waiter.typeKeysByBackend.has(backend)) return true;
    const group = groups.size > 0 ? groupOf(backend) : undefined;
    return group !== undefined && groups.has(group);
  };
  return (other) => {
    for (const backend of other.typeKeysByBackend.keys()) if (competes(backend)) return true;
    return false;
  };
}

/**
 * Where `waiter` stands among `parked` (oldest first) in the fair order, counting the waiters
 * that wait on one of its backends, or on a backend in the same GPU group (`groupOf`) as one of
 * them: 1 + the older ones of its own user + for each other user, as many of theirs as the
 * rounds of the fair share serve while its own user's go (its older ones and itself), in
 * proportion to the shares, at most all of that user's. In each round a user served less so
 * far (`virtualTime`) goes first, and between equals the older call. An estimate: it leaves out
 * the overdue rule. With one user it is exact: 1 + the older waiters.
 * O(parked × backends).
 */
export function positionOf(
  waiter: Waiter,
  parked: Iterable<Waiter>,
  groupOf: GroupOf,
  virtualTime: (user: string) => number = () => 0,
): number {
  const competes = competitorTest(waiter, groupOf);
  const mine = waiter.user.key;
  let ownAhead = 0;
  const others = new Map<string, { older: number; younger: number; share: number }>();
  for (const other of parked) {
    if (other === waiter) continue;
    const key = other.user.key;
    if (key === mine && other.seq > waiter.seq) continue;
    if (!competes(other)) continue;
    if (key === mine) {
      ownAhead++;
      continue;
    }
    let entry = others.get(key);
    if (!entry) others.set(key, (entry = { older: 0, younger: 0, share: other.user.share }));
    if (other.seq < waiter.seq) entry.older++;
    else entry.younger++;
  }
  const myShare = waiter.user.share > 0 ? waiter.user.share : 1;
  const myTime = virtualTime(mine);
  let ahead = ownAhead;
  for (const [key, { older, younger, share }] of others) {
    const ratio = (share > 0 ? share : 1) / myShare;
    const round = Math.ceil((ownAhead + 1) * ratio);
    const theirTime = virtualTime(key);
    // the rounds up to this waiter's turn: a user served less so far goes first in each round, one
    // served more after; between equals the older call goes first
    if (theirTime < myTime) ahead += Math.min(round, older + younger);
    else if (theirTime > myTime) ahead += Math.min(Math.ceil(ownAhead * ratio), older + younger);
    else ahead += Math.min(round, older + Math.min(younger, Math.ceil(ownAhead * ratio)));
  }
  return ahead + 1;
}

/**
 * How many older waiters `aheadByBackend` looks at, at most: the default `max_parked`, so the
 * count is exact with the defaults, and a short wait behind thousands of long ones costs a
 * bounded scan (measured: 10,000 waits ending youngest first cost what they cost before).
 */
export const AHEAD_SCAN_LIMIT = 100;

/**
 * For each backend of `waiter`: the waiters of `parked` (oldest first) older than it that wait
 * on that backend or on one in its GPU group (`groupOf`), i.e. the calls served there before
 * it in arrival order (the fair share may have served some younger ones of other users first).
 * For a refusal's "N ahead", run only when a wait ends unserved: O(min(older waiters,
 * `limit`) × their backends × its backends). Waits that end in arrival order find the older
 * ones gone; the limit bounds the rest (a short wait behind thousands of long ones).
 */
export function aheadByBackend(
  waiter: Waiter,
  parked: Iterable<Waiter>,
  groupOf: GroupOf,
  limit = AHEAD_SCAN_LIMIT,
): AheadCount {
  const mine = [...waiter.typeKeysByBackend.keys()].map((backend) => ({ backend, group: groupOf(backend) }));
  const ahead = new Map(mine.map(({ backend }) => [backend, 0]));
  let seen = 0;
  for (const other of parked) {
    if (other.seq >= waiter.seq) break;
    if (seen++ === limit) return { byBackend: ahead, atLeast: true };
    for (const { backend, group } of mine) {
      if (other.typeKeysByBackend.has(backend) || (group !== undefined && inGroup(other, group, groupOf))) {
        ahead.set(backend, ahead.get(backend)! + 1);
      }
    }
  }
  return { byBackend: ahead, atLeast: false };
}

function inGroup(waiter: Waiter, group: object, groupOf: GroupOf): boolean {
  for (const backend of waiter.typeKeysByBackend.keys()) if (groupOf(backend) === group) return true;
  return false;
}
