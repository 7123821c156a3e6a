/**
 * The one score: predicted seconds to first token of a call on a candidate,
 *
 *     wait for a slot + swap (when the model is not resident) + prefill
 *
 * from the scheduler's own state (slots, parked waiters) and what completed calls taught
 * (service-time.ts). Pure: no clock, no I/O; residency is passed in as the fleet view said it.
 */
import { swapSecondsFor } from './swap-cost.ts';
import { hasFreeSlot, occupied, type BackendSlots } from './slots.ts';
import type { Candidate } from './types.ts';

/** Seconds a never-measured box is assumed to hold a slot, for the wait behind its busy slots. */
export const DEFAULT_SERVICE_S = 10;
/**
 * Seconds a model load is assumed to take on a box that never had one measured: the middle of
 * what llama-swap boxes take (4–9 s for 8–30B models from NVMe), so an unmeasured swap is
 * neither free nor a reason to spill.
 */
export const DEFAULT_SWAP_S = 8;

/**
 * What a call running beside n − 1 others on one box gets of the box's speed: parallel slots
 * batch, so n calls together go about 1 + 0.6·(n − 1) times one call's speed (llama.cpp and
 * vLLM on one GPU), each getting its share of that. A free slot on a busy box is slower than an
 * idle box's.
 */
export const BATCH_GAIN_PER_EXTRA_CALL = 0.6;

/** How much slower a call runs beside `others` calls on its box than alone (1 when alone). */
export function sharingSlowdown(others: number): number {
  if (!(others > 0)) return 1;
  const n = others + 1;
  return n / (1 + BATCH_GAIN_PER_EXTRA_CALL * others);
}

/** What the score says of one candidate. */
export interface Prediction {
  /** Seconds until a slot it can use frees (a non-resident model also waits for the box to drain). */
  slotWait: number;
  /** Seconds of model load: 0 unless the box is known not to hold the model. */
  swap: number;
  /**
   * Seconds of prompt evaluation (slowed by the calls it would run beside, when it starts now);
   * 0 when the prompt size or the box's prefill rate is unknown.
   */
  prefill: number;
  /** slotWait + swap + prefill: predicted seconds to first token. */
  total: number;
  /** It can start now: a free slot, and the model resident (or unknown), or the box idle. */
  freeNow: boolean;
  /** The box never completed a call (no service time learnt): it is tried once, first. */
  unmeasured: boolean;
  /** Residency unknown and the box's last lease ran this model: a tie-break toward it. */
  affinity: boolean;
  /** Calls parked on the box (ahead of this one). */
  queued: number;
}

/** What the fleet view says of the model there, and of the model the box was last given. */
export interface Residency {
  /** Whether the candidate's model is loaded there; undefined = not known. */
  model: boolean | undefined;
  /**
   * Whether the box's last lease's model (when another) is loaded there: false while the box is
   * still loading it (or about to), so no other model can start beside it. Undefined = not known.
   */
  lastTypeKey: boolean | undefined;
}

/**
 * Whether a call for `model` may start on the box now, as far as the model goes (its slot is
 * checked apart): on an idle box always; on a busy one when its latest lease is for the same
 * model (loaded, or loading for that lease: one load serves both), or when the model is resident
 * (or unknown) and the box is not loading another model for its latest lease. A slot is not a
 * model: a call that needs a load on a busy box would only queue inside the box.
 */
export function runnableBeside(slots: BackendSlots, model: string, residency: Residency): boolean {
  if (occupied(slots) === 0 || slots.lastTypeKey === model) return true;
  if (residency.model === false) return false;
  return slots.lastTypeKey === undefined || residency.lastTypeKey !== false;
}

/** Mean seconds a call of `model` holds a slot there; undefined = never measured. */
export function serviceSeconds(slots: BackendSlots, model: string): number | undefined {
  return slots.serviceByModel?.get(model)?.serviceSeconds ?? slots.service?.serviceSeconds;
}

/** Learnt seconds to load `model` there, else the mean of the box's learnt loads, else DEFAULT_SWAP_S. */
export function swapSeconds(slots: BackendSlots, model: string): number {
  return swapSecondsFor(slots, model) ?? DEFAULT_SWAP_S;
}

/**
 * Prompt tokens per output token a box evaluates in the same time, for a box whose prefill was
 * never measured (non-stream answers without timings cannot tell it apart): GPUs prefill some
 * 15–40 times faster than they decode, so 15 errs on the slow side. Without it such a box would
 * look as if it prefilled instantly and win every call over a measured one.
 */
export const PREFILL_PER_DECODE = 15;

