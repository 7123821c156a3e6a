/**
 * A background run is admitted before the client is told `queued`: the create is refused at
 * once, with the 503 and Retry-After a foreground call would get, when the scheduler would
 * refuse the run's own call (no backend available; every candidate busy and parking off; the
 * parking queue at `max_parked`). A `queued` answer is then a promise kept: the run waits its
 * `async_park_timeout_s` in line like any parked call.
 *
 * The promise is a reservation: an admitted run holds a free slot or a place in the queue until
 * its loopback call reaches the scheduler (or the run ends). Other background creates count the
 * runs on their way, and so do foreground calls: the proxy asks the scheduler through `guard`,
 * which refuses a call that would take a reserved place, as the scheduler refuses past
 * `max_parked`. Without it a foreground call landing between a create and its run's arrival took
 * the last place, and the run told `queued` failed with `queue_full`. (src/scheduler untouched:
 * the check is on its snapshot, before its own `acquire`.)
 */
import type { GatewayError } from '../errors.ts';
import {
  SchedulerRejection,
  type Candidate,
  type Scheduler,
  type SchedulerSnapshot,
  type Ticket,
} from '../scheduler/index.ts';
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
  snapshot: SchedulerSnapshot,
  usable: readonly Candidate[],
  limits: AdmissionLimits,
  pending: number,
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

/** What the proxy asks of the scheduler. */
export type ProxyScheduler = Pick<Scheduler, 'acquire' | 'tryAcquireNow' | 'order' | 'recordSpeed' | 'queuePosition'>;

export type Admitted = { release: () => void; refused?: undefined } | { refused: GatewayError };

export class BackgroundAdmission {
  /** Slots or places promised to admitted runs whose call has not reached the scheduler yet. */
  private promised = 0;

  constructor(
    private readonly slots: SlotsView,
    private readonly limits: () => AdmissionLimits,
  ) {}

  /** Runs admitted whose call the scheduler has not seen yet. */
  get pending(): number {
    return this.promised;
  }

  /** Admits a background run, holding its place until `release` (idempotent); else the refusal it gets now. */
  admit(candidates: Candidate[], alias: string): Admitted {
    const refused = this.refusal(candidates, alias);
    if (refused) return { refused };
    this.promised++;
    let held = true;
    return {
      release: () => {
        if (held) this.promised--;
        held = false;
      },
    };
  }

  /** The refusal a background create gets now (undefined: it would be admitted). */
  refusal(candidates: Candidate[], alias: string): GatewayError | undefined {
    const usable = this.slots.order([...candidates]);
    const refused = backgroundRefusal(this.slots.snapshot(), usable, this.limits(), this.promised);
    return refused && rejectionError(refused, alias);
  }

  /**
   * `scheduler` as foreground calls (and a run's own call, once arrived) see it: while places are
   * promised, a ticket that would take one is refused as the scheduler would refuse it there.
   */
  guard(scheduler: Scheduler): ProxyScheduler {
    return {
      acquire: (ticket) => {
        const refused = this.promised > 0 ? this.ticketRefusal(scheduler, ticket) : undefined;
        return refused ? Promise.reject(refused) : scheduler.acquire(ticket);
      },
      tryAcquireNow: (candidates, exclude, ticket) => scheduler.tryAcquireNow(candidates, exclude, ticket),
      order: (candidates) => scheduler.order(candidates),
      recordSpeed: (backend, sample) => scheduler.recordSpeed(backend, sample),
      queuePosition: (ticket) => scheduler.queuePosition(ticket),
    };
  }

  private ticketRefusal(scheduler: Scheduler, ticket: Ticket): SchedulerRejection | undefined {
    if (ticket.signal?.aborted) return undefined; // the scheduler's own answer
    const usable = scheduler.order(ticket.candidates);
    const limits = { maxParked: this.limits().maxParked, parkSeconds: ticket.parkMs / 1000 };
    const refused = backgroundRefusal(scheduler.snapshot(), usable, limits, this.promised);
    return refused?.reason === 'no_backend' ? undefined : refused;
  }
}
