/**
 * Streams that wait stay alive: after stream_keepalive_s without a byte the SSE head goes out
 * and then a comment every stream_keepalive_s (queued position while parked, "waiting for
 * first token" after dispatch); failover stays invisible until the first data event, and a
 * refusal after the head is an OpenAI-shaped error event. The openai SDK ignores comments.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { startFake } from './fakes/index.ts';
import { startGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const post = (url: string, body: unknown) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
const ask = (model: string, stream = true) => ({ model, stream, messages: [{ role: 'user', content: 'hi' }] });

describe('parked streams stay alive', () => {
  test('a parked stream gets the head and queued comments, then the answer', async (t) => {
    const box = await startFake('llamacpp', { models: ['m'], knobs: { latencyMs: 700 } });
    const gw = await startGateway([{ name: 'box', url: box.url, max_concurrent: 1 }], {
      stream_keepalive_s: 0.15,
      park_timeout_s: 10,
    });
    t.after(async () => {
      await gw.close();
      await box.close();
    });
    const hog = post(gw.url, ask('m', false));
    await waitFor(() => box.inflight === 1, 'slot taken');
    const started = Date.now();
    const res = await post(gw.url, ask('m'));
    const headAfter = Date.now() - started;
    assert.equal(res.status, 200);
    assert.ok(headAfter < 600, `head sent while parked (${headAfter} ms), not with the first token`);
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    const text = await res.text();
    assert.match(text, /^: queued position=1 waited_s=\d+(?: eta_s=[\d.]+)?\n\n/);
    assert.match(text, /: waiting for first token\n\n/, 'after dispatch (the fake waits 700 ms before its head)');
    assert.ok(text.trimEnd().endsWith('data: [DONE]'));
    assert.equal((await hog).status, 200);
  });

  test('the openai SDK reads a kept-alive stream as if nothing happened', async (t) => {
    const box = await startFake('vllm', { models: ['m'], knobs: { prefillMs: 500 } });
    const gw = await startGateway([{ name: 'box', url: box.url }], { stream_keepalive_s: 0.1 });
    t.after(async () => {
      await gw.close();
      await box.close();
    });
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'm',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    let content = '';
    for await (const chunk of stream) content += chunk.choices[0]?.delta?.content ?? '';
    assert.ok(content.length > 0);
  });

  test("a failover after the head is still invisible: comments, then the second backend's data", async (t) => {
    const silent = await startFake('vllm', { models: ['m'], knobs: { headThenSilence: true } });
    const good = await startFake('llamacpp', { models: ['m'] });
    const gw = await startGateway(
      [
        { name: 'silent', url: silent.url },
        { name: 'good', url: good.url },
      ],
      { stream_keepalive_s: 0.1, first_byte_timeout_s: 0.5 },
    );
    t.after(async () => {
      await gw.close();
      await silent.close();
      await good.close();
    });
    const order = gw.gateway.scheduler.order([
      { backend: 'silent', model: 'm' },
      { backend: 'good', model: 'm' },
    ]);
    assert.equal(order[0].backend, 'silent');
    const text = await (await post(gw.url, ask('m'))).text();
    assert.match(text, /^: waiting for first token\n\n/);
    assert.ok(!text.includes('"error"'));
    assert.ok(text.trimEnd().endsWith('data: [DONE]'));
    assert.ok(good.requests.some((r) => r.path === '/v1/chat/completions'));
  });

  test('a refusal after the head is an OpenAI-shaped error event with the JSON body it would have had', async (t) => {
    const box = await startFake('llamacpp', { models: ['m'], knobs: { latencyMs: 1500 } });
    const gw = await startGateway([{ name: 'box', url: box.url, max_concurrent: 1 }], {
      stream_keepalive_s: 0.1,
      park_timeout_s: 0.5,
      stats_flush_ms: 20,
    });
    t.after(async () => {
      await gw.close();
      await box.close();
    });
    const hog = post(gw.url, ask('m', false));
    await waitFor(() => box.inflight === 1, 'slot taken');
    const res = await post(gw.url, ask('m'));
    assert.equal(res.status, 200, 'the head went out while parked');
    const text = await res.text();
    const events = text.split('\n\n').filter((e) => e.startsWith('data: '));
    assert.equal(events.length, 1);
    const body = JSON.parse(events[0].slice(6));
    assert.equal(body.error.code, 'park_timeout');
    assert.equal(body.error.type, 'api_error');
    assert.equal(typeof body.error.message, 'string');
    assert.ok('param' in body.error);
    await hog;
    assert.ok(gw.gateway.callLog.recent({ limit: 5 }).some((r) => r.status === 503 && r.reason === 'park_timeout'));
  });

  test('stream_keepalive_s: 0 keeps the old behaviour (no byte before the first token)', async (t) => {
    const box = await startFake('vllm', { models: ['m'], knobs: { prefillMs: 300 } });
    const gw = await startGateway([{ name: 'box', url: box.url }], { stream_keepalive_s: 0 });
    t.after(async () => {
      await gw.close();
      await box.close();
    });
    const text = await (await post(gw.url, ask('m'))).text();
    assert.ok(text.startsWith('data: '));
  });
});
