/**
 * Residency at dispatch (issue 19): the tracker says, as a call is sent, whether the box held
 * its model just before, which tells the speed learning that the call had to load it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ResidencyTracker } from '../src/backends/residency.ts';

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
