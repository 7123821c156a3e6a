/** UTC calendar periods the quotas and the daily rollup use. Pure. */

export const DAY_MS = 86_400_000;

/** Days since the epoch (UTC) of a unix-ms instant. */
export function utcDayNumber(ms: number): number {
  return Math.floor(ms / DAY_MS);
}

/** Start (unix ms) of the UTC day holding `ms`. */
export function startOfUtcDay(ms: number): number {
  return utcDayNumber(ms) * DAY_MS;
}

/** Start (unix ms) of the UTC calendar month holding `ms`. */
export function startOfUtcMonth(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/** Start (unix ms) of the next UTC calendar month (December rolls into January). */
export function startOfNextUtcMonth(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}
