/**
 * Wake-on-LAN over sockets: a fake box that resets every connection (asleep) until its magic
 * packet reaches the test's UDP listener on 127.0.0.1; the gateway sends the packet when every
 * candidate of a call is down unreachable, parks the call through the boot and serves it the
 * moment a probe finds the box up. A box that never wakes ends the call with a 503.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { expectedPacket, startWakeListener, type WakeListener } from './helpers/wake-listener.ts';

const MAC = '52:54:00:ab:cd:ef';
const MODEL = 'box/qwen3-8b';
const chat = (stream = false) => ({ model: MODEL, stream, messages: [{ role: 'user' as const, content: 'hi' }] });

/** Puts the box to sleep (connections reset) and lets the gateway see it down. */
async function sleep(gw: TestGateway, box: FakeBackend): Promise<void> {
  box.setKnobs({ refuse: true });
  await gw.gateway.discovery.probe('box');
  assert.equal(gw.gateway.registry.get('box')?.error?.kind, 'unreachable');
}

async function health(gw: TestGateway) {
  const res = await fetch(`${gw.url}/health`);
  return (await res.json()) as { backends: Record<string, { wake: { state: string; since_s: number } | null }> };
}

describe('a sleeping box woken by its packet', () => {
  let box: FakeBackend;
  let udp: WakeListener;
  let gw: TestGateway;
  /** How long the box takes to answer once its packet arrived. */
  let bootMs = 0;

  before(async () => {
    box = await startFake('llamacpp', { models: ['qwen3-8b'] });
    udp = await startWakeListener(() => {
      setTimeout(() => box.setKnobs({ refuse: false }), bootMs).unref();
    });
    const wake = { mac: MAC, address: '127.0.0.1', port: udp.port, boot_timeout_s: 20, cooldown_s: 300 };
    gw = await startGateway([{ name: 'box', url: box.url, wake }], { park_timeout_s: 1, stream_keepalive_s: 1 });
  });
  after(async () => {
    await gw?.close();
    await udp?.close();
    await box?.close();
  });

  test('two calls within the cooldown send one exact packet, wait through the boot and are served', async () => {
    await sleep(gw, box);
    bootMs = 500;
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'k', maxRetries: 0, timeout: 30_000 });
    const streamed = (async () => {
      let text = '';
      const stream = await client.chat.completions.create({ ...chat(true), stream: true });
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      return text;
    })();
    const plain = fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chat()),
    });
    // while the box boots /health says so, with the seconds since the packet
    let seen = false;
    for (let i = 0; i < 100 && !seen; i++) {
      const wake = (await health(gw)).backends.box.wake;
      seen = wake?.state === 'waking' && typeof wake.since_s === 'number';
      if (!seen) await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(seen, '/health shows the box waking');
    // and so does the console's dashboard (open gateway, loopback: no login)
    const page = await (await fetch(`${gw.url}/ui`)).text();
    assert.match(page, /class="status waking"/);
    assert.match(page, /Wake-on-LAN packet sent \d+ s ago/);
    const [text, res] = await Promise.all([streamed, plain]);
    assert.ok(text.length > 0, 'the streamed call got its content');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gateway-backend'), 'box');
    assert.equal(udp.packets.length, 1, 'one packet for both calls');
    assert.deepEqual(udp.packets[0], expectedPacket(MAC));
    assert.equal(udp.packets[0].length, 102);
    assert.equal((await health(gw)).backends.box.wake?.state, 'awake');
  });

  test("a parked stream's keep-alive says which box it waits for", async () => {
    await sleep(gw, box);
    bootMs = 1800;
    const before = udp.packets.length;
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chat(true)),
    });
    assert.equal(res.status, 200);
    const body = await res.text();
    assert.match(body, /^: waking backend=box since_s=\d+$/m);
    assert.match(body, /data: \[DONE\]/);
    // the box answered after its last packet: a new sleep is a new need, no cooldown
    assert.equal(udp.packets.length, before + 1);
  });
});

describe('a box that never wakes', () => {
  let box: FakeBackend;
  let udp: WakeListener;
  let gw: TestGateway;

  before(async () => {
    box = await startFake('llamacpp', { models: ['qwen3-8b'] });
    udp = await startWakeListener();
    const wake = { mac: MAC.replace(/:/g, '-'), address: '127.0.0.1', port: udp.port, boot_timeout_s: 1.5 };
    gw = await startGateway([{ name: 'box', url: box.url, wake }], { park_timeout_s: 0.5 });
    await sleep(gw, box);
  });
  after(async () => {
    await gw?.close();
    await udp?.close();
    await box?.close();
  });

  test('ends the call with a 503 saying it did not wake in time, then refuses at once within the cooldown', async () => {
    const started = Date.now();
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chat()),
    });
    const waited = Date.now() - started;
    assert.equal(res.status, 503);
    const { error } = (await res.json()) as { error: { message: string; code: string; type: string } };
    assert.equal(error.code, 'backend_not_awake');
    assert.equal(error.type, 'api_error');
    assert.match(error.message, /`box` did not wake in time/);
    assert.ok(Number(res.headers.get('retry-after')) > 0, 'Retry-After');
    assert.ok(waited >= 1500, `parked through the boot window (${waited} ms)`);
    assert.equal(udp.packets.length, 1);
    assert.deepEqual(udp.packets[0], expectedPacket(MAC));
    assert.equal((await health(gw)).backends.box.wake?.state, 'failed');
    const deep = (await (await fetch(`${gw.url}/health/deep`)).json()) as {
      backends: Record<string, { wake: { state: string; packets_sent: number } | null }>;
    };
    assert.deepEqual(
      { state: deep.backends.box.wake?.state, packets: deep.backends.box.wake?.packets_sent },
      { state: 'failed', packets: 1 },
    );

    // Anthropic's shape on /v1/messages; no second packet inside the cooldown (300 s by default)
    const again = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(again.status, 503);
    const anthropic = (await again.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(anthropic.type, 'error');
    assert.match(anthropic.error.message, /did not wake in time/);
    assert.ok(Number(again.headers.get('retry-after')) > 200, 'retry when the cooldown ends');
    assert.equal(udp.packets.length, 1, 'no packet within the cooldown');
  });
});
