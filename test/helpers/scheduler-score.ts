/**
 * For the score, spill and warm-state tests: a scheduler on a fake clock with a settable view
 * of what each box holds, calls taken with whole tickets, and measured backends.
 */
import { FakeClock } from './fake-clock.ts';
import { candidates } from './scheduler-harness.ts';
import {
  Scheduler,
  type FleetView,
  type Lease,
  type SchedulerRejection,
  type Ticket,
} from '../../src/scheduler/index.ts';

/** Affinity margin of these schedulers (ms). */
export const MARGIN_MS = 30_000;

/** What each box holds; a box not listed is unknown. */
export class FakeFleet implements FleetView {
  readonly loaded = new Map<string, Set<string>>();

  hold(backend: string, ...models: string[]): this {
    this.loaded.set(backend, new Set(models));
    return this;
  }

  isResident(backend: string, model: string): boolean | undefined {
    return this.loaded.get(backend)?.has(model);
  }
}

/** A call's outcome as it settles. */
export interface Outcome {
  lease?: Lease;
  rejection?: SchedulerRejection;
}

/** The outcome's lease (a function, so TypeScript keeps no stale narrowing across awaits). */
export function leased(outcome: Outcome): Lease | undefined {
  return outcome.lease;
}

/** A ticket from 'backend/model' shorthands and extra fields (parks 60 s by default). */
export function ticketFor(asks: string[], more: Partial<Ticket> = {}): Ticket {
  return { alias: 'test', candidates: candidates(...asks), parkMs: 60_000, ...more };
}

export function scoreHarness(opts: { maxParked?: number } = {}) {
  const clock = new FakeClock();
  const fleet = new FakeFleet();
  const scheduler = new Scheduler({ clock, maxParked: opts.maxParked ?? 100, affinityMaxWaitMs: MARGIN_MS, fleet });
  const add = (name: string, more: { cap?: number; paid?: boolean } = {}) =>
    scheduler.upsertBackend({ name, cap: more.cap ?? 1, paid: more.paid ?? false, available: true });
  /** One completed call: `seconds` held, `tokensPerS` decode speed (and prefill at 1,000 tok/s). */
  const measure = (name: string, seconds: number, tokensPerS = 50) => {
    const tokens = Math.round(tokensPerS * seconds);
    scheduler.recordSpeed(name, {
      status: 200,
      outputTokens: tokens,
      seconds,
      timings: { predictedN: tokens, predictedMs: seconds * 1000, promptN: 1000, promptMs: 1000 },
    });
  };
  /** Starts an acquire; its outcome lands on the returned object. */
  const start = (ticket: Ticket): Outcome => {
    const outcome: Outcome = {};
    scheduler.acquire(ticket).then(
      (lease) => void (outcome.lease = lease),
      (error: SchedulerRejection) => void (outcome.rejection = error),
    );
    return outcome;
  };
  /** A lease now or a failed test. */
  const take = async (asks: string[], more: Partial<Ticket> = {}): Promise<Lease> =>
    scheduler.acquire(ticketFor(asks, { parkMs: 0, ...more }));
  return { clock, fleet, scheduler, add, measure, start, take };
}
