/**
 * A request that stops arriving does not hold its connection: complete headers and a body
 * that never ends get a 408 once the client was silent for `request_body_timeout_s`, and the
 * socket is closed. The timer guards receiving only: a long non-streamed answer and an SSE
 * stream with long gaps are never cut by it. On a locked gateway a wrong key is refused
 * before the body is read (401 at once, connection closed, on record).
 * Driven over raw sockets (node:net), the way a stalled client behaves.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { describe, test } from 'node:test';
import { startFake } from './fakes/index.ts';
import { MEDIA_JSON_BODY_LIMIT } from '../src/routes/media-caller.ts';
import { startGateway } from './helpers/gateway.ts';

const KEY = 'sk-master-stalled-0123456789';

interface SocketEnd {
  /** Everything the gateway wrote. */
  text: string;
  /** Milliseconds from the first write to the close. */
  closedAfterMs: number;
}

/** Writes `head` (and `partial` body bytes); resolves when the gateway closes the socket, rejects after `limitMs`. */
function sendAndWaitForClose(port: number, head: string, partial: string, limitMs: number): Promise<SocketEnd> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let startedAt = 0;
    const timer = setTimeout(() => {
      socket.destroy();
      const wrote = Buffer.concat(chunks).toString();
      reject(new Error(`the gateway still held the connection after ${limitMs} ms; it wrote: ${wrote}`));
    }, limitMs);
    socket.on('connect', () => {
      startedAt = Date.now();
      socket.write(head);
      if (partial) socket.write(partial);
    });
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', () => {
      /* a reset is a close too */
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text: Buffer.concat(chunks).toString('utf8'), closedAfterMs: Date.now() - startedAt });
    });
  });
}

const chatHead = (port: number, length: number, extra = '') =>
  `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\n` +
  `content-length: ${length}\r\n${extra}\r\n`;

function bodyOf(text: string): Record<string, any> {
  return JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
}

describe('a stalled request', () => {
  test('complete headers, half a body, then silence: 408 after request_body_timeout_s, closed', async (t) => {
    const gw = await startGateway([], { request_body_timeout_s: 0.5 });
    t.after(() => gw.close());
    const end = await sendAndWaitForClose(gw.port, chatHead(gw.port, 1000), '{"model":"x","messages":[', 5000);
    assert.match(end.text, /^HTTP\/1\.1 408 /);
    assert.match(end.text, /connection: close/i);
    const body = bodyOf(end.text);
    assert.equal(body.error.code, 'request_timeout');
    assert.match(body.error.message, /request_body_timeout_s/);
    assert.ok(end.closedAfterMs >= 400 && end.closedAfterMs < 3000, `closed after ${end.closedAfterMs} ms`);
  });

  test('on /v1/messages the 408 is Anthropic-shaped; a connection that never sends a byte is closed too', async (t) => {
    const gw = await startGateway([], { request_body_timeout_s: 0.5 });
    t.after(() => gw.close());
    const head =
      `POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\n` +
      'content-type: application/json\r\ncontent-length: 500\r\n\r\n';
    const end = await sendAndWaitForClose(gw.port, head, '{"model"', 5000);
    assert.match(end.text, /^HTTP\/1\.1 408 /);
    assert.deepEqual(Object.keys(bodyOf(end.text)), ['type', 'error']);
    const silent = await sendAndWaitForClose(gw.port, '', '', 5000);
    assert.ok(silent.closedAfterMs < 3000, `a silent connection closed after ${silent.closedAfterMs} ms`);
  });

  test('unauthenticated: a wrong key is refused before the body is read, and the refusal is on record', async (t) => {
    const gw = await startGateway([], { api_key: KEY, request_body_timeout_s: 30 });
    t.after(() => gw.close());
    // 10 MB announced, 20 bytes sent: today's gateway would wait for the rest
    const head = chatHead(gw.port, 10_000_000, 'authorization: Bearer sk-wrong-key-0000\r\n');
    const end = await sendAndWaitForClose(gw.port, head, '{"model":"x","messag', 5000);
    assert.match(end.text, /^HTTP\/1\.1 401 /);
    assert.match(end.text, /connection: close/i);
    assert.equal(bodyOf(end.text).error.code, 'invalid_api_key');
    assert.ok(end.closedAfterMs < 2000, `answered and closed after ${end.closedAfterMs} ms`);
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    const refused = 'llm_gateway_requests_total{endpoint="/v1/chat/completions",backend="(refused)",status="401"} 1';
    assert.ok(metrics.split('\n').includes(refused), 'the refusal is counted');
    // the right key with a complete body still works the usual way (404: no such model here)
    const ok = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nope', messages: [] }),
    });
    assert.equal(ok.status, 404);
  });
});

describe('the receive timeout never cuts an answer', () => {
  test('a non-streamed answer slower than the timeout, and a stream with longer gaps, arrive whole', async (t) => {
    const fake = await startFake('vllm', { knobs: { latencyMs: 1500 } });
    const gw = await startGateway([{ name: 'v', url: fake.url, local: true }], { request_body_timeout_s: 0.4 });
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    const post = (body: object) =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const messages = [{ role: 'user', content: 'hi' }];

    const slow = await post({ model: 'acme/Qwen3-8B-Instruct', messages });
    assert.equal(slow.status, 200);
    assert.equal(((await slow.json()) as { object: string }).object, 'chat.completion');

    fake.setKnobs({ latencyMs: 0, chunkCount: 3, tokensPerSecond: 1.5 });
    const stream = await post({ model: 'acme/Qwen3-8B-Instruct', messages, stream: true });
    assert.equal(stream.status, 200);
    const text = await stream.text();
    assert.match(text, /data: \[DONE\]/, 'the stream ran to its end across ~0.7 s gaps');
  });
});

describe('a slow upload that keeps coming', () => {
  test('is never cut by the silence timer, and the whole-receipt backstop fits the largest body at 256 kbit/s', async (t) => {
    const fake = await startFake('vllm');
    const gw = await startGateway([{ name: 'v', url: fake.url, local: true }], { request_body_timeout_s: 0.5 });
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    const messages = [{ role: 'user', content: 'x'.repeat(60_000) }];
    const body = JSON.stringify({ model: 'acme/Qwen3-8B-Instruct', messages });
    const socket = connect(gw.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    await new Promise<void>((resolve) => socket.on('connect', () => resolve()));
    socket.write(chatHead(gw.port, Buffer.byteLength(body), 'connection: close\r\n'));
    // 1.5 s in all, three times the timeout, but never 0.5 s without a byte
    for (let i = 0; i < 15; i++) {
      socket.write(body.slice(i * 4_000, (i + 1) * 4_000));
      await new Promise((r) => setTimeout(r, 100));
    }
    socket.write(body.slice(60_000));
    await closed;
    const text = Buffer.concat(chunks).toString('utf8');
    assert.match(text, /^HTTP\/1\.1 200 /, text.slice(0, 300));
    assert.equal(bodyOf(text).object, 'chat.completion');
    // Node's requestTimeout cuts any request not whole by then, however steadily it arrives
    const bytesPerMs = 256_000 / 8 / 1000;
    const largestJson = MEDIA_JSON_BODY_LIMIT;
    assert.ok(
      gw.app.server.requestTimeout * bytesPerMs >= largestJson,
      `${gw.app.server.requestTimeout} ms: a ${largestJson}-byte body at 256 kbit/s would be cut`,
    );
  });
});
