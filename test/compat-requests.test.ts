/**
 * Client quirks the gateway tolerates: headers naming the client's own OpenAI/Azure account
 * stay here (the backend's credentials decide the account), and URLs built by concatenation
 * (a trailing slash, a doubled one) still route.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startFake } from './fakes/index.ts';
import { startGateway } from './helpers/gateway.ts';

const chatBody = JSON.stringify({ model: 'o/m', messages: [{ role: 'user', content: 'hi' }] });

describe('client compatibility', () => {
  test('openai-organization, openai-project and api-key are not forwarded; other headers are', async (t) => {
    const fake = await startFake('ollama', { models: ['m'], apiKey: 'sk-backend-own-key' });
    const gw = await startGateway([{ name: 'o', url: fake.url, api_key: 'sk-backend-own-key' }]);
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    const r = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'openai-organization': 'org-client-own',
        'openai-project': 'proj_client_own',
        'api-key': 'azure-client-key',
        'x-trace-id': 'trace-1',
      },
      body: chatBody,
    });
    assert.equal(r.status, 200, await r.clone().text());
    const sent = fake.requests.find((q) => q.path === '/v1/chat/completions');
    assert.ok(sent, 'the call reached the backend');
    for (const name of ['openai-organization', 'openai-project', 'api-key'])
      assert.equal(sent.headers[name], undefined, name);
    assert.equal(sent.headers.authorization, 'Bearer sk-backend-own-key', "the backend's own credentials");
    assert.equal(sent.headers['x-trace-id'], 'trace-1', 'unrelated headers still pass');
  });

  test('trailing and duplicate slashes route like the canonical path', async (t) => {
    const fake = await startFake('ollama', { models: ['m'] });
    const gw = await startGateway([{ name: 'o', url: fake.url }]);
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    for (const path of ['/v1/chat/completions/', '/v1//chat/completions', '//v1/chat//completions/']) {
      const r = await fetch(`${gw.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: chatBody,
      });
      assert.equal(r.status, 200, `${path}: ${await r.clone().text()}`);
      assert.equal(((await r.json()) as { object: string }).object, 'chat.completion');
    }
    const forwarded = fake.requests.filter((q) => q.method === 'POST').map((q) => q.path);
    assert.deepEqual(forwarded, Array(3).fill('/v1/chat/completions'), 'the backend sees the canonical path');
    for (const path of ['/v1/models/', '/v1//models', '//v1/models']) {
      const r = await fetch(`${gw.url}${path}`);
      assert.equal(r.status, 200, `${path}: ${await r.clone().text()}`);
      assert.ok(
        ((await r.json()) as { data: { id: string }[] }).data.some((m) => m.id === 'o/m'),
        path,
      );
    }
    const one = await fetch(`${gw.url}/v1/models/o/m/`);
    assert.equal(one.status, 200, await one.clone().text());
    assert.equal(((await one.json()) as { id: string }).id, 'o/m');
    assert.equal((await fetch(`${gw.url}/health/`)).status, 200);
  });
});
