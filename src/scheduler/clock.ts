/**
 * Time as the scheduler sees it. Injected so tests (and the benchmark) can drive time by hand;
 * production uses `systemClock`.
 */
export interface Clock {
  /** Milliseconds; only differences matter to the scheduler. */
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Node fires longer timers (and Infinity) after 1 ms, so delays are capped here (~24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The real clock: epoch milliseconds that never go backwards within the process
 * (`performance.timeOrigin + performance.now()`), and Node's own timers.
 */
export const systemClock: Clock = Object.freeze({
  now: () => performance.timeOrigin + performance.now(),
  setTimeout: (fn: () => void, ms: number): unknown => setTimeout(fn, Math.min(ms, MAX_TIMER_MS)),
  clearTimeout: (handle: unknown): void => clearTimeout(handle as ReturnType<typeof setTimeout>),
});
