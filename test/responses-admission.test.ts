/**
 * The background-run admission check (responses/admission.ts) against scheduler snapshots: the
 * scheduler's own order of refusals, GPU group caps counted once, and runs on their way to the
 * scheduler counted as taking a slot or a place.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { backgroundRefusal } from '../src/responses/admission.ts';
import type { BackendSlotsSnapshot, Candidate, SchedulerSnapshot } from '../src/scheduler/index.ts';

type Slots = BackendSlotsSnapshot;
const backend = (name: string, inflight: number, cap: number, extra: Partial<Slots> = {}): Slots =>
  ({ name, inflight, cap, paid: false, available: true, kind: 'llm', ...extra });
const waiter = { alias: 'r', typeKeys: ['m'], backends: ['a'], ageMs: 0, remainingMs: 1 };
const snapshot = (backends: Slots[], parked = 0, groups: SchedulerSnapshot['groups'] = []): SchedulerSnapshot => ({
  backends, groups, parkedByAlias: {}, parked: Array.from({ length: parked }, () => waiter),
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
    const grouped = snapshot(
      [backend('a', 0, 1, { group: 'gpu' }), backend('b', 0, 1, { group: 'gpu' })], 2,
      [{ name: 'gpu', inflight: 0, cap: 1, members: ['a', 'b'] }],
    );
    assert.equal(backgroundRefusal(grouped, on('a', 'b'), limits, 0), undefined);
    assert.equal(backgroundRefusal(grouped, on('a', 'b'), limits, 1)?.reason, 'queue_full', 'one group slot, not two');
    assert.equal(backgroundRefusal(snapshot([backend('u', 7, 0)], 2), on('u'), limits, 50), undefined);
  });

  test('an unavailable backend has no free slot', () => {
    const down = snapshot([backend('a', 0, 1, { available: false }), backend('b', 1, 1)], 2);
    assert.equal(backgroundRefusal(down, on('b'), limits, 0)?.reason, 'queue_full');
  });
});
