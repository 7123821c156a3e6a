import type { SpeedSample } from './types.ts';

/** Weight of the newest sample in the speed average. */
export const SPEED_EWMA_ALPHA = 0.3;
/** Shorter answers say more about latency than throughput, so they are not counted. */
export const MIN_OUTPUT_TOKENS_FOR_SPEED = 16;

/** Output tokens per second of a sample, or undefined when the sample must not count. */
export function tokensPerSecond(sample: SpeedSample): number | undefined {
  if (sample.status !== 200) return undefined;
  if (!(sample.outputTokens >= MIN_OUTPUT_TOKENS_FOR_SPEED)) return undefined;
  if (!(sample.seconds > 0) || !Number.isFinite(sample.seconds)) return undefined;
  return sample.outputTokens / sample.seconds;
}

/** The next speed estimate: the first sample as is, then an EWMA with α 0.3. */
export function nextSpeed(previous: number | undefined, sample: number): number {
  return previous === undefined ? sample : SPEED_EWMA_ALPHA * sample + (1 - SPEED_EWMA_ALPHA) * previous;
}

/** Whether a media job's duration may feed the seconds-per-job average (finite and > 0). */
export function isJobSeconds(seconds: number): boolean {
  return typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0;
}
