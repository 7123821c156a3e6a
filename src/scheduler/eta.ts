/**
 * Predicted waits of parked calls: for keep-alive comments (`eta_s=`), the queue views and a
 * refused wait's Retry-After. Pure: the scheduler passes how many wait ahead and the score.
 */
import type { Waiter } from './waiters.ts';

/** Parked calls, oldest first, whose ETA a snapshot computes (the rest have none): bounds its cost. */
export const SNAPSHOT_ETA_LIMIT = 256;
/** Retry-After of a refused wait when no ETA is known (seconds), and the bounds of one from an ETA. */
export const DEFAULT_RETRY_AFTER_S = 2;
const MAX_RETRY_AFTER_S = 3600;

/** Seconds until a slot for `typeKey` frees on `backend` behind `ahead` parked calls; undefined = not routable. */
export type WaitEstimate = (backend: string, typeKey: string, ahead: number) => number | undefined;

/**
 * The waiter's ETA: the smallest predicted wait over its backends, each with the calls parked
 * ahead of it there (`aheadOn`). Undefined when none of its backends is routable.
 */
export function waiterEta(
  waiter: Waiter,
  aheadOn: (backend: string) => number,
  estimate: WaitEstimate,
): number | undefined {
  let best: number | undefined;
  for (const [backend, typeKeys] of waiter.typeKeysByBackend) {
    const seconds = estimate(backend, typeKeys[0], aheadOn(backend));
    if (seconds !== undefined && (best === undefined || seconds < best)) best = seconds;
  }
  return best;
}

/**
 * ETAs of the oldest `limit` parked calls (oldest first), in one pass: each backend's count of
 * older calls seen so far is the number ahead there (its queue is in arrival order too).
 */
export function parkedEtas(
  parked: Iterable<Waiter>,
  estimate: WaitEstimate,
  limit = SNAPSHOT_ETA_LIMIT,
): Map<Waiter, number> {
  const etas = new Map<Waiter, number>();
  const seen = new Map<string, number>();
  let count = 0;
  for (const waiter of parked) {
    if (count++ === limit) break;
    const eta = waiterEta(waiter, (backend) => seen.get(backend) ?? 0, estimate);
    if (eta !== undefined) etas.set(waiter, eta);
    for (const backend of waiter.typeKeysByBackend.keys()) seen.set(backend, (seen.get(backend) ?? 0) + 1);
  }
  return etas;
}

/** Retry-After (seconds) for a call whose wait ran out: its ETA rounded up within [1, 3600], else 2. */
export function retryAfterFromEta(etaS: number | undefined): number {
  if (etaS === undefined || !Number.isFinite(etaS)) return DEFAULT_RETRY_AFTER_S;
  return Math.min(MAX_RETRY_AFTER_S, Math.max(1, Math.ceil(etaS)));
}

/** An ETA as shown: seconds to one decimal. */
export function shownEta(etaS: number): number {
  return Math.round(etaS * 10) / 10;
}