/**
 * Seconds to evaluate `promptTokens` there: by the learnt prefill rate (the model's, else the
 * box's), else by `PREFILL_PER_DECODE` × its decode rate; 0 when the prompt size or both rates
 * are unknown.
 */
export function prefillSeconds(slots: BackendSlots, model: string, promptTokens: number | undefined): number {
  if (!(typeof promptTokens === 'number' && promptTokens > 0)) return 0;
  const own = slots.serviceByModel?.get(model);
  const decode = own?.decodeRate ?? slots.service?.decodeRate;
  const learnt = own?.prefillRate ?? slots.service?.prefillRate;
  const rate = learnt ?? (decode === undefined ? undefined : decode * PREFILL_PER_DECODE);
  return rate !== undefined && rate > 0 ? promptTokens / rate : 0;
}

/**
 * Seconds until a slot frees for one more call behind `queued` parked ones. Resident (or
 * unknown): the calls beyond the cap's free slots, each a mean service time, spread over the
 * cap's slots. Not resident: the box drains first (llama-swap finishes its calls before a swap).
 */
export function slotWaitSeconds(
  slots: BackendSlots,
  model: string,
  resident: boolean | undefined,
  queued: number,
): number {
  const cap = slots.spec.cap;
  const service = serviceSeconds(slots, model) ?? DEFAULT_SERVICE_S;
  if (resident === false) return ((occupied(slots) + queued) * service) / Math.max(cap, 1);
  if (cap === 0) return 0;
  const ahead = occupied(slots) + queued - cap + 1;
  return ahead > 0 ? (ahead * service) / cap : 0;
}

/**
 * The score of `model` on the box for a call of `promptTokens`, with `queued` parked waiters
 * ahead of it there. A free slot it can use now (`freeNow`) has no slot wait, whoever is parked:
 * hand-off serves waiters that can run first, and the ones left cannot use the slot.
 */
export function predict(
  slots: BackendSlots,
  model: string,
  promptTokens: number | undefined,
  residency: Residency,
  queued: number,
): Prediction {
  const freeNow = hasFreeSlot(slots) && runnableBeside(slots, model, residency);
  const resident = residency.model;
  const slotWait = freeNow ? 0 : slotWaitSeconds(slots, model, resident, queued);
  const swap = resident === false ? swapSeconds(slots, model) : 0;
  // a call that starts now shares the box with the calls running there
  const prefill = prefillSeconds(slots, model, promptTokens) * (freeNow ? sharingSlowdown(slots.inflight) : 1);
  return {
    slotWait,
    swap,
    prefill,
    total: slotWait + swap + prefill,
    freeNow,
    unmeasured: slots.service?.serviceSeconds === undefined,
    affinity: resident === undefined && slots.lastTypeKey === model,
    queued,
  };
}

/** One candidate as the order sees it. */
export interface Scored {
  readonly paid: boolean;
  /** Output tokens per second (the last tie-break); undefined = never measured. */
  readonly speed: number | undefined;
  readonly prediction: Prediction;
}

/** Whether a candidate is tried first to get measured: never measured, free now, its model not known absent. */
function triedOnce(p: Prediction): boolean {
  return p.unmeasured && p.freeNow && p.swap === 0;
}

/**
 * Scheduler preference (negative = `a` first): unpaid before paid; then a never-measured
 * candidate that can start now without a load (so it gets measured once); then the smallest
 * predicted time to first token; then affinity (the box last ran the model, residency unknown);
 * then the fastest decode. 0 = keep candidate order.
 */
export function compareScored(a: Scored, b: Scored): number {
  if (a.paid !== b.paid) return a.paid ? 1 : -1;
  const pa = a.prediction;
  const pb = b.prediction;
  const aOnce = triedOnce(pa);
  const bOnce = triedOnce(pb);
  if (aOnce || bOnce) return aOnce === bOnce ? 0 : aOnce ? -1 : 1;
  if (pa.total !== pb.total) return pa.total - pb.total;
  if (pa.affinity !== pb.affinity) return pa.affinity ? -1 : 1;
  if (a.speed === undefined || b.speed === undefined) return 0;
  return b.speed - a.speed;
}

/** Whole seconds for a message: at least 1 once above 0. */
export function wholeSeconds(seconds: number): number {
  return seconds > 0 ? Math.max(1, Math.round(seconds)) : 0;
}

/** A routable candidate with its score, as `Scheduler` ranks them. */
export interface Ranked extends Scored {
  readonly candidate: Candidate;
  readonly slots: BackendSlots;
}
