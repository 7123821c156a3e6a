/**
 * Residency at dispatch (issue 19): the tracker says, as a call is sent, whether the box held
 * its model just before, which tells the speed learning that the call had to load it; and the
 * facts a call's speed sample carries (a load, a busy box, a load still running).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ResidencyTracker } from '../src/backends/residency.ts';
import { dispatchFacts } from '../src/backends/dispatch-facts.ts';

test('observeCall returns the residency before the call moves it', () => {
  const t = new ResidencyTracker({ residentOf: () => undefined, ttlMs: () => 10_000 });
  assert.equal(t.observeCall('b', 'a', 500), undefined, 'never read: not known');
  t.observeProbe('b', { kind: 'llama-swap', mode: 'swap', loaded: ['a'] }, 1000);
  assert.equal(t.observeCall('b', 'a', 2000), true, 'loaded: no load');
  assert.equal(t.observeCall('b', 'c', 3000), false, 'another model: this call loads it');
  assert.equal(t.observeCall('b', 'c', 4000), true, 'now it is there');
  assert.equal(t.observeCall('b', 'a', 5000), false, 'a was evicted by c (resident 1)');
  assert.equal(t.observeCall('b', 'a', 20_000), undefined, 'old news: not known');
  t.observeProbe('v', { kind: 'vllm', mode: 'all-listed', loaded: ['m'] }, 1000);
  assert.equal(t.observeCall('v', 'm', 2000), true, 'all-listed boxes serve what they list');
  t.observeProbe('u', { kind: 'unknown', mode: 'unknown', loaded: [] }, 1000);
  assert.equal(t.observeCall('u', 'm', 2000), undefined, 'a box that cannot tell');
});

test('dispatch facts: a load, a busy box, and a model still loading for a call sent just before', () => {
  const t = new ResidencyTracker({ residentOf: () => undefined, ttlMs: () => 60_000 });
  t.observeProbe('b', { kind: 'llama-swap', mode: 'swap', loaded: ['a'] }, 1000);
  let inflight = 1;
  const slots = { swapSecondsOf: (_b: string, m: string) => (m === 'c' ? 5 : undefined), inflightOf: () => inflight };
  assert.deepEqual(dispatchFacts(t, slots, 'b', 'a', 2000), { neededLoad: false, busy: false }, 'warm, alone');
  inflight = 2;
  assert.deepEqual(dispatchFacts(t, slots, 'b', 'a', 2100), { neededLoad: false, busy: true }, 'warm, beside another');
  inflight = 1;
  assert.deepEqual(dispatchFacts(t, slots, 'b', 'c', 3000), { neededLoad: true, busy: false }, 'a load on an idle box');
  inflight = 2;
  assert.deepEqual(
    dispatchFacts(t, slots, 'b', 'c', 4000),
    { neededLoad: true, busy: true },
    'c became resident 1 s ago and loads in 5 s: this call waits for that load',
  );
  assert.deepEqual(dispatchFacts(t, slots, 'b', 'c', 8500), { neededLoad: false, busy: true }, 'loaded by now');
  inflight = 1;
  t.observeProbe('u', { kind: 'unknown', mode: 'unknown', loaded: [] }, 1000);
  const unknown = dispatchFacts(t, slots, 'u', 'c', 2000);
  assert.deepEqual(unknown, { neededLoad: false, busy: false }, 'unknown: no load assumed');
});
