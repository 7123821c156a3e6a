/**
 * A background run is admitted before the client is told `queued`: the create is refused at
 * once, with the 503 and Retry-After a foreground call would get, when the scheduler would
 * refuse the run's own call (no backend available; every candidate busy and parking off; the
 * parking queue at `max_parked`). A `queued` answer is then a promise kept: the run waits its
 * `async_park_timeout_s` in line like any parked call. Runs started but whose loopback call has
 * not reached the scheduler yet (`pending`) count as taking a free slot or a place in the
 * queue, so a burst of creates cannot all be admitted into one last place.
 */
import type { GatewayError } from '../errors.ts';
import { SchedulerRejection, type Candidate, type SchedulerSnapshot } from '../scheduler/index.ts';
import { rejectionError } from '../upstream/refusals.ts';

export interface SlotsView {
  snapshot(): SchedulerSnapshot;
  /** The candidates on available backends. */
  order(candidates: Candidate[]): Candidate[];
}

export interface AdmissionLimits {
  maxParked: number;
  /** How long a background run may park (`async_park_timeout_s`). */
  parkSeconds: number;
}

/** Pure: why the scheduler would refuse one more run on `usable` (available candidates), if it would. */
export function backgroundRefusal(
  snapshot: SchedulerSnapshot, usable: readonly Candidate[], limits: AdmissionLimits, pending: number,
): SchedulerRejection | undefined {
  if (!usable.length) return new SchedulerRejection('no_backend', 'no available backend serves the model');
  const free = freeSlots(snapshot, usable);
  if (free > pending) return undefined;
  if (!(limits.parkSeconds > 0)) return new SchedulerRejection('parking_off', 'every backend is busy', 1);
  // the runs on their way take the free slots first, the rest places in the queue
  if (snapshot.parked.length + (pending - free) >= limits.maxParked) {
    return new SchedulerRejection('queue_full', `too many requests waiting (${limits.maxParked})`, 2);
  }
  return undefined;
}

/** Free slots on the candidates' backends now, each GPU group's own cap applied once. */
function freeSlots(snapshot: SchedulerSnapshot, usable: readonly Candidate[]): number {
  const roomOf = (s: { cap: number; inflight: number }) => (s.cap === 0 ? Infinity : Math.max(0, s.cap - s.inflight));
  const groupRoom = new Map(snapshot.groups.map((g) => [g.name, roomOf(g)]));
  let free = 0;
  for (const name of new Set(usable.map((c) => c.backend))) {
    const b = snapshot.backends.find((s) => s.name === name);
    if (!b?.available) continue;
    let room = roomOf(b);
    if (b.group !== undefined) {
      const left = groupRoom.get(b.group) ?? Infinity;
      room = Math.min(room, left);
      groupRoom.set(b.group, left - room);
    }
    free += room;
  }
  return free;
}

export class BackgroundAdmission {
  constructor(private readonly slots: SlotsView, private readonly limits: () => AdmissionLimits) {}

  /** The refusal a background create gets now (undefined: admitted). */
  refusal(candidates: Candidate[], alias: string, pending: number): GatewayError | undefined {
    const refused = backgroundRefusal(this.slots.snapshot(), this.slots.order([...candidates]), this.limits(), pending);
    return refused && rejectionError(refused, alias);
  }
}
