/** Captured request and response bodies in the call log: compressed off the hot path, capped, found again. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { BODY_CAP_BYTES, truncationMarker } from '../src/stats/bodies.ts';
import { CallLog } from '../src/stats/call-log.ts';
import { call, openLog, QUIET, rowsOnDisk, tempStore, turn } from './helpers/call-log-rig.ts';

describe('bodies', () => {
  test('compressed on the thread pool, not in record(): the row lands with gzip bodies', async (t) => {
    const { log, file } = openLog(t, { captureBodies: true });
    const request = '{"messages":[{"role":"user","content":"' + 'hello '.repeat(500) + '"}]}';
    log.record(call({ request_id: 'captured', request_body: request, response_body: Buffer.from('data: [DONE]\n\n') }));
    assert.equal(log.compressing, 1, 'record() returned with the gzip still under way');
    assert.equal(log.recent()[0].has_bodies, true, 'listed with its bodies meanwhile');
    await log.flush();
    assert.equal(log.compressing, 0);

    const db = new Database(file, { readonly: true });
    t.after(() => db.close());
    const stored = db.prepare('SELECT request, response, request_bytes FROM call_bodies').get() as {
      request: Buffer;
      response: Buffer;
      request_bytes: number;
    };
    assert.deepEqual([...stored.request.subarray(0, 2)], [0x1f, 0x8b], 'gzip');
    assert.equal(gunzipSync(stored.request).toString(), request);
    assert.equal(gunzipSync(stored.response).toString(), 'data: [DONE]\n\n');
    assert.equal(stored.request_bytes, request.length);
    assert.ok(stored.request.length < request.length / 10, `stored compressed (${stored.request.length} bytes)`);
  });

  test('captured bodies round-trip; a big one is capped with a marker', async (t) => {
    const { log } = openLog(t, { captureBodies: true });
    const big = '{"messages":[' + 'x'.repeat(300 * 1024) + ']}';
    const response = Buffer.from('data: {"choices":[]}\n\ndata: [DONE]\n\n');
    log.record(call({ request_id: 'big', request_body: big, response_body: response }));
    await log.flush();
    const [row] = log.recent();
    assert.equal(row.has_bodies, true);

    const got = log.bodies(row.id)!;
    assert.deepEqual(got.response, response);
    assert.equal(got.response_bytes, response.length);
    assert.equal(got.request_bytes, Buffer.byteLength(big));
    assert.equal(got.request!.length, BODY_CAP_BYTES, 'kept exactly the cap');
    const text = got.request!.toString('utf8');
    assert.ok(text.startsWith('{"messages":[xxx'));
    assert.ok(text.endsWith(truncationMarker(Buffer.byteLength(big))));
  });

  test('bodies of a queued row are found once compressed', async (t) => {
    const { log, file } = openLog(t, { captureBodies: true });
    log.record(call({ request_body: 'question' }));
    while (log.compressing > 0) await turn();
    assert.equal(rowsOnDisk(file), 0);
    const got = log.bodies(log.recent()[0].id)!;
    assert.equal(got.request!.toString(), 'question');
    assert.equal(got.response, null);
  });

  test('close() writes rows whose bodies were still compressing, compressing them itself', (t) => {
    const dir = tempStore();
    const first = CallLog.open(dir, { ...QUIET, captureBodies: true });
    for (let i = 0; i < 50; i++) first.record(call({ request_id: `r${i}`, response_body: `answer ${i}` }));
    assert.ok(first.compressing > 0);
    first.close();
    const { log } = openLog(t, {}, dir);
    const rows = log.recent({ limit: 100 });
    assert.equal(rows.length, 50);
    for (const row of rows) assert.equal(log.bodies(row.id)!.response!.toString(), `answer ${row.request_id.slice(1)}`);
  });

  test('without capture no bodies are stored', async (t) => {
    const { log } = openLog(t, { captureBodies: false });
    log.record(call({ request_body: 'secret prompt', response_body: 'answer' }));
    assert.equal(log.compressing, 0);
    await log.flush();
    const [row] = log.recent();
    assert.equal(row.has_bodies, false);
    assert.equal(log.bodies(row.id), null);
  });
});
