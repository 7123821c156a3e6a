/**
 * The spill rule's local wait, pooled over the boxes a call can use (pooled-wait.ts): a queue
 * that several boxes drain together is shorter than any one box's share of it says.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pooledLocalWait } from '../src/scheduler/pooled-wait.ts';
import { predict, type Ranked } from '../src/scheduler/prediction.ts';
import type { BackendSlots } from '../src/scheduler/slots.ts';

const warm = { model: true, lastTypeKey: undefined };

function box(name: string, cap: number, inflight: number, serviceSeconds: number, resident = true): BackendSlots {
  return {
    spec: { name, cap, paid: false, available: true },
    inflight,
    removed: false,
    service: { samples: 1, serviceSeconds },
    lastTypeKey: resident ? 'm' : 'other',
  };
}

function ranked(slots: BackendSlots, queued: number, resident = true): Ranked {
  const residency = resident ? warm : { model: false, lastTypeKey: true };
  const prediction = predict(slots, 'm', undefined, residency, queued);
  return { paid: false, speed: undefined, prediction, slots, candidate: { backend: slots.spec.name, model: 'm' } };
}

test('two full boxes draining one shared queue: the 5th slot to free, at their combined rate', () => {
  const a = ranked(box('a', 2, 2, 10), 4);
  const b = ranked(box('b', 2, 2, 10), 4);
  assert.equal(a.prediction.slotWait, 25, 'one box alone: 5 calls ahead of a slot over 2 slots of 10 s');
  assert.equal(pooledLocalWait([a, b]), 5 / (2 / 10 + 2 / 10));
});

test('never more than the best box on its own, and a swap when no box holds the model', () => {
  const one = ranked(box('a', 2, 2, 10), 0);
  assert.equal(pooledLocalWait([one]), Math.min(one.prediction.slotWait, 1 / 0.2));
  const cold = ranked(box('c', 1, 1, 4, false), 0, false);
  assert.ok(cold.prediction.swap > 0);
  assert.equal(
    pooledLocalWait([cold]),
    Math.min(cold.prediction.slotWait + cold.prediction.swap, 1 / 0.25 + cold.prediction.swap),
  );
});

test('an unlimited box takes the call now', () => {
  assert.equal(pooledLocalWait([ranked(box('u', 0, 5, 10), 9)]), 0);
});
