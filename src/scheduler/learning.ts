/** What finished media jobs teach a backend's slots: seconds per job by type key (LLM calls: learn-speed.ts). */
import type { BackendSlots } from './slots.ts';
import { isJobSeconds, nextSpeed } from './speed.ts';

/** Feeds the seconds-per-job EWMA of one type key (generation alias); ignored unless finite and > 0. */
export function learnJobSeconds(slots: BackendSlots, typeKey: string, seconds: number): void {
  if (!isJobSeconds(seconds)) return;
  const perKey = (slots.jobSeconds ??= new Map());
  perKey.set(typeKey, nextSpeed(perKey.get(typeKey), seconds));
}
