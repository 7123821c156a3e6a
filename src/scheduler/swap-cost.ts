/**
 * Swap cost: what a model load adds to a call, per (backend, model). Pure math, no clock.
 *
 * A call that needed a load (`SpeedSample.neededLoad`: its model was not resident when it was
 * sent) took longer to its first token than the same call would have on a warm box. That
 * residual is its swap cost:
 *
 *     extra = observed − unloaded,  clamped at ≥ 0
 *
 * - observed: time to first token (stream), else the whole answer (non-stream);
 * - unloaded: the call's prefill (llama.cpp `prompt_ms` when reported, else prompt tokens ÷ the
 *   learnt prefill rate), plus, for a non-stream answer, its decode (`predicted_ms`, else output
 *   tokens ÷ the learnt decode rate). Rates are the model's, else the backend's, learnt from
 *   calls that needed no load (service-time.ts keeps loads out of the prefill rate).
 *
 * With no prefill rate learnt yet the prefill counts 0 (a chat prompt's prefill is small beside
 * a load of seconds: the figure is then an upper bound, corrected as later loads are learnt).
 * A non-stream answer whose decode cannot be told (no timings, no learnt decode rate) teaches no
 * swap cost: most of its time would be counted as loading. Nor does a load sent while the box
 * had other calls in flight (`busyAtDispatch`): it first waited for them to drain, a wait the
 * score counts on its own (calls ahead × service time).
 *
 * Per model, the figure is an EWMA (α 0.3, the first sample taken as is). The backend-wide
 * figure, the fallback for a model never loaded there, is the plain mean over its models'
 * figures: what loading "some model" costs on that box, each model weighing the same however
 * often it is loaded.
 */
import { countsAsCall, type ServiceFigures } from './service-time.ts';
import type { SpeedSample } from './types.ts';

/** Weight of a new load sample in a model's swap figure. */
export const SWAP_EWMA_ALPHA = 0.3;

/** What a backend's learnt swap figures are read from (`BackendSlots` has both fields). */
export interface SwapFigures {
  /** Learnt swap seconds by model id; absent = no load learnt yet. */
  swapSeconds?: Map<string, number>;
  /** Mean over `swapSeconds`' models; absent = none learnt. */
  swapSecondsMean?: number;
}

const positive = (n: number | undefined): n is number => typeof n === 'number' && Number.isFinite(n) && n > 0;

/** Learnt rate of the model, else of the backend; undefined when neither is measured. */
function rateOf(key: 'prefillRate' | 'decodeRate', model?: ServiceFigures, backend?: ServiceFigures) {
  const own = model?.[key];
  return positive(own) ? own : positive(backend?.[key]) ? backend![key] : undefined;
}

/**
 * Seconds the call would have taken to its first token (stream) or to its end (non-stream) on
 * a box that held its model; undefined when a non-stream answer's decode cannot be told.
 */
export function unloadedSeconds(
  sample: SpeedSample,
  model?: ServiceFigures,
  backend?: ServiceFigures,
): number | undefined {
  const t = sample.timings;
  let prefill = 0;
  if (t && positive(t.promptMs)) prefill = t.promptMs / 1000;
  else if (positive(sample.promptTokens)) {
    const rate = rateOf('prefillRate', model, backend);
    if (rate !== undefined) prefill = sample.promptTokens / rate;
  }
  if (sample.firstTokenSeconds !== undefined) return prefill;
  if (t && positive(t.predictedMs)) return prefill + t.predictedMs / 1000;
  if (!positive(sample.outputTokens)) return prefill;
  const rate = rateOf('decodeRate', model, backend);
  return rate === undefined ? undefined : prefill + sample.outputTokens / rate;
}

/**
 * The swap cost one call shows: seconds over what it would have taken without a load (≥ 0).
 * Undefined for a call that needed no load, did not count (not a 200), was sent to a busy box,
 * or cannot be told.
 */
export function swapResidual(
  sample: SpeedSample,
  model?: ServiceFigures,
  backend?: ServiceFigures,
): number | undefined {
  if (!sample.neededLoad || sample.busyAtDispatch || !countsAsCall(sample)) return undefined;
  const observed = sample.firstTokenSeconds ?? sample.seconds;
  if (!Number.isFinite(observed) || observed < 0) return undefined;
  const unloaded = unloadedSeconds(sample, model, backend);
  return unloaded === undefined ? undefined : Math.max(0, observed - unloaded);
}

/** The next swap figure: the first sample as is, then an EWMA of α 0.3. */
export function nextSwapSeconds(previous: number | undefined, extra: number): number {
  return previous === undefined ? extra : SWAP_EWMA_ALPHA * extra + (1 - SWAP_EWMA_ALPHA) * previous;
}

/** Mean of the figures; undefined when there are none. */
export function meanSwapSeconds(byModel: ReadonlyMap<string, number>): number | undefined {
  if (byModel.size === 0) return undefined;
  let sum = 0;
  for (const s of byModel.values()) sum += s;
  return sum / byModel.size;
}

/** Learns one load's `extra` seconds for `model` into `figures` (in place), the mean with it. */
export function learnSwap(figures: SwapFigures, model: string, extra: number): void {
  const byModel = (figures.swapSeconds ??= new Map());
  byModel.set(model, nextSwapSeconds(byModel.get(model), extra));
  figures.swapSecondsMean = meanSwapSeconds(byModel);
}

/**
 * What loading `model` is expected to cost on a backend: the model's learnt figure, else the
 * backend's mean over its models, else undefined (no load learnt there). O(1).
 */
export function swapSecondsFor(figures: SwapFigures, model: string): number | undefined {
  return figures.swapSeconds?.get(model) ?? figures.swapSecondsMean;
}
