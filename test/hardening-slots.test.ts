/**
 * Every lease has a deadline and comes back on every path: a backend that sends its head and
 * then nothing, a non-stream answer slower than the stream first-byte limit, a client that
 * stops reading, an exception inside an attempt, a body nested 10,000 deep (more on the
 * deadlines after the first byte in hardening-deadlines.test.ts).
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { UpstreamIdleWatch } from '../src/upstream/idle-watch.ts';
import { startFake } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const post = (url: string, body: unknown) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
const ask = (model: string, stream: boolean, text = 'hi') => ({
  model,
  stream,
  messages: [{ role: 'user', content: text }],
});
const inflight = (gw: TestGateway, name: string) =>
  gw.gateway.scheduler.snapshot().backends.find((b) => b.name === name)!.inflight;

describe('no slot without a deadline', () => {
  test('a stream whose backend sends the head and then nothing is cut at first_byte_timeout_s and fails over', async (t) => {
    const silent = await startFake('vllm', { models: ['m'], knobs: { headThenSilence: true } });
    const good = await startFake('llamacpp', { models: ['m'] });
    const gw = await startGateway(
      [
        { name: 'silent', url: silent.url, max_concurrent: 1 },
        { name: 'good', url: good.url },
      ],
      { first_byte_timeout_s: 0.3 },
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
    assert.equal(order[0].backend, 'silent', 'the silent backend is tried first');
    const res = await post(gw.url, ask('m', true));
    const text = await res.text();
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gateway-backend'), 'good', 'failover stayed invisible');
    assert.ok(text.trimEnd().endsWith('data: [DONE]'));
    assert.equal(inflight(gw, 'silent'), 0);
    await waitFor(() => silent.inflight === 0, 'upstream aborted');
  });

  test('the only backend sends a head and then nothing: the stream call ends with 504 and the slot comes back', async (t) => {
    const silent = await startFake('vllm', { models: ['m'], knobs: { headThenSilence: true } });
    const gw = await startGateway([{ name: 'silent', url: silent.url, max_concurrent: 1 }], {
      first_byte_timeout_s: 0.3,
      stream_keepalive_s: 0,
    });
    t.after(async () => {
      await gw.close();
      await silent.close();
    });
    const res = await post(gw.url, ask('m', true));
    assert.equal(res.status, 504);
    assert.equal(((await res.json()) as any).error.code, 'upstream_timeout');
    assert.equal(inflight(gw, 'silent'), 0);
  });

  test('a non-stream call waits request_timeout_s for its answer, not the stream first-byte limit', async (t) => {
    const slow = await startFake('vllm', { models: ['m'], knobs: { latencyMs: 600 } });
    const gw = await startGateway([{ name: 'slow', url: slow.url, max_concurrent: 1 }], {
      first_byte_timeout_s: 0.2,
      request_timeout_s: 5,
    });
    t.after(async () => {
      await gw.close();
      await slow.close();
    });
    const res = await post(gw.url, ask('m', false));
    assert.equal(res.status, 200, 'a 600 ms non-stream answer is not cut by a 200 ms first-byte limit');
    assert.equal(gw.gateway.registry.get('slow')!.consecutiveFailures, 0);

    slow.setKnobs({ latencyMs: 0, headThenSilence: true });
    await gw.gateway.reload({ ...gw.gateway.config(), request_timeout_s: 0.3 });
    const started = Date.now();
    const cut = await post(gw.url, ask('m', false));
    assert.equal(cut.status, 504);
    assert.ok(Date.now() - started < 3000);
    assert.equal(inflight(gw, 'slow'), 0);
  });

  test('a client that stops reading is ended after client_stall_timeout_s: slot freed, upstream aborted, 499 client_stalled, backend not blamed', async (t) => {
    // 16 MB in 64 KB events: more than the socket buffers hold, in few enough writes to fill them fast on a loaded machine
    const fast = await startFake('vllm', {
      models: ['m'],
      knobs: { toolCall: true, toolCallArguments: 'x'.repeat(16 << 20), chunkCount: 256 },
    });
    // the backend's idle deadline is as short: it must not fire while the gateway waits for the client
    const gw = await startGateway([{ name: 'fast', url: fast.url, max_concurrent: 1 }], {
      stream_idle_timeout_s: 0.5,
      client_stall_timeout_s: 0.5,
      stats_flush_ms: 20,
    });
    t.after(async () => {
      await gw.close();
      await fast.close();
    });
    const { port } = new URL(gw.url);
    const body = JSON.stringify(ask('m', true, 'x'.repeat(20)));
    const socket = connect(Number(port), '127.0.0.1');
    t.after(() => socket.destroy());
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    socket.pause(); // never read: the gateway's socket buffer fills up
    await waitFor(() => fast.inflight === 1, 'stream started');
    await waitFor(() => inflight(gw, 'fast') === 0, 'slot freed although the socket stays open', 5000);
    await waitFor(() => fast.inflight === 0, 'upstream aborted');
    const row = gw.gateway.callLog.recent({ limit: 1 })[0];
    assert.equal(row.status, 499);
    assert.equal(row.reason, 'client_stalled');
    assert.equal(gw.gateway.registry.get('fast')!.consecutiveFailures, 0, 'the backend is not charged a failure');
    assert.equal(gw.gateway.registry.get('fast')!.healthy, true);
  });

  test('an exception thrown inside an attempt still releases the slot', async (t) => {
    const fake = await startFake('vllm', { models: ['m'] });
    const gw = await startGateway([{ name: 'v', url: fake.url, max_concurrent: 1 }]);
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    const pools = gw.gateway.pools;
    const realGet = pools.get.bind(pools);
    let throws = 2;
    pools.get = (name, url) => {
      if (throws-- > 0) throw new Error('thrown on purpose inside the attempt');
      return realGet(name, url);
    };
    for (const stream of [false, true]) {
      const res = await post(gw.url, ask('m', stream));
      assert.equal(res.status, 500);
      assert.equal(((await res.json()) as any).error.type, 'api_error');
      assert.equal(inflight(gw, 'v'), 0, `slot back after a throw (stream: ${stream})`);
    }
    const ok = await post(gw.url, ask('m', false));
    assert.equal(ok.status, 200);
  });

  test('an exception thrown while a body is read releases the slot and is not blamed on the backend', async (t) => {
    const fake = await startFake('vllm', { models: ['m'] });
    const gw = await startGateway([{ name: 'v', url: fake.url, max_concurrent: 1 }]);
    const realRefresh = UpstreamIdleWatch.prototype.refresh;
    t.after(async () => {
      UpstreamIdleWatch.prototype.refresh = realRefresh;
      await gw.close();
      await fake.close();
    });
    let throws = 1;
    UpstreamIdleWatch.prototype.refresh = function refresh(this: UpstreamIdleWatch) {
      if (throws-- > 0) throw new Error('thrown on purpose inside the body read');
      realRefresh.call(this);
    };
    const res = await post(gw.url, ask('m', false));
    assert.equal(res.status, 500, "the gateway's own fault");
    assert.equal(((await res.json()) as any).error.type, 'api_error');
    assert.equal(inflight(gw, 'v'), 0, 'slot back');
    assert.equal(gw.gateway.registry.get('v')!.consecutiveFailures, 0, 'the backend is not blamed');
    await waitFor(() => fake.inflight === 0, 'upstream body let go');
    const ok = await post(gw.url, ask('m', false));
    assert.equal(ok.status, 200);
  });

  test('a body nested 10,000 deep is a 400 at parse time and blocks nothing', async (t) => {
    const fake = await startFake('vllm', { models: ['m'] });
    const gw = await startGateway([{ name: 'v', url: fake.url, max_concurrent: 2 }], { park_timeout_s: 1 });
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    const deep = `{"model":"m","messages":[{"role":"user","content":"hi"}],"x":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
    for (let i = 0; i < 3; i++) {
      const res = await post(gw.url, deep);
      assert.equal(res.status, 400);
      const err = ((await res.json()) as any).error;
      assert.equal(err.type, 'invalid_request_error');
      assert.match(err.message, /nests deeper/);
    }
    assert.equal(inflight(gw, 'v'), 0);
    const started = Date.now();
    const ok = await post(gw.url, ask('m', false));
    assert.equal(ok.status, 200);
    assert.ok(Date.now() - started < 900, 'the next call did not park');
  });

  test('an oversized body gets an OpenAI-shaped 413, not a reset, and the gateway keeps serving', async (t) => {
    const fake = await startFake('vllm', { models: ['m'] });
    const gw = await startGateway([{ name: 'v', url: fake.url }]);
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    const big = JSON.stringify(ask('m', false, 'x'.repeat(33 * 1024 * 1024)));
    const res = await post(gw.url, big);
    assert.equal(res.status, 413);
    const err = ((await res.json()) as any).error;
    assert.equal(err.code, 'request_too_large');
    assert.equal(err.type, 'invalid_request_error');
    assert.equal(fake.requests.filter((r) => r.path === '/v1/chat/completions').length, 0);
    assert.equal((await post(gw.url, ask('m', false))).status, 200);
  });
});
