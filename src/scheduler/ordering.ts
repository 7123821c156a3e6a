/** What the pick order looks at for one backend. */
export interface Rankable {
  readonly paid: boolean;
  /** Output tokens per second; undefined = never measured. */
  readonly speed: number | undefined;
}

/**
 * Scheduler preference between two backends: unpaid before paid; then a never-measured backend
 * first (so it gets measured once); then the fastest. 0 = no preference (keep candidate order).
 */
export function compareBackends(a: Rankable, b: Rankable): number {
  if (a.paid !== b.paid) return a.paid ? 1 : -1;
  const aUnmeasured = a.speed === undefined;
  const bUnmeasured = b.speed === undefined;
  if (aUnmeasured || bUnmeasured) return aUnmeasured === bUnmeasured ? 0 : aUnmeasured ? -1 : 1;
  return b.speed! - a.speed!;
}
