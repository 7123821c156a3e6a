import { SPEED_EWMA_ALPHA } from './service-time.ts';

/** The next seconds-per-job estimate (media): the first sample as is, then an EWMA with α 0.3. */
export function nextSpeed(previous: number | undefined, sample: number): number {
  return previous === undefined ? sample : SPEED_EWMA_ALPHA * sample + (1 - SPEED_EWMA_ALPHA) * previous;
}

/** Whether a media job's duration may feed the seconds-per-job average (finite and > 0). */
export function isJobSeconds(seconds: number): boolean {
  return typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0;
}
