/**
 * Sending, over sockets: alerts go out in the background, so a webhook that hangs delays no
 * call; a failing one (500, then ok) is logged without the URL's secret and retried after a
 * delay until it takes the alert; closing the gateway with a send still hanging returns at once.
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { bodyOf, startAlertSink, type AlertSink } from './helpers/alert-sink.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

const SECRET_PATH = '/hooks/s3cr3t-t0ken-in-the-path';

let sink: AlertSink;
let box: FakeBackend;
let gw: TestGateway;
const logLines: string[] = [];

before(async () => {
  sink = await startAlertSink();
  sink.hold = true; // the start alert hangs until released
  sink.statuses = [500];
  box = await startFake('vllm', { models: ['m'] });
  const logStream = new PassThrough();
  logStream.on('data', (chunk: Buffer) => logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
  gw = await startGateway(
    [{ name: 'box', url: box.url }],
    {
      log_level: 'warn',
      alerts: [
        {
          url: `http://user:pw-secret@127.0.0.1:${new URL(sink.url).port}${SECRET_PATH}?token=q-secret`,
          format: 'json',
          min_interval_s: 0,
        },
      ],
    },
    { logStream },
  );
});
after(async () => {
  await gw.close();
  await box.close();
  await sink.close();
});

describe('alert delivery', () => {
  test('a hanging webhook blocks no call', async () => {
    await sink.waitFor(1);
    const started = Date.now();
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'box/m', messages: [{ role: 'user', content: 'hi' }] }),
      });
      assert.equal(res.status, 200);
    }
    assert.ok(Date.now() - started < 2000, 'the calls were answered while the alert hung');
    assert.equal(sink.received.length, 1, 'still the one hanging send');
  });

  test('500, logged without secrets, then retried after a delay until delivered', async () => {
    const firstAt = Date.now();
    sink.release(); // the hanging send now gets its 500
    const [first, retry] = await sink.waitFor(2, undefined, 8000);
    assert.ok(Date.now() - firstAt >= 1500, 'the retry waited (backoff)');
    assert.deepEqual(bodyOf(retry), bodyOf(first), 'the same alert again');
    assert.equal(bodyOf(retry).event, 'gateway_started');
    assert.equal(first.headers.authorization, `Basic ${Buffer.from('user:pw-secret').toString('base64')}`);
    const warned = logLines.filter((l) => l.includes('alert not delivered'));
    assert.equal(warned.length, 1, logLines.join('\n'));
    assert.match(warned[0], /"error":"HTTP 500"/);
    assert.match(warned[0], /will retry/);
    assert.match(warned[0], /"target":"http:\/\/127\.0\.0\.1:\d+\/hooks\/s…"/);
    const all = logLines.join('\n');
    for (const secret of ['s3cr3t-t0ken', 'pw-secret', 'q-secret'])
      assert.ok(!all.includes(secret), `${secret} logged`);
  });

  test('close() with a send hanging returns within its deadline', async () => {
    sink.hold = true;
    box.setKnobs({ refuse: true });
    await gw.gateway.discovery.pollAll(); // backend_down: its POST hangs
    await sink.waitFor(3);
    const started = Date.now();
    await gw.gateway.alerts.close();
    assert.ok(Date.now() - started < 2500, `close took ${Date.now() - started} ms`);
  });
});
