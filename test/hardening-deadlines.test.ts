/**
 * Every wait after the first byte has one owner and one end:
 * - the backend's silence mid-body, stream or not (`stream_idle_timeout_s`): a 502, the slot
 *   freed, the backend's failure counted; a non-stream answer's `request_timeout_s` only
 *   bounds the wait for its first byte;
 * - a client that stops reading (`client_stall_timeout_s`, its own key): 499
 *   `client_stalled`, the backend not blamed, the backend's clock stopped while the gateway
 *   waits for its client;
 * - a stalled event loop (a loaded machine) is neither: bytes that arrived during it are read
 *   before a deadline is believed.
 */
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { ANTHROPIC_FAKE_API_KEY, startAnthropicFake, startFake } from './fakes/index.ts';
import { listenFake } from './fakes/listen.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const post = (url: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    // today's gateway would hold a half answer for request_timeout_s: fail fast instead
    signal: AbortSignal.timeout(8000),
  });
const CHAT = '/v1/chat/completions';
const ask = (model: string, stream: boolean) => ({ model, stream, messages: [{ role: 'user', content: 'hi' }] });
const inflight = (gw: TestGateway, name: string) =>
  gw.gateway.scheduler.snapshot().backends.find((b) => b.name === name)!.inflight;
const failures = (gw: TestGateway, name: string) => gw.gateway.registry.get(name)!.consecutiveFailures;
const lastRow = (gw: TestGateway) => gw.gateway.callLog.recent({ limit: 1 })[0];
const sseChunk = (content: string) => {
  const chunk = { id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content } }] };
  return `data: ${JSON.stringify(chunk)}\n\n`;
};

/**
 * A backend whose answers the test writes by hand: it lists model `m`, and each generation
 * request waits in `next()` for the test to answer it.
 */
async function scriptedBackend(t: TestContext) {
  const waiting: ((res: ServerResponse) => void)[] = [];
  const pending: ServerResponse[] = [];
  const { port, close } = await listenFake({
    label: 'scripted',
    refuse: () => false,
    crashed: (res) => res.destroy(),
    handle: async (req, res) => {
      req.resume();
      if (req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ id: 'm', object: 'model', owned_by: 'test' }] }));
        return;
      }
      await new Promise((resolve) => req.once('end', resolve));
      const take = waiting.shift();
      if (take) take(res);
      else pending.push(res);
    },
  });
  t.after(close);
  return {
    url: `http://127.0.0.1:${port}`,
    next: () =>
      new Promise<ServerResponse>((resolve) => {
        const res = pending.shift();
        if (res) resolve(res);
        else waiting.push(resolve);
      }),
  };
}

/** Blocks the whole process, gateway and backends included, like a machine too loaded to run it. */
function stallEventLoop(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    /* busy */
  }
}

/**
 * A fake that floods a stream: 16 MB in 64 KB events, more than the socket buffers hold, in few
 * enough writes to fill them fast on a loaded machine.
 */
const flooding = () =>
  startFake('vllm', {
    models: ['m'],
    knobs: { toolCall: true, toolCallArguments: 'x'.repeat(16 << 20), chunkCount: 256 },
  });

/** A stream call from a client that never reads a byte of the answer (its socket stays open). */
async function stalledStreamClient(
  t: TestContext,
  gw: TestGateway,
  call: { path: string; body: unknown; head?: string } = { path: CHAT, body: ask('m', true) },
): Promise<Socket> {
  const body = JSON.stringify(call.body);
  const socket = connect(gw.port, '127.0.0.1');
  t.after(() => socket.destroy());
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const length = Buffer.byteLength(body);
  const head =
    `POST ${call.path} HTTP/1.1\r\nhost: 127.0.0.1:${gw.port}\r\n${call.head ?? ''}` +
    `content-type: application/json\r\ncontent-length: ${length}`;
  socket.write(`${head}\r\n\r\n${body}`);
  socket.pause(); // never read: the gateway's socket buffer fills up
  return socket;
}

