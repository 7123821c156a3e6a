/**
 * CORS for browser clients: off by default, `cors_origins` hot-reloaded; preflights are
 * answered without a key (browsers never send one on a preflight); streams carry the headers
 * too; an origin outside the list gets none.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startFake } from './fakes/index.ts';
import { startGateway } from './helpers/gateway.ts';

const KEY = 'sk-cors-test-0123456789abcdef';
const APP = 'http://localhost:3000';
const SDK_HEADERS = 'authorization, content-type, x-api-key, x-source, x-stainless-os';

const preflight = (url: string, origin: string) =>
  fetch(url, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': SDK_HEADERS },
  });

describe('CORS', () => {
  test('an allowed origin: keyless preflight, headers on JSON and streamed answers; others get nothing; hot', async (t) => {
    const fake = await startFake('ollama', { models: ['m'] });
    const gw = await startGateway([{ name: 'o', url: fake.url }], { api_key: KEY, cors_origins: [APP] });
    t.after(async () => {
      await gw.close();
      await fake.close();
    });

    // preflight: answered before any key is asked for, echoing what the SDK wants to send
    for (const path of ['/v1/chat/completions', '/v1/models', '/admin/api/users']) {
      const r = await preflight(`${gw.url}${path}`, APP);
      assert.equal(r.status, 204, path);
      assert.equal(r.headers.get('access-control-allow-origin'), APP);
      assert.match(r.headers.get('access-control-allow-methods') ?? '', /POST/);
      const allowed = (r.headers.get('access-control-allow-headers') ?? '').split(',').map((h) => h.trim());
      for (const h of ['authorization', 'content-type', 'x-api-key', 'x-source'])
        assert.ok(allowed.includes(h), `${h} allowed`);
      assert.ok(Number(r.headers.get('access-control-max-age')) > 0);
    }

    const chat = (stream: boolean, origin = APP) =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { origin, 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
        body: JSON.stringify({ model: 'o/m', stream, messages: [{ role: 'user', content: 'hi' }] }),
      });
    const plain = await chat(false);
    assert.equal(plain.status, 200);
    assert.equal(plain.headers.get('access-control-allow-origin'), APP);
    assert.match(plain.headers.get('access-control-expose-headers') ?? '', /x-request-id/);
    await plain.text();
    const streamed = await chat(true);
    assert.equal(streamed.status, 200);
    assert.equal(streamed.headers.get('access-control-allow-origin'), APP, 'the SSE head carries it too');
    assert.match(await streamed.text(), /\[DONE\]/);
    const unauthorized = await fetch(`${gw.url}/v1/models`, { headers: { origin: APP } });
    assert.equal(unauthorized.status, 401);
    assert.equal(unauthorized.headers.get('access-control-allow-origin'), APP, 'the page can read the 401');

    // an origin outside the list: no CORS headers at all, and its preflight fails
    const evil = 'http://evil.example';
    const evilPre = await preflight(`${gw.url}/v1/chat/completions`, evil);
    assert.notEqual(evilPre.status, 204);
    assert.equal(evilPre.headers.get('access-control-allow-origin'), null);
    const evilChat = await chat(false, evil);
    assert.equal(evilChat.headers.get('access-control-allow-origin'), null);
    await evilChat.text();
    assert.equal(
      (
        await fetch(`${gw.url}/v1/models`, {
          headers: { origin: 'http://localhost:3001', authorization: `Bearer ${KEY}` },
        })
      ).headers.get('access-control-allow-origin'),
      null,
    );

    // hot: [] turns it off, a new entry turns it on, without a restart
    gw.gateway.reload({ ...gw.gateway.config(), cors_origins: [] });
    const off = await preflight(`${gw.url}/v1/chat/completions`, APP);
    assert.equal(off.headers.get('access-control-allow-origin'), null);
    assert.equal(off.status, 404);
    assert.deepEqual(Object.keys(((await off.json()) as { error: object }).error).sort(), [
      'code',
      'message',
      'param',
      'type',
    ]);
    gw.gateway.reload({ ...gw.gateway.config(), cors_origins: [`${evil}/`] });
    assert.equal(
      (await preflight(`${gw.url}/v1/chat/completions`, evil)).headers.get('access-control-allow-origin'),
      evil,
    );
    assert.equal(
      (await preflight(`${gw.url}/v1/chat/completions`, APP)).headers.get('access-control-allow-origin'),
      null,
    );
  });

  test('off by default: no CORS headers, OPTIONS is an unknown route', async (t) => {
    const gw = await startGateway([]);
    t.after(() => gw.close());
    const r = await preflight(`${gw.url}/v1/models`, APP);
    assert.equal(r.status, 404);
    assert.equal(r.headers.get('access-control-allow-origin'), null);
    const get = await fetch(`${gw.url}/v1/models`, { headers: { origin: APP } });
    assert.equal(get.status, 200);
    assert.equal(get.headers.get('access-control-allow-origin'), null);
  });
});
