/**
 * A client's type error is the client's 400, named, on every JSON call surface (chat,
 * completions, responses, messages): `stream` not a boolean, `stream_options` not an object,
 * a `messages` item that is not an object with a string `role`. Nothing reaches the backend
 * and the backend's health is untouched. Compressed bodies (gzip, deflate, br) are decoded
 * and sent on without their Content-Encoding; other encodings, and any on a multipart
 * upload, are a 415; a decompression bomb is a 413.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { rawRequest } from './helpers/raw-http.ts';

const MODEL = 'acme/Qwen3-8B-Instruct';
type OpenAIError = { error: { message: string; type: string; param: string | null; code: string } };

const postEncoded = (base: string, encoding: string, body: Buffer) =>
  rawRequest(
    base,
    'POST',
    '/v1/chat/completions',
    { 'content-type': 'application/json', 'content-encoding': encoding },
    body,
  );

describe('type errors in the body', () => {
  let fake: FakeBackend;
  let gw: TestGateway;
  const setup = async () => {
    fake = await startFake('vllm');
    gw = await startGateway([{ name: 'v', url: fake.url, local: true }]);
    return async () => {
      await gw.close();
      await fake.close();
    };
  };
  const post = (path: string, body: unknown) =>
    fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const generations = () => fake.requests.filter((r) => r.method === 'POST').length;

  test('stream / stream_options of the wrong type: 400 naming the field everywhere, backend untouched', async (t) => {
    t.after(await setup());
    const messages = [{ role: 'user', content: 'hi' }];
    const surfaces: [string, Record<string, unknown>][] = [
      ['/v1/chat/completions', { model: MODEL, messages }],
      ['/v1/completions', { model: MODEL, prompt: 'hi' }],
      ['/v1/responses', { model: MODEL, input: 'hi' }],
      ['/v1/messages', { model: MODEL, max_tokens: 10, messages }],
    ];
    for (const [path, body] of surfaces) {
      for (const stream of ['yes', 1, {}]) {
        const r = await post(path, { ...body, stream });
        assert.equal(r.status, 400, `${path} stream=${JSON.stringify(stream)}`);
        const answer = (await r.json()) as OpenAIError & { type?: string };
        if (path === '/v1/messages') {
          assert.equal(answer.type, 'error');
          assert.match(answer.error.message, /'stream'/);
        } else {
          assert.equal(answer.error.param, 'stream');
          assert.equal(answer.error.code, 'invalid_type');
          assert.match(answer.error.message, /expected a boolean/);
        }
      }
    }
    const options = await post('/v1/chat/completions', { model: MODEL, messages, stream: true, stream_options: 'on' });
    assert.equal(options.status, 400);
    assert.equal(((await options.json()) as OpenAIError).error.param, 'stream_options');
    // the valid forms still work: booleans, null
    const nulls = await post('/v1/chat/completions', { model: MODEL, messages, stream: null, stream_options: null });
    assert.equal(nulls.status, 200);
    assert.equal(generations(), 1, 'only the valid call reached the backend');
    assert.equal(gw.gateway.registry.get('v')!.healthy, true);
    assert.equal(gw.gateway.registry.get('v')!.consecutiveFailures, 0, 'nothing counted against the backend');
  });

  test('background / store not booleans: 400 naming the field, never a silent foreground run', async (t) => {
    t.after(await setup());
    for (const field of ['background', 'store']) {
      for (const value of ['yes', 1, {}]) {
        const r = await post('/v1/responses', { model: MODEL, input: 'hi', [field]: value });
        assert.equal(r.status, 400, `${field}=${JSON.stringify(value)}`);
        const { error } = (await r.json()) as OpenAIError;
        assert.equal(error.param, field);
        assert.equal(error.code, 'invalid_type');
      }
    }
    const valid = await post('/v1/responses', { model: MODEL, input: 'hi', background: false, store: null });
    assert.equal(valid.status, 200);
    assert.equal(generations(), 1, 'only the valid call reached the backend');
  });

  test('messages items: null, a string, no role, a role not a string → 400 with the item named', async (t) => {
    t.after(await setup());
    const cases: [unknown, string, string][] = [
      [[null], 'messages[0]', 'invalid_type'],
      [[{ role: 'user', content: 'a' }, 'hello'], 'messages[1]', 'invalid_type'],
      [[{ content: 'a' }], 'messages[0].role', 'missing_required_parameter'],
      [[{ role: 7, content: 'a' }], 'messages[0].role', 'invalid_type'],
      ['hello', 'messages', 'invalid_type'],
    ];
    for (const [messages, param, code] of cases) {
      const r = await post('/v1/chat/completions', { model: MODEL, messages });
      assert.equal(r.status, 400, JSON.stringify(messages));
      const { error } = (await r.json()) as OpenAIError;
      assert.equal(error.param, param);
      assert.equal(error.code, code);
    }
    const anthropic = await post('/v1/messages', { model: MODEL, max_tokens: 5, messages: [null] });
    assert.equal(anthropic.status, 400);
    assert.match(((await anthropic.json()) as { error: { message: string } }).error.message, /messages\[0\]/);
    assert.equal(generations(), 0, 'none reached the backend');
  });
});

describe('Content-Encoding of a request body', () => {
  test('gzip, deflate and br are decoded and sent on as plain JSON without the header', async (t) => {
    const fake = await startFake('vllm');
    const gw = await startGateway([{ name: 'v', url: fake.url, local: true }]);
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    const json = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'compressed hello' }] });
    const encoders: [string, (b: Buffer) => Buffer][] = [
      ['gzip', gzipSync],
      ['deflate', deflateSync],
      ['br', brotliCompressSync],
    ];
    for (const [encoding, encode] of encoders) {
      const r = await postEncoded(gw.url, encoding, encode(Buffer.from(json)));
      assert.equal(r.status, 200, `${encoding}: ${r.text}`);
      const sent = fake.requests.at(-1)!;
      assert.equal(sent.headers['content-encoding'], undefined, `${encoding}: the header is not forwarded`);
      assert.equal(sent.body.messages[0].content, 'compressed hello');
    }
  });

  test('unknown encodings and encoded multipart are 415; bad data 400; a bomb past the body limit 413', async (t) => {
    const fake = await startFake('vllm');
    const gw = await startGateway([{ name: 'v', url: fake.url, local: true }]);
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    const before = fake.requests.length;
    const json = Buffer.from(JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }));

    for (const encoding of ['zstd', 'gzip, br', 'compress']) {
      const r = await postEncoded(gw.url, encoding, json);
      assert.equal(r.status, 415, encoding);
      assert.equal(r.json<OpenAIError>().error.code, 'unsupported_content_encoding');
    }
    const form = '--b\r\nContent-Disposition: form-data; name="model"\r\n\r\nm\r\n--b--\r\n';
    const multipart = await rawRequest(
      gw.url,
      'POST',
      '/v1/audio/transcriptions',
      { 'content-type': 'multipart/form-data; boundary=b', 'content-encoding': 'gzip' },
      gzipSync(Buffer.from(form)),
    );
    assert.equal(multipart.status, 415);
    assert.match(multipart.json<OpenAIError>().error.message, /multipart/);

    const garbage = await postEncoded(gw.url, 'gzip', json);
    assert.equal(garbage.status, 400);
    assert.equal(garbage.json<OpenAIError>().error.code, 'invalid_body_encoding');

    // 40 MiB of spaces around a small body: ~40 KiB gzipped, past the 32 MiB chat limit once decoded
    const spaces = Buffer.alloc(40 * 1024 * 1024, 0x20);
    const bomb = gzipSync(Buffer.concat([Buffer.from('{"model":"x","pad":"'), spaces, Buffer.from('"}')]));
    assert.ok(bomb.length < 1024 * 1024);
    const rssBefore = process.memoryUsage().rss;
    const big = await postEncoded(gw.url, 'gzip', bomb);
    assert.equal(big.status, 413);
    assert.equal(big.json<OpenAIError>().error.code, 'request_too_large');
    assert.ok(process.memoryUsage().rss - rssBefore < 200 * 1024 * 1024, 'the decoder stopped near the limit');
    assert.equal(fake.requests.length, before, 'nothing reached the backend');
  });
});
