/**
 * What the gateway knows of a box as it sends it a call, for that call's speed sample
 * (scheduler/swap-cost.ts): whether the call has to load its model, and whether the box was
 * busy. Read before the call moves residency. No I/O.
 *
 * A model counts as loading, not loaded, while a load a call started is likely still running:
 * it became resident by a call less than its learnt swap cost ago. A call sent then waits for
 * that load: it is marked as a load on a busy box, so it teaches neither prefill (its time to
 * first token holds the load) nor a swap cost (it saw only part of one).
 */
import type { ResidencyTracker } from './residency.ts';

/** The scheduler's reads used here (both O(1)). */
/** What the gateway knew of the box as it sent an attempt (ProxyDeps.onDispatch). */
export interface DispatchFacts {
  /** The box did not hold the model (residency said so): the attempt has to load it. */
  neededLoad: boolean;
  /** Other calls of the gateway were in flight on the box. */
  busy: boolean;
}

export interface SlotReads {
  swapSecondsOf(backend: string, model: string): number | undefined;
  /** Leases out on the backend, the dispatched call's own included. */
  inflightOf(backend: string): number;
}

/** Records the call in `residency` (observeCall) and says what the box was just before. */
export function dispatchFacts(
  residency: ResidencyTracker,
  slots: SlotReads,
  backend: string,
  model: string,
  now: number,
): DispatchFacts {
  const since = residency.residentSince(backend, model);
  const wasResident = residency.observeCall(backend, model, now);
  const swapSeconds = slots.swapSecondsOf(backend, model);
  const loading =
    wasResident === true && since !== undefined && swapSeconds !== undefined && now - since < swapSeconds * 1000;
  return { neededLoad: wasResident === false || loading, busy: loading || slots.inflightOf(backend) > 1 };
}
