/**
 * idle_sleep over sockets: a box woken by its packet serves a long stream; the owner's sleep URL
 * (a local HTTP sink) is not called while that call is in flight, is called once when the box
 * has been idle `after_s`, and not again for the same wake.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, test } from 'node:test';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';
import { startWakeListener, type WakeListener } from './helpers/wake-listener.ts';

let box: FakeBackend;
let udp: WakeListener;
let gw: TestGateway;
let sink: Server;
const sleeps: { method: string; url: string; at: number }[] = [];

before(async () => {
  sink = createServer((req, res) => {
    sleeps.push({ method: req.method ?? '', url: req.url ?? '', at: Date.now() });
    res.end('ok');
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', () => resolve()));
  const sinkPort = (sink.address() as { port: number }).port;
  // ten chunks at four a second: a call in flight for about 2.5 s, longer than after_s
  box = await startFake('llamacpp', { models: ['qwen3-8b'], knobs: { chunkCount: 10, tokensPerSecond: 4 } });
  udp = await startWakeListener(() => box.setKnobs({ refuse: false }));
  gw = await startGateway(
    [
      {
        name: 'box',
        url: box.url,
        wake: { mac: '00:11:22:33:44:55', address: '127.0.0.1', port: udp.port, boot_timeout_s: 20 },
        idle_sleep: { after_s: 1, url: `http://127.0.0.1:${sinkPort}/sleep?token=t0k` },
      },
    ],
    { park_timeout_s: 1 },
  );
  box.setKnobs({ refuse: true });
  await gw.gateway.discovery.probe('box');
});
after(async () => {
  await gw?.close();
  await udp?.close();
  await box?.close();
  sink?.closeAllConnections();
  await new Promise<void>((resolve) => sink?.close(() => resolve()));
});

test('idle_sleep is called once after the woken box was idle, never while a call is in flight', async () => {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'box/qwen3-8b', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(res.status, 200);
  const body = await res.text();
  const ended = Date.now();
  assert.match(body, /data: \[DONE\]/);
  assert.equal(udp.packets.length, 1);
  assert.equal(sleeps.length, 0, 'not called while the call was in flight');
  await waitFor(() => sleeps.length === 1, 'the sleep URL called', 5000);
  assert.equal(sleeps[0].method, 'POST');
  assert.equal(sleeps[0].url, '/sleep?token=t0k');
  // idleness counts from the first tick that finds the box idle, so at least after_s after the
  // call's end (less this process's own lag in reading that end)
  assert.ok(sleeps[0].at - ended >= 900, `after about after_s of idleness (${sleeps[0].at - ended} ms)`);
  const health = (await (await fetch(`${gw.url}/health`)).json()) as {
    backends: { box: { wake: { state: string; sleep_requested_at: string | null } } };
  };
  assert.equal(health.backends.box.wake.state, 'sleep_requested');
  assert.ok(health.backends.box.wake.sleep_requested_at);
  // once per wake: still one a while later
  await new Promise((r) => setTimeout(r, 2200));
  assert.equal(sleeps.length, 1);
});
