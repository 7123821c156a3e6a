/**
 * What one completed call teaches about its backend: decode rate (output tok/s), prefill rate
 * (prompt tok/s) and mean service time (seconds a call holds a slot). Pure math, no clock:
 * the sample carries the durations the proxy measured.
 *
 * Every completed call counts, stream or not, short or long. A short answer says little about
 * throughput, so a sample's weight grows with its tokens: α = 0.3 × min(1, tokens / 16). The
 * first sample is taken as is, so one call of any size makes a backend measured.
 *
 * A call that needed a model load (`neededLoad`) is honest about it: its load is not prefill,
 * decode or service. What still holds is learnt: llama.cpp timings (they time the work alone)
 * and a stream's decode after its first token. Its time to first token does not feed the
 * prefill rate, and a non-stream answer without timings does not feed the decode rate (its load
 * would count as one or the other). Its service time is learnt net of the load (its own swap
 * residual, swap-cost.ts, else the learnt swap figure; neither: not learnt): the score adds a
 * swap on its own for a call that needs one, so the mean stays what a warm call holds a slot,
 * and a box that swaps on most calls still gets one.
 */
import type { SpeedSample } from './types.ts';

/** Weight of a full-size sample (≥ 16 tokens) in the averages. */
export const SPEED_EWMA_ALPHA = 0.3;
/** Tokens at which a sample weighs a full α; fewer weigh in proportion. */
export const FULL_WEIGHT_TOKENS = 16;
/** At most this share of a non-stream call's time is taken as prefill (the rest is decode). */
const MAX_PREFILL_SHARE = 0.5;

/** The learnt figures of one backend (or of one model on it). */
export interface ServiceFigures {
  /** EWMA of output tokens per second while decoding; undefined = never measured. */
  decodeRate?: number;
  /** EWMA of prompt tokens per second while prefilling; undefined = never measured. */
  prefillRate?: number;
  /** EWMA of seconds a completed call held its slot; undefined = never measured. */
  serviceSeconds?: number;
  /** Completed calls learnt from. */
  samples: number;
}

/** A rate measured by one call and the tokens behind it (its weight). */
export interface RateSample {
  rate: number;
  tokens: number;
}

const positive = (n: number | undefined): n is number => typeof n === 'number' && Number.isFinite(n) && n > 0;

/** α for a sample of `tokens` tokens: full at ≥ 16, in proportion below. */
export function alphaFor(tokens: number): number {
  return SPEED_EWMA_ALPHA * Math.min(1, tokens / FULL_WEIGHT_TOKENS);
}

/** The next average: the first sample as is, then an EWMA with α scaled by the sample's tokens. */
export function nextRate(previous: number | undefined, sample: RateSample): number {
  if (previous === undefined) return sample.rate;
  const alpha = alphaFor(sample.tokens);
  return alpha * sample.rate + (1 - alpha) * previous;
}

/**
 * Decode rate of a call. From llama.cpp timings (`predicted_n` / `predicted_ms`) when present;
 * else a stream's tokens after the first over the time after the first token; else (non-stream)
 * all output tokens over the call's time less its prefill, estimated from the learnt prefill
 * rate (at most half the call) or 0 when none is learnt; none for such a call that needed a load.
 */
export function decodeSample(sample: SpeedSample, prefillRate: number | undefined): RateSample | undefined {
  const t = sample.timings;
  if (t && positive(t.predictedN) && positive(t.predictedMs)) {
    return { rate: t.predictedN / (t.predictedMs / 1000), tokens: t.predictedN };
  }
  if (sample.firstTokenSeconds !== undefined) {
    const tokens = sample.outputTokens - 1;
    const seconds = sample.seconds - sample.firstTokenSeconds;
    return positive(tokens) && positive(seconds) ? { rate: tokens / seconds, tokens } : undefined;
  }
  if (sample.neededLoad) return undefined; // its time holds the load
  if (!positive(sample.outputTokens) || !positive(sample.seconds)) return undefined;
  const prefill = positive(sample.promptTokens) && positive(prefillRate) ? sample.promptTokens / prefillRate : 0;
  const seconds = sample.seconds - Math.min(prefill, sample.seconds * MAX_PREFILL_SHARE);
  return { rate: sample.outputTokens / seconds, tokens: sample.outputTokens };
}

/**
 * Prefill rate of a call. From timings (`prompt_n` / `prompt_ms`: tokens evaluated, cache hits
 * not counted) when present; else a stream's prompt tokens over its time to first token (which
 * may hold some queueing: an upper bound on prefill time), unless the call needed a load. A
 * non-stream call without timings cannot tell prefill from decode: none.
 */
export function prefillSample(sample: SpeedSample): RateSample | undefined {
  const t = sample.timings;
  if (t && positive(t.promptN) && positive(t.promptMs)) {
    return { rate: t.promptN / (t.promptMs / 1000), tokens: t.promptN };
  }
  if (sample.firstTokenSeconds === undefined || sample.neededLoad) return undefined;
  const tokens = sample.promptTokens;
  return positive(tokens) && positive(sample.firstTokenSeconds)
    ? { rate: tokens / sample.firstTokenSeconds, tokens }
    : undefined;
}

/** Whether a sample counts at all: a 200 that held its slot a finite, positive time. */
export function countsAsCall(sample: SpeedSample): boolean {
  return sample.status === 200 && positive(sample.seconds);
}

/**
 * Seconds the call held its slot as a warm call: all of them, or for a call that needed a load
 * its time less `loadSeconds` (undefined when that is unknown or leaves nothing).
 */
export function serviceSample(sample: SpeedSample, loadSeconds: number | undefined): number | undefined {
  if (!sample.neededLoad) return sample.seconds;
  if (loadSeconds === undefined || !Number.isFinite(loadSeconds)) return undefined;
  const net = sample.seconds - Math.max(0, loadSeconds);
  return positive(net) ? net : undefined;
}

/**
 * Learns one call into `figures` (in place); false when the sample does not count. The decode
 * part uses the prefill rate learnt before this call, so a call never explains itself.
 * `loadSeconds`: for a call that needed a load, what loading took (serviceSample).
 */
export function learnCall(figures: ServiceFigures, sample: SpeedSample, loadSeconds?: number): boolean {
  if (!countsAsCall(sample)) return false;
  const decode = decodeSample(sample, figures.prefillRate);
  const prefill = prefillSample(sample);
  const service = serviceSample(sample, loadSeconds);
  if (decode) figures.decodeRate = nextRate(figures.decodeRate, decode);
  if (prefill) figures.prefillRate = nextRate(figures.prefillRate, prefill);
  if (service !== undefined) {
    figures.serviceSeconds = nextRate(figures.serviceSeconds, { rate: service, tokens: FULL_WEIGHT_TOKENS });
  }
  figures.samples++;
  return true;
}
