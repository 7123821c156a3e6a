/**
 * The demo's Wake-on-LAN step (scripts/demo.ts): a fake llama.cpp box, "sleepy", whose network
 * card is a UDP listener on 127.0.0.1. Once switched off (its HTTP server closed) it starts
 * listening again only when its magic packet arrives; a streamed call for it sends the packet,
 * parks with `: waking backend=sleepy` keep-alives, and is served the moment the box answers.
 */
import { createSocket } from 'node:dgram';
import type { BackendSpec } from '../src/config/types.ts';
import { startFake, type FakeBackend } from '../test/fakes/index.ts';

const MODELS = ['qwen3-14b-q4_k_m'];
const MAC = '52:54:00:12:34:56';

export interface SleepyBox {
  backend: BackendSpec;
  /** Switches the box off: its port refuses connections until its packet arrives. */
  sleep(): Promise<void>;
  packets: Buffer[];
  close(): Promise<void>;
}

export async function startSleepyBox(
  spec: (s: Partial<BackendSpec> & { name: string; url: string }) => BackendSpec,
): Promise<SleepyBox> {
  let box: FakeBackend | undefined = await startFake('llamacpp', { models: MODELS });
  const port = Number(new URL(box.url).port);
  const packets: Buffer[] = [];
  const card = createSocket('udp4');
  card.on('message', (packet) => {
    packets.push(packet);
    // the box boots: its server listens again on the same port
    if (!box) void startFake('llamacpp', { models: MODELS, port }).then((b) => (box = b));
  });
  await new Promise<void>((resolve) => card.bind(0, '127.0.0.1', () => resolve()));
  const wake = { mac: MAC, address: '127.0.0.1', port: card.address().port, boot_timeout_s: 30 };
  return {
    backend: spec({ name: 'sleepy', url: box.url, wake }),
    packets,
    sleep: async () => {
      const was = box;
      box = undefined;
      await was?.close();
    },
    close: async () => {
      card.close();
      await box?.close();
    },
  };
}

export async function wakeWalkthrough(
  base: string,
  say: (text: string) => void,
  step: number,
  box: SleepyBox,
  probe: () => Promise<void>,
): Promise<void> {
  say(`\n${step}. Wake-on-LAN — "sleepy" (wake: mac ${MAC}, its packet sent to a UDP listener on 127.0.0.1):`);
  await box.sleep();
  await probe();
  type Health = { backends: { sleepy: { healthy: boolean; error: { kind: string } | null } } };
  const before = ((await (await fetch(`${base}/health`)).json()) as Health).backends.sleepy;
  say(`   switched off: healthy=${before.healthy} (${before.error?.kind}); a streamed call for it parks and wakes it:`);
  const started = Date.now();
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: `sleepy/${MODELS[0]}`,
      stream: true,
      messages: [{ role: 'user', content: 'Good morning' }],
    }),
  });
  const text = await res.text();
  for (const line of text.split('\n').filter((l) => l.startsWith(':'))) say(`   ${line}`);
  const events = text.split('\n').filter((l) => l.startsWith('data: {')).length;
  const packet = box.packets[0];
  const bytes = packet ? `${packet.length} bytes: ${packet.subarray(0, 12).toString('hex')}…` : 'none';
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  say(`   packet: ${box.packets.length} (${bytes}); served after ${seconds} s: ${events} data events and [DONE]`);
  type Woken = { backends: { sleepy: { wake: { state: string; woke_after_s: number | null } } } };
  const wake = ((await (await fetch(`${base}/health`)).json()) as Woken).backends.sleepy.wake;
  say(`   /health: wake state ${wake.state}, woke ${wake.woke_after_s} s after its packet`);
}
