/**
 * The local wait of a call across all of its unpaid boxes together, for the spill rule. Each
 * box's own prediction counts every call parked on it as ahead, but a call parked for a model
 * several boxes serve waits on all of them at once and leaves with the first slot: the queue is
 * shared, and so is the work of draining it. Pooled, the call gets the (ahead + 1)-th slot to
 * free (ahead: the longest of those queues), slots freeing at the boxes' combined rate (slots ÷
 * mean service time), then waits for the least swap among them. Pure.
 */
import { serviceSeconds, DEFAULT_SERVICE_S, type Ranked } from './prediction.ts';

/**
 * Seconds until one of `unpaid` (routable, scored) can start the call, pooled as above; never
 * more than the best single box's slot wait + swap (which it refines, not replaces).
 */
export function pooledLocalWait(unpaid: readonly Ranked[]): number {
  let best = Infinity;
  let rate = 0;
  let ahead = 0;
  let swap = Infinity;
  for (const { slots, candidate, prediction } of unpaid) {
    best = Math.min(best, prediction.slotWait + prediction.swap);
    const cap = slots.spec.cap;
    if (cap === 0) return 0; // an unlimited box takes it now
    rate += cap / (serviceSeconds(slots, candidate.model) ?? DEFAULT_SERVICE_S);
    ahead = Math.max(ahead, prediction.queued);
    swap = Math.min(swap, prediction.swap);
  }
  if (!(rate > 0)) return best;
  // its slot is the (ahead + 1)-th to free, slots freeing at the combined rate
  const pooled = (ahead + 1) / rate + (Number.isFinite(swap) ? swap : 0);
  return Math.min(best, pooled);
}
