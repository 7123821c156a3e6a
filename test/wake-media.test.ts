/**
 * Wake-on-LAN for a media job, over sockets: the Images API call for an alias whose only
 * ComfyUI box is asleep (connections reset) wakes it with its packet, parks through the boot and
 * is served once the box answers; one whose box never answers ends with a 503 saying so.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startComfyFake } from './fakes/comfyui-server.ts';
import type { ComfyFake } from './fakes/comfyui-types.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { FAST_COMFY, sd15Models } from './helpers/media-service.ts';
import { expectedPacket, startWakeListener, type WakeListener } from './helpers/wake-listener.ts';

const MAC = '0a:0b:0c:0d:0e:0f';
let comfy: ComfyFake;
let udp: WakeListener;
let gw: TestGateway;

before(async () => {
  comfy = await startComfyFake({});
  udp = await startWakeListener(() => comfy.setKnobs({ refuse: false }));
  const wake = { mac: MAC, address: '127.0.0.1', port: udp.port, boot_timeout_s: 20 };
  gw = await startGateway([{ name: 'comfy-0', url: comfy.url, type: 'comfyui', ...FAST_COMFY, wake }], {
    image_models: sd15Models(['comfy-0']),
    media_park_timeout_s: 1,
  });
  comfy.setKnobs({ refuse: true });
  await gw.gateway.discovery.probe('comfy-0');
  assert.equal(gw.gateway.registry.get('comfy-0')?.error?.kind, 'unreachable');
});
after(async () => {
  await gw?.close();
  await udp?.close();
  await comfy?.close();
});

test('an images call for a sleeping ComfyUI box wakes it and is served', async () => {
  const res = await fetch(`${gw.url}/v1/images/generations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sd15', prompt: 'a lighthouse at dusk' }),
  });
  const body = (await res.json()) as { data?: { b64_json: string }[]; error?: unknown };
  assert.equal(res.status, 200, JSON.stringify(body.error));
  assert.ok(body.data?.[0]?.b64_json, 'an image came back');
  assert.equal(udp.packets.length, 1);
  assert.deepEqual(udp.packets[0], expectedPacket(MAC));
});

test('an images call for a ComfyUI box that never wakes ends with a 503 saying so', async () => {
  const asleep = await startComfyFake({});
  const card = await startWakeListener();
  const wake = { mac: MAC, address: '127.0.0.1', port: card.port, boot_timeout_s: 1 };
  const g = await startGateway([{ name: 'comfy-1', url: asleep.url, type: 'comfyui', ...FAST_COMFY, wake }], {
    image_models: sd15Models(['comfy-1']),
    media_park_timeout_s: 0.5,
  });
  try {
    asleep.setKnobs({ refuse: true });
    await g.gateway.discovery.probe('comfy-1');
    const res = await fetch(`${g.url}/v1/images/generations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sd15', prompt: 'a lighthouse at dusk' }),
    });
    const { error } = (await res.json()) as { error: { code: string; message: string } };
    assert.equal(res.status, 503);
    assert.equal(error.code, 'backend_not_awake');
    assert.match(error.message, /comfy-1 did not wake in time/);
    assert.ok(res.headers.get('retry-after'));
    assert.equal(card.packets.length, 1);
  } finally {
    await g.close();
    await card.close();
    await asleep.close();
  }
});