describe('a non-stream answer that stops halfway', () => {
  test('is cut after stream_idle_timeout_s (not request_timeout_s): 502, slot freed, failure counted', async (t) => {
    const half = await startFake('vllm', { models: ['m'], knobs: { halfBodyThenSilence: true } });
    const gw = await startGateway([{ name: 'half', url: half.url, max_concurrent: 1 }], {
      stream_idle_timeout_s: 0.3,
      request_timeout_s: 60,
      stats_flush_ms: 20,
    });
    t.after(async () => {
      await gw.close();
      await half.close();
    });
    const started = Date.now();
    const res = await post(gw.url, CHAT, ask('m', false));
    const took = Date.now() - started;
    assert.equal(res.status, 502);
    const error = ((await res.json()) as any).error;
    assert.equal(error.code, 'upstream_bad_response');
    assert.match(error.message, /halfway.*stream_idle_timeout_s/);
    assert.ok(took >= 250 && took < 5000, `cut after ${took} ms`);
    assert.equal(inflight(gw, 'half'), 0, 'slot freed');
    await waitFor(() => half.inflight === 0, 'upstream aborted');
    assert.equal(failures(gw, 'half'), 1, "the backend's failure is counted");
    await waitFor(() => lastRow(gw)?.status === 502, 'the call is logged as a 502');
  });

  test('fails over while nothing reached the client; the stalled backend is charged', async (t) => {
    const half = await startFake('vllm', { models: ['m'], knobs: { halfBodyThenSilence: true } });
    const good = await startFake('llamacpp', { models: ['m'] });
    const gw = await startGateway(
      [
        { name: 'half', url: half.url, max_concurrent: 1 },
        { name: 'good', url: good.url },
      ],
      { stream_idle_timeout_s: 0.3, request_timeout_s: 60 },
    );
    t.after(async () => {
      await gw.close();
      await half.close();
      await good.close();
    });
    const order = gw.gateway.scheduler.order([
      { backend: 'half', model: 'm' },
      { backend: 'good', model: 'm' },
    ]);
    assert.equal(order[0].backend, 'half', 'the stalling backend is tried first');
    const res = await post(gw.url, CHAT, ask('m', false));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gateway-backend'), 'good');
    assert.equal(((await res.json()) as any).object, 'chat.completion');
    assert.equal(failures(gw, 'half'), 1);
    assert.equal(failures(gw, 'good'), 0);
    assert.equal(inflight(gw, 'half'), 0);
  });

  test('request_timeout_s bounds only the first byte: an answer that keeps coming is served whole', async (t) => {
    const backend = await scriptedBackend(t);
    const gw = await startGateway([{ name: 's', url: backend.url }], {
      request_timeout_s: 0.5,
      stream_idle_timeout_s: 2,
    });
    t.after(() => gw.close());
    const answer = post(gw.url, CHAT, ask('m', false));
    const upstream = await backend.next();
    const json = JSON.stringify({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'slow but steady' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 1, completion_tokens: 3, total_tokens: 4 },
    });
    upstream.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(json)) });
    const third = Math.ceil(json.length / 3);
    upstream.write(json.slice(0, third));
    await delay(400);
    upstream.write(json.slice(third, 2 * third));
    await delay(400); // 0.8 s in all: past request_timeout_s, yet never silent for stream_idle_timeout_s
    upstream.end(json.slice(2 * third));
    const res = await answer;
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as any).choices[0].message.content, 'slow but steady');
    assert.equal(failures(gw, 's'), 0);
  });

  test('an error body that stalls, or a body whose connection breaks, is a bad answer (502), not "unreachable"', async (t) => {
    const backend = await scriptedBackend(t);
    const gw = await startGateway([{ name: 's', url: backend.url }], {
      stream_idle_timeout_s: 0.3,
      request_timeout_s: 60,
      stats_flush_ms: 20,
    });
    t.after(() => gw.close());
    const half = (upstream: ServerResponse, status: number) => {
      upstream.writeHead(status, { 'content-type': 'application/json', 'content-length': '4000' });
      upstream.write(`{"error":{"message":"${'x'.repeat(1000)}`);
    };
    const cases = [
      { what: 'a 500 whose body stalls', status: 500, broken: false, why: /stream_idle_timeout_s/ },
      { what: 'a 503 whose body stalls', status: 503, broken: false, why: /stream_idle_timeout_s/ },
      { what: 'a 200 whose connection closes halfway', status: 200, broken: true, why: /connection broke/ },
    ];
    for (const c of cases) {
      const answer = post(gw.url, CHAT, ask('m', false));
      const upstream = await backend.next();
      half(upstream, c.status);
      if (c.broken) setTimeout(() => upstream.socket?.destroy(), 50);
      const res = await answer;
      assert.equal(res.status, 502, c.what);
      const error = ((await res.json()) as any).error;
      assert.equal(error.code, 'upstream_bad_response', `${c.what}: ${error.message}`);
      assert.match(error.message, new RegExp(`stopped sending its ${c.status} answer halfway`), c.what);
      assert.match(error.message, c.why, c.what);
      assert.equal(inflight(gw, 's'), 0, `${c.what}: slot freed`);
    }
    assert.equal(failures(gw, 's'), 3, "each is the backend's failure");
  });

  test('a stream whose connection breaks before its first whole event is a bad answer too, not "unreachable"', async (t) => {
    const backend = await scriptedBackend(t);
    const gw = await startGateway([{ name: 's', url: backend.url }], { stream_idle_timeout_s: 5, stats_flush_ms: 20 });
    t.after(() => gw.close());
    const answer = post(gw.url, CHAT, ask('m', true));
    const upstream = await backend.next();
    upstream.writeHead(200, { 'content-type': 'text/event-stream' });
    upstream.write(sseChunk('a').slice(0, 20)); // half an event: nothing the client could be sent
    setTimeout(() => upstream.socket?.destroy(), 50);
    const res = await answer;
    assert.equal(res.status, 502);
    const error = ((await res.json()) as any).error;
    assert.equal(error.code, 'upstream_bad_response', error.message);
    assert.match(error.message, /stopped sending its 200 stream halfway: the connection broke/);
    assert.equal(inflight(gw, 's'), 0, 'slot freed');
    assert.equal(failures(gw, 's'), 1, "the backend's failure");
  });

  test('the same on /v1/messages (passthrough, translated) and /v1/responses, in their shapes', async (t) => {
    const claude = await startAnthropicFake({ knobs: { halfBodyThenSilence: true } });
    const chat = await startFake('vllm', { models: ['m'], knobs: { halfBodyThenSilence: true } });
    const gw = await startGateway(
      [
        { name: 'claude', url: claude.url, type: 'anthropic', api_key: ANTHROPIC_FAKE_API_KEY },
        { name: 'chat', url: chat.url },
      ],
      {
        stream_idle_timeout_s: 0.3,
        request_timeout_s: 60,
        virtual_models: { sonnet: { claude: claude.models[0] }, local: { chat: 'm' } },
      },
    );
    t.after(async () => {
      await gw.close();
      await claude.close();
      await chat.close();
    });
    const anthropic = { 'anthropic-version': '2023-06-01' };
    const messages = (model: string) => ({ model, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
    const cases = [
      { path: '/v1/messages', body: messages('sonnet'), headers: anthropic, backend: 'claude', shape: 'anthropic' },
      { path: '/v1/messages', body: messages('local'), headers: anthropic, backend: 'chat', shape: 'anthropic' },
      { path: '/v1/responses', body: { model: 'local', input: 'hi' }, headers: {}, backend: 'chat', shape: 'openai' },
    ] as const;
    let charged = 0;
    for (const c of cases) {
      const what = `${c.path} on ${c.backend}`;
      const started = Date.now();
      const res = await post(gw.url, c.path, c.body, c.headers);
      assert.equal(res.status, 502, what);
      assert.ok(Date.now() - started < 5000, what);
      const body = (await res.json()) as any;
      if (c.shape === 'anthropic') {
        assert.equal(body.type, 'error', what);
        assert.equal(typeof body.error.type, 'string', what);
      } else {
        assert.equal(body.error.code, 'upstream_bad_response', what);
      }
      assert.match(body.error.message, /halfway/, what);
      assert.equal(inflight(gw, c.backend), 0, `${what}: slot freed`);
      charged = c.backend === 'chat' ? charged + 1 : charged;
      assert.equal(failures(gw, c.backend), c.backend === 'chat' ? charged : 1, `${what}: failure counted`);
    }
    await waitFor(() => claude.inflight === 0 && chat.inflight === 0, 'upstreams aborted');
  });
});

