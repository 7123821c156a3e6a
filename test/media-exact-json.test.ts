/**
 * parseExactJson: integers past 2^53 come back as exact bigints, everything else exactly as
 * JSON.parse gives it (floats, exponents, strings that look like numbers, `__proto__` as an own
 * key, the same SyntaxError for text that is not JSON), fast on bodies with large base64
 * strings. registerExactJsonParser over a real socket: only in its plugin, the app's body
 * limit, invalid and too-deep JSON rendered by the gateway's error handler.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { parseExactJson, registerExactJsonParser } from '../src/wire/exact-json.ts';
import { installErrorHandlers } from '../src/routes/error-handler.ts';

describe('parseExactJson', () => {
  test('integers beyond the safe range become exact bigints', () => {
    assert.deepEqual(parseExactJson('{"seed": 18446744073709551615}'), { seed: 18446744073709551615n });
    assert.deepEqual(parseExactJson('{"seed": 9007199254740993}'), { seed: 9007199254740993n });
    assert.deepEqual(parseExactJson('{"seed":9223372036854775807}'), { seed: 9223372036854775807n });
    assert.deepEqual(parseExactJson('[-9007199254740993, 9007199254740992, 123456789012345678901234567890]'), [
      -9007199254740993n,
      9007199254740992n,
      123456789012345678901234567890n,
    ]);
    assert.deepEqual(parseExactJson('{"a":{"b":[1,{"c":18446744073709551615}]},"d":18446744073709551614}'), {
      a: { b: [1, { c: 18446744073709551615n }] },
      d: 18446744073709551614n,
    });
    assert.equal(parseExactJson('18446744073709551615'), 18446744073709551615n);
  });

  test('safe integers, floats and exponents stay numbers', () => {
    assert.deepEqual(parseExactJson('{"x": 1.5}'), { x: 1.5 });
    assert.deepEqual(
      parseExactJson(
        '[9007199254740991, -9007199254740991, 1000000000000000, 0, -0, 1e300, 18446744073709551615.0, 1234567890123456789e2, 2E-5]',
      ),
      [
        9007199254740991, -9007199254740991, 1000000000000000, 0, -0, 1e300, 18446744073709551615,
        1234567890123456789e2, 2e-5,
      ],
    );
    const v = parseExactJson('{"x": 1.5, "n": 3}') as { x: unknown; n: unknown };
    assert.equal(typeof v.x, 'number');
    assert.equal(typeof v.n, 'number');
  });

  test('number-like text inside strings and keys is left alone', () => {
    const text = String.raw`{"18446744073709551615": "18446744073709551615", "q": "a\"18446744073709551615\\", "s": 18446744073709551615, "e": "\\"}`;
    assert.deepEqual(parseExactJson(text), {
      '18446744073709551615': '18446744073709551615',
      q: 'a"18446744073709551615\\',
      s: 18446744073709551615n,
      e: '\\',
    });
  });

  test('same as JSON.parse on documents without big integers', () => {
    for (const text of [
      '{}',
      '[]',
      'null',
      'true',
      '"x"',
      '{"a":[1,2,{"b":null}],"c":"\\u00e9\\n","d":-0.5e-3}',
      ' {"dup":1,"dup":2} ',
    ]) {
      assert.deepEqual(parseExactJson(text), JSON.parse(text), text);
    }
    // last duplicate wins, as in JSON.parse, on the bigint path too
    assert.deepEqual(parseExactJson('{"s":1,"s":18446744073709551615}'), { s: 18446744073709551615n });
  });

  test('__proto__ is an own property, on both paths, and pollutes nothing', () => {
    for (const text of [
      '{"__proto__": {"polluted": 1}, "seed": 1}',
      '{"__proto__": {"polluted": 18446744073709551615}, "seed": 18446744073709551615}',
    ]) {
      const v = parseExactJson(text) as Record<string, unknown>;
      assert.equal(Object.getPrototypeOf(v), Object.prototype);
      assert.ok(Object.hasOwn(v, '__proto__'));
      assert.equal((v as { polluted?: unknown }).polluted, undefined);
      assert.equal(({} as { polluted?: unknown }).polluted, undefined);
    }
  });

  test("text that is not JSON throws JSON.parse's own SyntaxError (positions of the original)", () => {
    for (const text of [
      '{"seed": 18446744073709551615',
      '{"seed": 018446744073709551615}',
      '[18446744073709551615 18446744073709551615]',
      '{"a": tru 18446744073709551615}',
      '18446744073709551615x',
      '--18446744073709551615',
      '{"a": "18446744073709551615}',
      '',
      '{"a":1,}',
    ]) {
      let expected: unknown;
      try {
        JSON.parse(text);
      } catch (e) {
        expected = e;
      }
      assert.ok(expected instanceof SyntaxError, text);
      assert.throws(
        () => parseExactJson(text),
        (e: unknown) => e instanceof SyntaxError && e.message === (expected as Error).message,
        text,
      );
    }
  });

  test('fast on a body with a large base64 image and a big seed', (t) => {
    const image = Buffer.alloc(30 * 1024 * 1024, 7).toString('base64'); // 40 MB of base64
    const text = JSON.stringify({
      model: 'sdxl',
      prompt: 'a cat',
      images: { init: image },
      params: { steps: 20 },
    }).replace('"steps":20', '"steps":20,"seed":18446744073709551615');
    let t0 = performance.now();
    const v = parseExactJson(text) as { images: { init: string }; params: { seed: unknown } };
    const slowPath = performance.now() - t0;
    assert.equal(v.params.seed, 18446744073709551615n);
    assert.equal(v.images.init.length, image.length);
    t0 = performance.now();
    parseExactJson(text.replace('18446744073709551615', '42'));
    const fastPath = performance.now() - t0;
    t0 = performance.now();
    JSON.parse(text);
    const native = performance.now() - t0;
    t.diagnostic(
      `40 MB body: bigint path ${slowPath.toFixed(0)} ms, no-bigint path ${fastPath.toFixed(0)} ms, JSON.parse ${native.toFixed(0)} ms`,
    );
    assert.ok(slowPath < 2_000, `bigint path took ${slowPath} ms`);
  });
});

describe('registerExactJsonParser', () => {
  let app: FastifyInstance;
  let url: string;

  before(async () => {
    app = Fastify({ bodyLimit: 64 * 1024 });
    installErrorHandlers(app);
    const echo = (body: unknown) => {
      const seed = (body as { seed?: unknown }).seed;
      return { type: typeof seed, seed: String(seed) };
    };
    await app.register(async (media) => {
      registerExactJsonParser(media);
      media.post('/v1/generations', async (req) => echo(req.body));
      media.post('/v1/big', { bodyLimit: 256 * 1024 }, async (req) => ({
        bytes: JSON.stringify(req.body, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)).length,
      }));
    });
    app.post('/v1/other', async (req) => echo(req.body));
    url = await app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(() => app.close());

  const post = (path: string, body: string, type = 'application/json') =>
    fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': type }, body });

  test('big seeds arrive exact inside the plugin, rounded outside it', async () => {
    const body = '{"model":"sd15","seed":18446744073709551615}';
    assert.deepEqual(await (await post('/v1/generations', body)).json(), {
      type: 'bigint',
      seed: '18446744073709551615',
    });
    assert.deepEqual(await (await post('/v1/generations', body, 'application/json; charset=utf-8')).json(), {
      type: 'bigint',
      seed: '18446744073709551615',
    });
    assert.deepEqual(await (await post('/v1/generations', '{"seed":9007199254740993}')).json(), {
      type: 'bigint',
      seed: '9007199254740993',
    });
    assert.deepEqual(await (await post('/v1/generations', '{"seed":1.5}')).json(), { type: 'number', seed: '1.5' });
    assert.deepEqual(await (await post('/v1/other', body)).json(), { type: 'number', seed: '18446744073709552000' });
  });

  test('invalid JSON is a 400 in the gateway shape', async () => {
    const res = await post('/v1/generations', '{"seed": 18446744073709551615');
    assert.equal(res.status, 400);
    const json = (await res.json()) as { error: { code: string; message: string; type: string } };
    assert.equal(json.error.code, 'invalid_json');
    assert.equal(json.error.type, 'invalid_request_error');
    assert.match(json.error.message, /^We could not parse the JSON body of your request/);
    const empty = await post('/v1/generations', '');
    assert.equal(empty.status, 400);
    assert.equal(((await empty.json()) as { error: { code: string } }).error.code, 'invalid_json');
  });

  test('nesting beyond the limit is a 400 json_too_deep', async () => {
    const res = await post('/v1/generations', `${'['.repeat(300)}${']'.repeat(300)}`);
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'json_too_deep');
  });

  test("the app's body limit applies, and a route's own bodyLimit wins", async () => {
    const big = JSON.stringify({ seed: 18446744073709551615n.toString(), pad: 'x'.repeat(100 * 1024) });
    const res = await post('/v1/generations', big);
    assert.equal(res.status, 413);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'request_too_large');
    const ok = await post('/v1/big', big);
    assert.equal(ok.status, 200);
  });
});
