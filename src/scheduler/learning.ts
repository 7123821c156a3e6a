/**
 * What finished calls and jobs teach a backend's slots: the LLM figures (service-time.ts) of
 * the backend and of the call's model there, and media seconds per job by type key.
 */
import { countsAsCall, learnCall } from './service-time.ts';
import type { BackendSlots } from './slots.ts';
import { isJobSeconds, nextSpeed } from './speed.ts';
import type { SpeedSample } from './types.ts';

/** Learns one finished call into the backend's figures and its model's; a sample that does not count is ignored. */
export function learnSpeed(slots: BackendSlots, sample: SpeedSample): void {
  if (!countsAsCall(sample)) return;
  const figures = (slots.service ??= { samples: 0 });
  learnCall(figures, sample);
  slots.speed = figures.decodeRate;
  if (sample.model === undefined) return;
  const byModel = (slots.serviceByModel ??= new Map());
  let perModel = byModel.get(sample.model);
  if (!perModel) byModel.set(sample.model, (perModel = { samples: 0 }));
  learnCall(perModel, sample);
}

/** Feeds the seconds-per-job EWMA of one type key (generation alias); ignored unless finite and > 0. */
export function learnJobSeconds(slots: BackendSlots, typeKey: string, seconds: number): void {
  if (!isJobSeconds(seconds)) return;
  const perKey = (slots.jobSeconds ??= new Map());
  perKey.set(typeKey, nextSpeed(perKey.get(typeKey), seconds));
}
