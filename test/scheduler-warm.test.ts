/**
 * Warm-state routing over real sockets: two llama-swap fakes that each hold one model (as
 * their `GET /running` says), the gateway reading that residency, and the openai SDK as the
 * client. A call goes to the free box that holds its model, not to a faster free box that
 * would have to swap it in.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const chats = (f: FakeBackend) => f.requests.filter((r) => r.path === '/v1/chat/completions');
const modelOf = (r: { body: unknown }) => (r.body as { model: string }).model;
/** A llama-swap fake that takes 300 ms to swap a model in. */
const SWAPPING = { chunkCount: 8, loadingMs: 300 };

async function servedBy(client: OpenAI, model: string): Promise<string | null> {
  const { response } = await client.chat.completions
    .create({ model, messages: [{ role: 'user', content: 'hi' }] })
    .withResponse();
  return response.headers.get('x-gateway-backend');
}

const resident = (gw: TestGateway, backend: string, model: string) =>
  gw.gateway.residency.isResident(backend, model, Date.now()) === true;

describe('warm-state routing over sockets', () => {
  test('a swap avoided: the call goes to the free box that holds its model, though the other is faster', async (t) => {
    // the fast box holds m1, the slow one m2; both serve both models
    const fast = await startFake('llamaswap', { models: ['m1', 'm2'], knobs: { ...SWAPPING, tokensPerSecond: 2000 } });
    const slow = await startFake('llamaswap', { models: ['m2', 'm1'], knobs: { ...SWAPPING, tokensPerSecond: 100 } });
    const gw = await startGateway(
      [
        { name: 'fast', url: fast.url, max_concurrent: 1 },
        { name: 'slow', url: slow.url, max_concurrent: 1 },
      ],
      { health_check_interval: 3600 },
    );
    t.after(async () => {
      await gw.close();
      await fast.close();
      await slow.close();
    });
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 10_000 });
    await waitFor(() => resident(gw, 'fast', 'm1') && resident(gw, 'slow', 'm2'), 'residency read from /running');

    // both boxes measured on the model they hold: 'fast' is the faster one
    assert.equal(await servedBy(client, 'fast/m1'), 'fast');
    assert.equal(await servedBy(client, 'slow/m2'), 'slow');
    const speeds = Object.fromEntries(gw.gateway.scheduler.snapshot().backends.map((b) => [b.name, b.speed ?? 0]));
    assert.ok(speeds.fast > speeds.slow, `fast is faster: ${JSON.stringify(speeds)}`);

    for (let i = 0; i < 3; i++) {
      assert.equal(await servedBy(client, 'm2'), 'slow', 'm2 where it is loaded');
      assert.equal(await servedBy(client, 'm1'), 'fast', 'm1 where it is loaded');
    }
    assert.deepEqual(chats(fast).map(modelOf), Array(4).fill('m1'), 'no swap on fast');
    assert.deepEqual(chats(slow).map(modelOf), Array(4).fill('m2'), 'no swap on slow');
    assert.equal(resident(gw, 'fast', 'm1'), true);
    assert.equal(resident(gw, 'slow', 'm2'), true);
  });

  test('a slot is not a model: a call for a model a busy box does not hold waits for the box holding it', async (t) => {
    // one box of two slots holding m1 (busy with a long m1 stream), one box of one slot holding m2 (busy too)
    const slowly = { ...SWAPPING, tokensPerSecond: 20 };
    const big = await startFake('llamaswap', { models: ['m1', 'm2'], knobs: { ...slowly, chunkCount: 20 } });
    const small = await startFake('llamaswap', { models: ['m2', 'm1'], knobs: { ...slowly, chunkCount: 10 } });
    const gw = await startGateway(
      [
        { name: 'big', url: big.url, max_concurrent: 2 },
        { name: 'small', url: small.url, max_concurrent: 1 },
      ],
      { health_check_interval: 3600 },
    );
    t.after(async () => {
      await gw.close();
      await big.close();
      await small.close();
    });
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 20_000 });
    await waitFor(() => resident(gw, 'big', 'm1') && resident(gw, 'small', 'm2'), 'residency read from /running');

    const longOnBig = servedBy(client, 'big/m1');
    const onSmall = servedBy(client, 'small/m2');
    await waitFor(() => chats(big).length === 1 && chats(small).length === 1, 'both boxes busy');
    // big has a free slot, but m2 would have to load beside the running m1 call: it waits for small
    const m2 = servedBy(client, 'm2');
    await waitFor(() => gw.gateway.scheduler.snapshot().parked.length === 1, 'the m2 call parks');
    assert.equal(await onSmall, 'small');
    assert.equal(await m2, 'small');
    assert.equal(chats(big).length, 1, 'nothing was sent beside the running m1 call');
    assert.equal(await longOnBig, 'big');
  });
});
