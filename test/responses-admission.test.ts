/**
 * The background-run admission check (responses/admission.ts) against scheduler snapshots: the
 * scheduler's own order of refusals, GPU group caps counted once, and runs on their way to the
 * scheduler counted as taking a slot or a place.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BackgroundAdmission, backgroundRefusal } from '../src/responses/admission.ts';
import {
  SchedulerRejection,
  type BackendSlotsSnapshot,
  type Candidate,
  type SchedulerSnapshot,
} from '../src/scheduler/index.ts';
import { candidates, schedulerHarness, settle } from './helpers/scheduler-harness.ts';

type Slots = BackendSlotsSnapshot;
const backend = (name: string, inflight: number, cap: number, extra: Partial<Slots> = {}): Slots => ({
  name,
  inflight,
  cap,
  paid: false,
  available: true,
  kind: 'llm',
  ...extra,
});
const waiter = { alias: 'r', typeKeys: ['m'], backends: ['a'], ageMs: 0, remainingMs: 1 };
const snapshot = (backends: Slots[], parked = 0, groups: SchedulerSnapshot['groups'] = []): SchedulerSnapshot => ({
  backends,
  groups,
  parkedByAlias: {},
  parked: Array.from({ length: parked }, () => waiter),
});
const on = (...names: string[]): Candidate[] => names.map((backend) => ({ backend, model: 'm' }));
const limits = { maxParked: 2, parkSeconds: 600 };

describe('background admission', () => {
  test('a free slot admits; none available is no_backend', () => {
    assert.equal(backgroundRefusal(snapshot([backend('a', 0, 1)]), on('a'), limits, 0), undefined);
    assert.equal(backgroundRefusal(snapshot([]), [], limits, 0)?.reason, 'no_backend');
  });

  test('busy: a place in the queue admits, a full queue is queue_full with Retry-After 2', () => {
    assert.equal(backgroundRefusal(snapshot([backend('a', 1, 1)], 1), on('a'), limits, 0), undefined);
    const full = backgroundRefusal(snapshot([backend('a', 1, 1)], 2), on('a'), limits, 0);
    assert.equal(full?.reason, 'queue_full');
    assert.equal(full?.retryAfter, 2);
  });

  test('busy with parking off is parking_off, as the scheduler refuses it', () => {
    const off = { maxParked: 5, parkSeconds: 0 };
    assert.equal(backgroundRefusal(snapshot([backend('a', 1, 1)]), on('a'), off, 0)?.reason, 'parking_off');
  });

  test('runs on their way take the free slots first, then places in the queue', () => {
    const free = snapshot([backend('a', 0, 2)]);
    assert.equal(backgroundRefusal(free, on('a'), limits, 1), undefined, 'one slot left for this one');
    assert.equal(backgroundRefusal(free, on('a'), limits, 2), undefined, 'both slots spoken for: a place in the queue');
    assert.equal(backgroundRefusal(free, on('a'), limits, 4)?.reason, 'queue_full', '2 slots + 2 places taken');
  });

  test("a GPU group's cap is shared by its backends; an unlimited backend is always free", () => {
    const grouped = snapshot([backend('a', 0, 1, { group: 'gpu' }), backend('b', 0, 1, { group: 'gpu' })], 2, [
      { name: 'gpu', inflight: 0, cap: 1, members: ['a', 'b'] },
    ]);
    assert.equal(backgroundRefusal(grouped, on('a', 'b'), limits, 0), undefined);
    assert.equal(backgroundRefusal(grouped, on('a', 'b'), limits, 1)?.reason, 'queue_full', 'one group slot, not two');
    assert.equal(backgroundRefusal(snapshot([backend('u', 7, 0)], 2), on('u'), limits, 50), undefined);
  });

  test('an unavailable backend has no free slot', () => {
    const down = snapshot([backend('a', 0, 1, { available: false }), backend('b', 1, 1)], 2);
    assert.equal(backgroundRefusal(down, on('b'), limits, 0)?.reason, 'queue_full');
  });
});

describe('places promised to runs on their way, on a real scheduler', () => {
  const setup = () => {
    const { scheduler, hold } = schedulerHarness([{ name: 'a', cap: 1 }], { maxParked: 1 });
    const admission = new BackgroundAdmission(scheduler, () => ({ maxParked: 1, parkSeconds: 600 }));
    const guarded = admission.guard(scheduler);
    const ticket = (parkMs = 5_000) => ({ alias: 'r', candidates: candidates('a/m'), parkMs });
    const outcome = (p: Promise<unknown>) =>
      p.then(
        () => 'lease',
        (e: unknown) => e,
      );
    return { scheduler, hold, admission, guarded, ticket, outcome };
  };

  test('a foreground ticket after an admitted run is refused queue_full; the run, arrived, parks', async () => {
    const { scheduler, hold, admission, guarded, ticket, outcome } = setup();
    hold(['a/m']);
    const run = admission.admit(candidates('a/m'), 'r');
    assert.equal(run.refused, undefined, "the last place is the run's");
    assert.equal(admission.pending, 1);
    const foreground = await outcome(guarded.acquire(ticket()));
    assert.ok(foreground instanceof SchedulerRejection);
    assert.equal(foreground.reason, 'queue_full');
    assert.equal(scheduler.snapshot().parked.length, 0, 'the foreground took no place');
    const second = admission.admit(candidates('a/m'), 'r');
    assert.equal(second.refused?.status, 503, 'nor does another create');
    run.release!();
    run.release!(); // idempotent
    assert.equal(admission.pending, 0);
    void guarded.acquire(ticket()).catch(() => undefined);
    await settle();
    assert.equal(scheduler.snapshot().parked.length, 1, 'the run parked in its place');
  });

  test('a free slot promised to a run: refused to a call that cannot park, taken by one that can', async () => {
    const { admission, guarded, ticket, outcome } = setup();
    const run = admission.admit(candidates('a/m'), 'r');
    assert.equal(run.refused, undefined);
    const noPark = await outcome(guarded.acquire(ticket(0)));
    assert.ok(noPark instanceof SchedulerRejection);
    assert.equal(noPark.reason, 'parking_off');
    // with a place left in the queue for the run, a foreground call may take the slot
    assert.equal(await outcome(guarded.acquire(ticket())), 'lease');
  });

  test('nothing promised: the scheduler answers alone', async () => {
    const { hold, guarded, ticket, outcome } = setup();
    hold(['a/m']);
    void guarded.acquire(ticket()).catch(() => undefined);
    await settle();
    const full = await outcome(guarded.acquire(ticket()));
    assert.ok(full instanceof SchedulerRejection);
    assert.equal(full.reason, 'queue_full', "the scheduler's own refusal past max_parked");
  });
});
