import { kindOf, type BackendSlots } from './slots.ts';
import type { Candidate } from './types.ts';

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

/** What the pick order looks at for one media backend, for one type key (generation alias). */
export interface MediaRankable {
  readonly paid: boolean;
  /** EWMA of seconds per job of that alias there; undefined = never measured. */
  readonly secondsPerJob: number | undefined;
}

/**
 * Scheduler preference between two media backends for one alias: unpaid before paid; then a
 * backend that never ran the alias first; then the fewest seconds per job. 0 = keep order.
 *
 * Never-measured first is on purpose, the same rule `compareBackends` applies to tok/s: the
 * first measured box would otherwise win every time it is free, and a newly added (perhaps
 * faster) one would only get jobs that overflow, so its figure might never be learnt. Ranking
 * it first costs one job per alias and backend, then the figures decide.
 */
export function compareMediaBackends(a: MediaRankable, b: MediaRankable): number {
  if (a.paid !== b.paid) return a.paid ? 1 : -1;
  const aUnmeasured = a.secondsPerJob === undefined;
  const bUnmeasured = b.secondsPerJob === undefined;
  if (aUnmeasured || bUnmeasured) return aUnmeasured === bUnmeasured ? 0 : aUnmeasured ? -1 : 1;
  return a.secondsPerJob! - b.secondsPerJob!;
}

function rankOf(slots: BackendSlots): Rankable {
  return { paid: slots.spec.paid, speed: slots.speed };
}

function mediaRankOf(slots: BackendSlots, typeKey: string): MediaRankable {
  return { paid: slots.spec.paid, secondsPerJob: slots.jobSeconds?.get(typeKey) };
}

/**
 * When every candidate (all routable) is on a media backend: sorts them in place by
 * `compareMediaBackends` on their type key (the generation alias) there, and says so. Otherwise
 * leaves them alone and answers false: the caller ranks them by tok/s (`compareBackends`).
 */
export function sortMediaCandidates(usable: Candidate[], slotsOf: (backend: string) => BackendSlots): boolean {
  for (const candidate of usable) if (kindOf(slotsOf(candidate.backend)) !== 'media') return false;
  usable.sort((a, b) =>
    compareMediaBackends(mediaRankOf(slotsOf(a.backend), a.model), mediaRankOf(slotsOf(b.backend), b.model)),
  );
  return true;
}

/** Scheduler order between two backends one waiter could run on (as `aTypeKey` / `bTypeKey`). */
export function compareMembers(a: BackendSlots, aTypeKey: string, b: BackendSlots, bTypeKey: string): number {
  return kindOf(a) === 'media' && kindOf(b) === 'media'
    ? compareMediaBackends(mediaRankOf(a, aTypeKey), mediaRankOf(b, bTypeKey))
    : compareBackends(rankOf(a), rankOf(b));
}
