/**
 * The score applied to the live fleet: ranks a ticket's candidates by predicted time to first
 * token (prediction.ts) from the scheduler's slots and queues and the fleet view's residency,
 * says whether a model can start on a box now, and estimates parked calls' waits. O(candidates)
 * per ranking; no per-waiter work.
 */
import { sortMediaCandidates } from './ordering.ts';
import { compareScored, predict, runnableBeside, type Ranked, type Residency } from './prediction.ts';
import { hasFreeSlot, occupied, type BackendSlots } from './slots.ts';
import type { Candidate, FleetView } from './types.ts';

/** What the score reads of the scheduler. */
export interface ScoreSources {
  /** The backend's slots if it is known, in the fleet and available. */
  routable(name: string): BackendSlots | undefined;
  /** Live waiters parked on the backend. O(1). */
  queuedOn(name: string): number;
  /** Media backends in the fleet (while 0, ranking skips the media check). */
  mediaBackends(): number;
}

const UNKNOWN_RESIDENCY: Residency = Object.freeze({ model: undefined, lastTypeKey: undefined });

export class FleetScore {
  /** What the boxes hold; undefined = residency unknown everywhere. */
  fleet: FleetView | undefined;

  constructor(
    private readonly sources: ScoreSources,
    fleet?: FleetView,
  ) {
    this.fleet = fleet;
  }

  /**
   * Routable candidates with their scores, in scheduler order: by `compareScored`, or, when all
   * are on media backends, by seconds per job (ordering.ts).
   */
  rank(candidates: readonly Candidate[], promptTokens: number | undefined): Ranked[] {
    const { routable, queuedOn } = this.sources;
    const usable = candidates.filter((candidate) => routable(candidate.backend) !== undefined);
    const media =
      this.sources.mediaBackends() > 0 && usable.length > 1 && sortMediaCandidates(usable, (b) => routable(b)!);
    const ranked = usable.map((candidate): Ranked => {
      const slots = routable(candidate.backend)!;
      const residency = this.residencyOf(slots, candidate.model);
      const prediction = predict(slots, candidate.model, promptTokens, residency, queuedOn(candidate.backend));
      return { candidate, slots, paid: slots.spec.paid, speed: slots.speed, prediction };
    });
    return media ? ranked : ranked.sort(compareScored);
  }

  /** What the fleet view says of `model` there, and of the box's latest lease's model when another one runs. */
  residencyOf(slots: BackendSlots, model: string): Residency {
    const fleet = this.fleet;
    if (!fleet) return UNKNOWN_RESIDENCY;
    const name = slots.spec.name;
    const last = slots.lastTypeKey;
    const other = last !== undefined && last !== model && occupied(slots) > 0;
    return { model: fleet.isResident(name, model), lastTypeKey: other ? fleet.isResident(name, last) : undefined };
  }

  /** Whether a call for `model` can start on the box now: a free slot, and its model can run beside the others. */
  canStart(slots: BackendSlots, model: string): boolean {
    return hasFreeSlot(slots) && runnableBeside(slots, model, this.residencyOf(slots, model));
  }

  /** For hand-off on a box: which type keys can start there now; undefined = all (idle box, or no fleet view). */
  runnableOn(slots: BackendSlots): ((typeKey: string) => boolean) | undefined {
    if (!this.fleet || occupied(slots) === 0) return undefined;
    return (typeKey) => runnableBeside(slots, typeKey, this.residencyOf(slots, typeKey));
  }

  /** The same for hand-off across a GPU group; undefined without a fleet view. */
  runnableInGroup(): ((slots: BackendSlots, typeKey: string) => boolean) | undefined {
    return this.fleet ? this.runnableMember : undefined;
  }

  /**
   * Seconds until a slot for `typeKey` frees on `backend` behind `ahead` parked calls, plus its
   * model's load; undefined when the box is not routable or never measured (a default is no forecast).
   */
  readonly estimateWait = (backend: string, typeKey: string, ahead: number): number | undefined => {
    const slots = this.sources.routable(backend);
    if (!slots || slots.service?.serviceSeconds === undefined) return undefined;
    const prediction = predict(slots, typeKey, undefined, this.residencyOf(slots, typeKey), ahead);
    return prediction.slotWait + prediction.swap;
  };

  /** Whether the box's calls in flight have run longer on average than its mean service time (`now`: clock ms). */
  overrunning(backend: string, now: number): boolean {
    const slots = this.sources.routable(backend);
    const service = slots?.service?.serviceSeconds;
    if (!slots || service === undefined || slots.inflight === 0) return false;
    return (now - slots.grantedAtSum! / slots.inflight) / 1000 > service;
  }

  private readonly runnableMember = (slots: BackendSlots, typeKey: string): boolean =>
    runnableBeside(slots, typeKey, this.residencyOf(slots, typeKey));
}

/**
 * Stickiness: the conversation's previous backend (`stickTo`) among the unpaid candidates, when
 * its prediction is within `marginS` seconds of the best other's; else undefined.
 */
export function stickyPick(
  stickTo: string | undefined,
  unpaid: readonly Ranked[],
  marginS: number,
): Ranked | undefined {
  if (stickTo === undefined) return undefined;
  let own: Ranked | undefined;
  let bestOther = Infinity;
  for (const r of unpaid) {
    if (r.candidate.backend !== stickTo) bestOther = Math.min(bestOther, r.prediction.total);
    else own ??= r;
  }
  return own && own.prediction.total <= bestOther + marginS ? own : undefined;
}
