/**
 * The body a client sent reaches the backend byte for byte, apart from the fields the gateway
 * sets (`model`, `stream_options`): big integers, key order, unicode escapes and whitespace
 * survive; edited keys are never duplicated. Byte-compared on a capturing backend.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { describe, test } from 'node:test';
import { startGateway } from './helpers/gateway.ts';

/** A minimal OpenAI-style backend that keeps the raw bytes of every chat body. */
async function startCapturingBackend(): Promise<{ url: string; bodies: string[]; server: Server }> {
  const bodies: string[] = [];
  const server = createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const chunk of req) parts.push(chunk as Buffer);
    if (req.url === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [{ id: 'real-model', object: 'model', owned_by: 'x' }] }));
      return;
    }
    if (req.method !== 'POST') {
      // like OpenAI's API: any other route (the gateway's residency probes) is a 404
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ error: { message: `Invalid URL (${req.method} ${req.url})`, type: 'invalid_request_error' } }),
      );
      return;
    }
    bodies.push(Buffer.concat(parts).toString('utf8'));
    if (JSON.parse(bodies.at(-1)!).stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(
        'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: 'c',
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  return { url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`, bodies, server };
}

const send = (url: string, raw: string) =>
  fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: raw });

describe('the body is forwarded untouched', () => {
  test('big integers, unicode escapes, odd whitespace and key order reach the backend as sent', async (t) => {
    const backend = await startCapturingBackend();
    const gw = await startGateway([{ name: 'b', url: backend.url, local: true }], {
      virtual_models: { fast: 'real-model' },
    });
    t.after(async () => {
      await gw.close();
      backend.server.close();
    });

    const tail =
      '"seed": 12345678901234567891,\n  "messages":[{"role":"user","content":"caf\\u00e9 \\ud83d\\ude00 ☕"}],"temperature":1.0E0,"logit_bias":{"50256":-100},"n":1e400 }';
    const exact = `{ "model" : "real-model", ${tail}`;
    assert.equal((await send(gw.url, exact)).status, 200);
    assert.equal(backend.bodies.at(-1), exact, 'nothing to change: the very same bytes');

    const aliased = `{ "model" : "fast", ${tail}`;
    assert.equal((await send(gw.url, aliased)).status, 200);
    assert.equal(backend.bodies.at(-1), `{ "model" : "real-model", ${tail}`, 'only the model value changed');
  });

  test("streams get include_usage edited into the client's own stream_options, nothing else", async (t) => {
    const backend = await startCapturingBackend();
    const gw = await startGateway([{ name: 'b', url: backend.url, local: true }]);
    t.after(async () => {
      await gw.close();
      backend.server.close();
    });

    const raw =
      '{"stream":true,"stream_options":{"continuous_usage_stats":false},"model":"b/real-model","seed":98765432109876543210,"messages":[{"role":"user","content":"x"}]}';
    await (await send(gw.url, raw)).text();
    assert.equal(
      backend.bodies.at(-1),
      '{"stream":true,"stream_options":{"continuous_usage_stats":false,"include_usage":true},"model":"real-model","seed":98765432109876543210,"messages":[{"role":"user","content":"x"}]}',
    );

    const noOptions = '{"model":"real-model","stream":true,"messages":[]}';
    await (await send(gw.url, noOptions)).text();
    assert.equal(
      backend.bodies.at(-1),
      '{"model":"real-model","stream":true,"messages":[],"stream_options":{"include_usage":true}}',
    );
  });

  test('a duplicated edited key is sent once', async (t) => {
    const backend = await startCapturingBackend();
    const gw = await startGateway([{ name: 'b', url: backend.url, local: true }]);
    t.after(async () => {
      await gw.close();
      backend.server.close();
    });
    // JSON.parse keeps the last duplicate: the gateway resolves "b/real-model" and sends one model key
    await send(gw.url, '{"model":"ignored","messages":[],"model":"b/real-model"}');
    const sent = backend.bodies.at(-1)!;
    assert.equal(sent.match(/"model"/g)?.length, 1);
    assert.equal(JSON.parse(sent).model, 'real-model');
  });

  test('duplicate stream_options whose first is not an object: the parsed one is sent, once', async (t) => {
    const backend = await startCapturingBackend();
    const gw = await startGateway([{ name: 'b', url: backend.url, local: true }]);
    t.after(async () => {
      await gw.close();
      backend.server.close();
    });
    const res = await send(
      gw.url,
      '{"model":"real-model","stream":true,"stream_options":1,"stream_options":{"include_usage":false},"messages":[]}',
    );
    assert.equal(res.status, 200);
    await res.text();
    const sent = backend.bodies.at(-1)!;
    assert.equal(sent.match(/"stream_options"/g)?.length, 1);
    assert.deepEqual(JSON.parse(sent).stream_options, { include_usage: true });
  });
});
