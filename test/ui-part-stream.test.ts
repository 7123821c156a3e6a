/** The console's live streams share one rendering per tick (pure, with an injected clock). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sharedParts } from '../src/ui/part-stream.ts';

test('readers within half a tick share one build; a later reader gets a fresh one', () => {
  let t = 0;
  let builds = 0;
  const parts = sharedParts(
    () => ({ n: String(++builds) }),
    1000,
    () => t,
  );
  assert.deepEqual(parts(), { n: '1' });
  t = 100;
  for (let i = 0; i < 10; i++) assert.deepEqual(parts(), { n: '1' }, 'ten streams on one tick: one build');
  t = 600;
  assert.deepEqual(parts(), { n: '2' });
  assert.equal(builds, 2);
});
