/**
 * A scheduler on a fake clock for tests: a fleet of backends, calls tracked as they settle,
 * leases taken at once, and the 'backend/model' shorthand for candidates.
 */
import assert from 'node:assert/strict';
import { FakeClock } from './fake-clock.ts';
import {
  Scheduler,
  type BackendSlotSpec,
  type Candidate,
  type Lease,
  type SchedulerRejection,
  type TicketUser,
} from '../../src/scheduler/index.ts';

/** The harness scheduler's affinity_max_wait. */
export const AFFINITY_MAX_WAIT_MS = 10_000;
/** How long a harness call parks unless told otherwise. */
export const PARK_MS = 60_000;

/** A backend of the fleet: cap 1, unpaid and available unless said otherwise. */
export type FleetBackend = Partial<BackendSlotSpec> & { name: string };

/** 'gpu1/llama' → { backend: 'gpu1', model: 'llama' }. */
export function candidates(...specs: string[]): Candidate[] {
  return specs.map((spec) => {
    const [backend, typeKey] = spec.split('/');
    return { backend, model: typeKey };
  });
}

/** A call as the test sees it: settled or not, with what, and how often it was refreshed. */
export interface TrackedCall {
  readonly name: string;
  lease?: Lease;
  rejection?: SchedulerRejection;
  refreshes: number;
}

/** How a harness call differs from the default (alias = its name, parks PARK_MS, no refresh). */
export interface CallOptions {
  alias?: string;
  parkMs?: number;
  signal?: AbortSignal;
  /** What the call's refresh returns: candidate specs, or a function (may throw). Omitted = no refresh. */
  refresh?: string[] | (() => Candidate[]);
  /** Who the call is charged to (fair share, `max_inflight`); omitted = the anonymous user. */
  user?: TicketUser;
}

/** A scheduler over `fleet` on a FakeClock, with helpers to start calls and hold slots. */
export function schedulerHarness(fleet: FleetBackend[], opts: { maxParked?: number } = {}) {
  const clock = new FakeClock();
  const scheduler = new Scheduler({ clock, maxParked: opts.maxParked ?? 100, affinityMaxWaitMs: AFFINITY_MAX_WAIT_MS });
  /** Adds (or updates) a backend with the fleet defaults. */
  const addBackend = (spec: FleetBackend) => scheduler.upsertBackend({ cap: 1, paid: false, available: true, ...spec });
  for (const spec of fleet) addBackend(spec);

  /** Starts a call asking for `asks` ('backend/model'); its outcome lands on the returned object. */
  function call(name: string, asks: string[], more: CallOptions = {}): TrackedCall {
    const tracked: TrackedCall = { name, refreshes: 0 };
    const answer = more.refresh;
    const refresh =
      answer === undefined
        ? undefined
        : () => {
            tracked.refreshes++;
            return typeof answer === 'function' ? answer() : candidates(...answer);
          };
    scheduler
      .acquire({
        alias: more.alias ?? name,
        candidates: candidates(...asks),
        parkMs: more.parkMs ?? PARK_MS,
        signal: more.signal,
        refresh,
        user: more.user,
      })
      .then(
        (lease) => void (tracked.lease = lease),
        (error: SchedulerRejection) => void (tracked.rejection = error),
      );
    return tracked;
  }

  /** A lease granted at once (fails the test otherwise), charged to `user` (default: the anonymous one). */
  function hold(asks: string[], user?: TicketUser): Lease {
    const lease = scheduler.tryAcquireNow(candidates(...asks), new Set(), { user });
    assert.ok(lease, `expected a free slot for ${asks.join(', ')}`);
    return lease;
  }

  return { clock, scheduler, call, hold, addBackend };
}

/** Lets resolved promises run their callbacks. */
export const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The call's lease (a function, so TypeScript does not keep an earlier narrowing). */
export function leaseOf(c: TrackedCall): Lease | undefined {
  return c.lease;
}

/** 'backend/model' of the call's lease, if it has one (a function, so no stale narrowing). */
export function grantedOn(c: TrackedCall): string | undefined {
  return c.lease && `${c.lease.backend}/${c.lease.model}`;
}
