/**
 * The paid spill rule over real sockets: a local box (cap 1) busy with a long stream, a free
 * paid box, and `spill_after_s`. A call spills only when the local box's predicted wait is past
 * the threshold, or once it has been parked that long; otherwise it waits for the local box.
 * Which box served it is read from `x-gateway-backend`.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const chats = (f: FakeBackend) => f.requests.filter((r) => r.path.endsWith('/chat/completions'));

async function chat(gw: TestGateway, model: string): Promise<{ backend: string | null; endedAt: number }> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assert.ok(text.trimEnd().endsWith('data: [DONE]'));
  return { backend: res.headers.get('x-gateway-backend'), endedAt: Date.now() };
}

/**
 * A local vLLM fake (cap 1) measured by one call of about `measuredMs`, then held by a stream
 * of about `holdMs`; a free paid fake; both serve `m`.
 */
async function busyLocalFleet(
  t: { after: (fn: () => Promise<void>) => void },
  spillAfterS: number,
  measuredMs: number,
  holdMs: number,
) {
  const measuring = { tokensPerSecond: 1000 / (measuredMs / 4), chunkCount: 4 };
  const local = await startFake('vllm', { models: ['m'], knobs: measuring });
  const cloud = await startFake('openrouter', { models: ['m'], knobs: { tokensPerSecond: 1000, chunkCount: 4 } });
  const gw = await startGateway(
    [
      { name: 'local', url: local.url, max_concurrent: 1 },
      { name: 'cloud', url: cloud.url, paid: true },
    ],
    { spill_after_s: spillAfterS, health_check_interval: 3600 },
  );
  t.after(async () => {
    await gw.close();
    await local.close();
    await cloud.close();
  });
  assert.equal((await chat(gw, 'local/m')).backend, 'local', 'measured once');
  local.knobs.tokensPerSecond = 1000 / (holdMs / 10);
  local.knobs.chunkCount = 10;
  const held = chat(gw, 'local/m');
  await waitFor(() => chats(local).length === 2, 'the local box is busy');
  return { gw, local, cloud, held };
}

describe('paid spill over sockets', () => {
  test('under the threshold: the call waits for the local box, the free paid one is left alone', async (t) => {
    const { gw, cloud, held } = await busyLocalFleet(t, 5, 80, 800);
    const call = await chat(gw, 'm');
    assert.equal(call.backend, 'local');
    assert.ok(call.endedAt >= (await held).endedAt, 'after the stream that held the box');
    assert.equal(chats(cloud).length, 0, 'nothing went paid');
  });

  test('past the threshold: the local wait is predicted over it, so the call spills at once', async (t) => {
    // measured ≈ 1 s a call, threshold 0.3 s
    const { gw, cloud, held } = await busyLocalFleet(t, 0.3, 1000, 3000);
    const call = await chat(gw, 'm');
    assert.equal(call.backend, 'cloud');
    assert.equal(chats(cloud).length, 1);
    assert.ok(call.endedAt < (await held).endedAt, 'while the local box was still busy');
  });

  test('parked as long as the threshold: the spill timer sends it to the paid box', async (t) => {
    // measured ≈ 0.08 s a call (under 0.3 s), but the box is held for 3 s
    const { gw, cloud, held } = await busyLocalFleet(t, 0.3, 80, 3000);
    const since = Date.now();
    const call = await chat(gw, 'm');
    assert.equal(call.backend, 'cloud');
    assert.ok(call.endedAt - since >= 300, `parked ${call.endedAt - since} ms first`);
    assert.ok(call.endedAt < (await held).endedAt, 'while the local box was still busy');
    assert.equal(chats(cloud).length, 1);
  });
});
