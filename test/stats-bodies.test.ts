/** Captured bodies: the cap, and gzip off the main thread (and here, once that thread is gone). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import type { Worker } from 'node:worker_threads';
import { BODY_CAP_BYTES, BodyCompressor, capBody, truncationMarker } from '../src/stats/bodies.ts';

test('capBody keeps a body up to the cap, cuts a longer one with a marker, ignores what is not a body', () => {
  assert.deepEqual(capBody('héllo'), { kept: Buffer.from('héllo'), bytes: 6 });
  assert.deepEqual(capBody(new Uint8Array([1, 2, 3])), { kept: Buffer.from([1, 2, 3]), bytes: 3 });
  const big = capBody('x'.repeat(BODY_CAP_BYTES + 10))!;
  assert.equal(big.kept.length, BODY_CAP_BYTES);
  assert.equal(big.bytes, BODY_CAP_BYTES + 10);
  assert.ok(big.kept.toString().endsWith(truncationMarker(BODY_CAP_BYTES + 10)));
  assert.equal(capBody({ not: 'a body' }), null);
  assert.equal(capBody(undefined), null);
});

test('the compressor gzips on its thread, in order, null staying null; once the thread is gone, here', async (t) => {
  const compressor = new BodyCompressor();
  t.after(() => compressor.close());
  const bodies = (i: number) => [Buffer.from(`request ${i} `.repeat(100)), null, Buffer.from(`response ${i}`)];
  const first = await Promise.all([0, 1, 2].map((i) => compressor.compress(bodies(i))));
  first.forEach((gz, i) => {
    assert.deepEqual(
      gz.map((g) => g && gunzipSync(g)),
      bodies(i),
    );
  });
  const thread = Reflect.get(compressor, 'worker') as Worker;
  assert.ok(thread, 'compressed on a worker thread');

  const inFlight = compressor.compress(bodies(3));
  // the thread dies with a batch in flight (told as the Worker tells it: terminating it for
  // real inside gzipSync can abort Node 20 itself, which is not what this test is about)
  thread.emit('exit', 1);
  const after = compressor.compress(bodies(4));
  assert.deepEqual(
    (await inFlight).map((g) => g && gunzipSync(g)),
    bodies(3),
    "the batch in flight is gzip'd here",
  );
  assert.deepEqual(
    (await after).map((g) => g && gunzipSync(g)),
    bodies(4),
    'and so is what comes after',
  );
  assert.equal(Reflect.get(compressor, 'worker'), null);
  thread.postMessage('stop');
});
