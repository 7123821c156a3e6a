/**
 * Failover before the response head, pass-through after it, and the error statuses of a
 * fleet in trouble — over real sockets against fake backends.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startFake } from './fakes/index.ts';
import { startGateway } from './helpers/gateway.ts';

const chat = (url: string, model: string, extra: Record<string, unknown> = {}) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra }),
  });

describe('failover and upstream errors', () => {
  test('a backend refusing connections fails over to the next candidate', async (t) => {
    const dead = await startFake('llamacpp', { models: ['m'] });
    const alive = await startFake('vllm', { models: ['m'] });
    const gw = await startGateway([
      { name: 'dead', url: dead.url },
      { name: 'alive', url: alive.url },
    ]);
    t.after(async () => {
      await gw.close();
      await dead.close();
      await alive.close();
    });
    dead.setKnobs({ refuse: true });
    // the dead box is never measured and listed first: make sure it is tried first
    const order = gw.gateway.scheduler.order([
      { backend: 'dead', model: 'm' },
      { backend: 'alive', model: 'm' },
    ]);
    assert.equal(order[0].backend, 'dead');
    const res = await chat(gw.url, 'm');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gateway-backend'), 'alive');
  });

  test("llama-swap's 502 'unable to start process' and llama.cpp's 503 'Loading model' fail over", async (t) => {
    const swap = await startFake('llamaswap', { models: ['m'] });
    const loading = await startFake('llamacpp', { models: ['m'] });
    const good = await startFake('ollama', { models: ['m'] });
    const gw = await startGateway([
      { name: 'swap', url: swap.url },
      { name: 'loading', url: loading.url },
      { name: 'good', url: good.url },
    ]);
    t.after(async () => {
      await gw.close();
      await swap.close();
      await loading.close();
      await good.close();
    });
    swap.setKnobs({ unableToStart: true });
    loading.setKnobs({ loadingMs: 60_000 });
    for (let i = 0; i < 3; i++) {
      const res = await chat(gw.url, 'm');
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-gateway-backend'), 'good');
    }
  });

  test('other upstream statuses pass through with their body', async (t) => {
    const fake = await startFake('vllm', { models: ['m'] });
    const gw = await startGateway([{ name: 'v', url: fake.url }]);
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    fake.setKnobs({
      errorStatus: 400,
      errorBody: { object: 'error', message: 'max_tokens is too large', type: 'BadRequestError', code: 400 },
    });
    const res = await chat(gw.url, 'v/m');
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('x-gateway-backend'), 'v');
    assert.deepEqual(await res.json(), {
      object: 'error',
      message: 'max_tokens is too large',
      type: 'BadRequestError',
      code: 400,
    });
  });

  test('no healthy backend: 503 OpenAI-shaped, never parks', async (t) => {
    const fake = await startFake('llamacpp', { models: ['m'] });
    const gw = await startGateway([{ name: 'box', url: fake.url }]);
    await fake.close();
    t.after(() => gw.close());
    await gw.gateway.discovery.pollAll();
    const started = Date.now();
    const res = await chat(gw.url, 'box/m');
    assert.equal(res.status, 503);
    assert.ok(Date.now() - started < 1000, 'answered at once');
    const body = (await res.json()) as { error: { code: string; type: string; message: string } };
    assert.equal(body.error.code, 'no_healthy_backend');
    assert.equal(gw.gateway.registry.get('box')!.models.length, 1, 'a down backend keeps its model list');
  });

  test('upstream timeout before the head: 504', async (t) => {
    const slow = await startFake('vllm', { models: ['m'] });
    const gw = await startGateway([{ name: 'slow', url: slow.url }], { request_timeout_s: 0.3 });
    t.after(async () => {
      await gw.close();
      await slow.close();
    });
    slow.setKnobs({ latencyMs: 2000 });
    const res = await chat(gw.url, 'm');
    assert.equal(res.status, 504);
    const body = (await res.json()) as { error: { code: string } };
    assert.equal(body.error.code, 'upstream_timeout');
  });

  test('a stream that breaks after bytes reached the client ends with an error event and no [DONE]', async (t) => {
    const fake = await startFake('llamacpp', { models: ['m'] });
    const gw = await startGateway([{ name: 'box', url: fake.url }]);
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    fake.setKnobs({ dropAfterChunks: 3, chunkCount: 10 });
    const res = await chat(gw.url, 'm', { stream: true });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    const text = await res.text();
    const events = text.split('\n\n').filter(Boolean);
    assert.ok(events.length >= 4, 'content chunks relayed before the break');
    assert.ok(!text.includes('[DONE]'), 'no fabricated [DONE]');
    const last = JSON.parse(events.at(-1)!.replace(/^data: /, ''));
    assert.equal(last.error.code, 'stream_interrupted');
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(gw.gateway.scheduler.snapshot().backends[0].inflight, 0, 'slot released');
  });

  test('first_byte_timeout_s cuts a silent backend and fails over to the next', async (t) => {
    const silent = await startFake('llamacpp', { models: ['m'] });
    const good = await startFake('vllm', { models: ['m'] });
    const gw = await startGateway(
      [
        { name: 'silent', url: silent.url },
        { name: 'good', url: good.url },
      ],
      { first_byte_timeout_s: 0.3 },
    );
    t.after(async () => {
      await gw.close();
      await silent.close();
      await good.close();
    });
    silent.setKnobs({ latencyMs: 5000 });
    const res = await chat(gw.url, 'm', { stream: true });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gateway-backend'), 'good');
    assert.ok((await res.text()).includes('data: [DONE]'));
    assert.ok(
      silent.requests.some((r) => r.path === '/v1/chat/completions'),
      'the silent backend was tried first',
    );
  });
});