describe('one owner per stall', () => {
  test("a stalled event loop is not the backend's silence: the bytes that came are read first", async (t) => {
    const backend = await scriptedBackend(t);
    const gw = await startGateway([{ name: 's', url: backend.url }], {
      stream_idle_timeout_s: 0.3,
      stats_flush_ms: 20,
    });
    t.after(() => gw.close());
    const answer = post(gw.url, CHAT, ask('m', true));
    const upstream = await backend.next();
    upstream.writeHead(200, { 'content-type': 'text/event-stream' });
    upstream.write(sseChunk('a'));
    const res = await answer;
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('"a"')) text += Buffer.from((await reader.read()).value!).toString('utf8');
    upstream.write(sseChunk('b')); // on its way to the gateway's socket before the stall
    stallEventLoop(1000); // 3 × stream_idle_timeout_s without a turn of the event loop
    await delay(50);
    upstream.end(`${sseChunk('c')}data: [DONE]\n\n`);
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += Buffer.from(r.value).toString('utf8');
    assert.doesNotMatch(text, /stream_interrupted|idle/, text);
    assert.ok(text.includes('"b"') && text.includes('"c"') && text.trimEnd().endsWith('data: [DONE]'), text);
    assert.equal(failures(gw, 's'), 0, 'the backend is not blamed');
    await waitFor(() => lastRow(gw)?.status === 200, 'the call is logged as complete');
  });

  test('a client that stops reading owns the wait: client_stall_timeout_s ends it (499), not the idle', async (t) => {
    const fast = await flooding();
    const gw = await startGateway([{ name: 'fast', url: fast.url, max_concurrent: 1 }], {
      stream_idle_timeout_s: 0.2,
      client_stall_timeout_s: 2,
      stats_flush_ms: 20,
    });
    t.after(async () => {
      await gw.close();
      await fast.close();
    });
    await stalledStreamClient(t, gw);
    await waitFor(() => fast.inflight === 1, 'stream started');
    await delay(1000);
    assert.equal(inflight(gw, 'fast'), 1, 'held past stream_idle_timeout_s: the client is waited for, not the backend');
    await waitFor(() => inflight(gw, 'fast') === 0, 'slot freed after client_stall_timeout_s', 8000);
    await waitFor(() => fast.inflight === 0, 'upstream aborted');
    await waitFor(() => lastRow(gw)?.status === 499, 'logged as 499');
    assert.equal(lastRow(gw).reason, 'client_stalled');
    assert.equal(failures(gw, 'fast'), 0, 'the backend is not charged a failure');
    assert.equal(gw.gateway.registry.get('fast')!.healthy, true);
  });

  test('the same owner on translated streams (/v1/messages, /v1/responses) and a piped audio answer', async (t) => {
    const fast = await flooding();
    const audio = await scriptedBackend(t);
    const gw = await startGateway(
      [
        { name: 'fast', url: fast.url, max_concurrent: 1 },
        { name: 'audio', url: audio.url, max_concurrent: 1 },
      ],
      {
        stream_idle_timeout_s: 0.2,
        client_stall_timeout_s: 1,
        stats_flush_ms: 20,
        virtual_models: { chat: { fast: 'm' }, speak: { audio: 'm' } },
      },
    );
    t.after(async () => {
      await gw.close();
      await fast.close();
    });
    const tool = { name: 'f', input_schema: { type: 'object' } };
    const calls = [
      {
        path: '/v1/messages',
        head: 'anthropic-version: 2023-06-01\r\n',
        body: {
          model: 'chat',
          max_tokens: 64,
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
          tools: [tool],
        },
      },
      {
        path: '/v1/responses',
        body: { model: 'chat', stream: true, input: 'hi', tools: [{ type: 'function', name: 'f', parameters: {} }] },
      },
    ];
    for (const call of calls) {
      await stalledStreamClient(t, gw, call);
      await waitFor(() => fast.inflight === 1, `${call.path}: stream started`);
      await waitFor(() => inflight(gw, 'fast') === 0, `${call.path}: slot freed`, 8000);
      await waitFor(() => fast.inflight === 0, `${call.path}: upstream aborted`);
      await waitFor(() => lastRow(gw)?.endpoint === call.path, `${call.path}: logged`);
      assert.deepEqual([lastRow(gw).status, lastRow(gw).reason], [499, 'client_stalled'], call.path);
    }
    await stalledStreamClient(t, gw, { path: '/v1/audio/speech', body: { model: 'speak', input: 'hi', voice: 'v' } });
    const upstream = await audio.next();
    let upstreamClosed = false;
    upstream.once('close', () => {
      upstreamClosed = true;
    });
    upstream.writeHead(200, { 'content-type': 'audio/mpeg' });
    const chunk = Buffer.alloc(64 << 10, 7);
    let sent = 0;
    const pump = () => {
      while (sent++ < 256) if (!upstream.write(chunk)) return void upstream.once('drain', pump);
      upstream.end();
    };
    pump();
    await waitFor(() => inflight(gw, 'audio') === 0, 'audio: slot freed', 8000);
    await waitFor(() => upstreamClosed, 'audio: upstream aborted');
    await waitFor(() => lastRow(gw)?.endpoint === '/v1/audio/speech', 'audio: logged');
    assert.deepEqual([lastRow(gw).status, lastRow(gw).reason], [499, 'client_stalled']);
    assert.ok(sent < 256, 'the audio was cut, not sent whole');
    assert.equal(failures(gw, 'fast'), 0);
    assert.equal(failures(gw, 'audio'), 0);
  });

  test('client_stall_timeout_s is its own key (hot): 0 = none; it holds with stream_idle_timeout_s 0', async (t) => {
    const fast = await flooding();
    const gw = await startGateway([{ name: 'fast', url: fast.url, max_concurrent: 1 }], {
      stream_idle_timeout_s: 0,
      client_stall_timeout_s: 0,
      stats_flush_ms: 20,
    });
    t.after(async () => {
      await gw.close();
      await fast.close();
    });
    const first = await stalledStreamClient(t, gw);
    await waitFor(() => fast.inflight === 1, 'stream started');
    await delay(1000);
    assert.equal(inflight(gw, 'fast'), 1, 'client_stall_timeout_s 0: no deadline');
    first.destroy();
    await waitFor(() => inflight(gw, 'fast') === 0, 'the client hung up: slot freed');
    await waitFor(() => lastRow(gw)?.reason === 'client_closed', 'logged as client_closed');

    await gw.gateway.reload({ ...gw.gateway.config(), client_stall_timeout_s: 0.4 });
    assert.equal(gw.gateway.config().stream_idle_timeout_s, 0);
    await stalledStreamClient(t, gw);
    await waitFor(() => fast.inflight === 1, 'second stream started');
    const what = 'slot freed after client_stall_timeout_s although stream_idle_timeout_s is 0';
    await waitFor(() => inflight(gw, 'fast') === 0, what, 5000);
    await waitFor(() => lastRow(gw)?.reason === 'client_stalled', 'logged as client_stalled');
    assert.equal(lastRow(gw).status, 499);
    assert.equal(failures(gw, 'fast'), 0);
  });
});
