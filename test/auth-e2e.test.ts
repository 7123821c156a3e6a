/**
 * Keys, allow-lists and the admin API over real sockets, with the log captured to prove that
 * no key material ever reaches it.
 */
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import { startFake } from './fakes/index.ts';
import { startGateway } from './helpers/gateway.ts';

const json = { 'content-type': 'application/json' };
const bearer = (key: string) => ({ ...json, authorization: `Bearer ${key}` });

async function captureLog() {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (c: Buffer) => {
    text += c.toString('utf8');
  });
  return { stream, text: () => text };
}

describe('multi-user auth', () => {
  test('bootstrap-open, locked by the first admin without restart; keys, allow-lists, rotation, logs', async (t) => {
    const gpu = await startFake('llamacpp', { models: ['qwen3-8b', 'llama-3b'] });
    const ollama = await startFake('ollama', { models: ['mistral:7b'] });
    const log = await captureLog();
    const gw = await startGateway(
      [
        { name: 'gpu', url: gpu.url, local: true },
        { name: 'ollama', url: ollama.url },
      ],
      { virtual_models: { fast: 'qwen3-8b', chatty: { ollama: 'mistral:7b' } }, log_level: 'trace' },
      { logStream: log.stream },
    );
    t.after(async () => {
      await gw.close();
      await gpu.close();
      await ollama.close();
    });
    const chat = (headers: Record<string, string>, model: string) =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
      });
    const ids = async (key: string) =>
      ((await (await fetch(`${gw.url}/v1/models`, { headers: bearer(key) })).json()) as { data: { id: string }[] }).data
        .map((d) => d.id)
        .sort();

    // open: no key needed, /health says so loudly
    assert.equal((await chat(json, 'fast')).status, 200);
    const open = (await (await fetch(`${gw.url}/health`)).json()) as { auth: { open: boolean; warning: string } };
    assert.equal(open.auth.open, true);
    assert.match(open.auth.warning, /OPEN/);
    assert.equal(statSync(join(gw.storeDir, 'secret.key')).mode & 0o777, 0o600);

    // the first admin locks it at once
    const created = await fetch(`${gw.url}/admin/api/users`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ name: 'root', role: 'admin' }),
    });
    assert.equal(created.status, 201);
    const admin = (await created.json()) as { id: number; key: string };
    assert.match(admin.key, /^sk-/);
    const noKey = await chat(json, 'fast');
    assert.equal(noKey.status, 401);
    const noKeyBody = (await noKey.json()) as { error: { type: string; code: string; message: string } };
    assert.equal(noKeyBody.error.type, 'authentication_error');
    assert.equal(noKeyBody.error.code, 'invalid_api_key');
    const wrong = await chat(bearer('sk-wrong-key-0000000000'), 'fast');
    assert.equal(wrong.status, 401);
    assert.ok(!(await wrong.text()).includes('sk-wrong-key'), 'the 401 does not echo the key');
    assert.equal((await chat({ ...json, 'x-api-key': admin.key }, 'fast')).status, 200, 'x-api-key works too');

    // users with allow-lists of each entry kind
    const mk = async (name: string, allow: string[]) => {
      const r = await fetch(`${gw.url}/admin/api/users`, {
        method: 'POST',
        headers: bearer(admin.key),
        body: JSON.stringify({ name, allow }),
      });
      assert.equal(r.status, 201);
      return (await r.json()) as { id: number; key: string };
    };
    const byAlias = await mk('alias-only', ['fast']);
    const byBackend = await mk('backend-only', ['ollama']);
    const byPinned = await mk('pinned-only', ['gpu/llama-3b']);
    const byBare = await mk('bare-only', ['llama-3b']);
    assert.deepEqual(await ids(byAlias.key), ['fast']);
    assert.deepEqual(await ids(byBackend.key), ['chatty', 'ollama/mistral:7b']);
    // the bare id of a local backend routes to the very pair the entry pins, so it is visible too
    assert.deepEqual(await ids(byPinned.key), ['gpu/llama-3b', 'llama-3b']);
    assert.deepEqual(await ids(byBare.key), ['gpu/llama-3b', 'llama-3b']);
    assert.equal((await chat(bearer(byAlias.key), 'fast')).status, 200);
    assert.equal(
      (await chat(bearer(byBackend.key), 'chatty')).status,
      200,
      'an alias that maps onto an allowed backend',
    );

    // a forbidden model answers exactly like an unknown one
    const forbidden = await chat(bearer(byAlias.key), 'gpu/qwen3-8b');
    const unknown = await chat(bearer(byAlias.key), 'gpu/no-such-model');
    assert.equal(forbidden.status, 404);
    const f = (await forbidden.json()) as { error: { message: string } };
    const u = (await unknown.json()) as { error: { message: string } };
    assert.deepEqual({ ...f, error: { ...f.error, message: '' } }, { ...u, error: { ...u.error, message: '' } });
    assert.equal((await fetch(`${gw.url}/v1/models/gpu/qwen3-8b`, { headers: bearer(byAlias.key) })).status, 404);

    // disabled user → 401; rotation: old key dead, new key works
    const patched = await fetch(`${gw.url}/admin/api/users/${byBare.id}`, {
      method: 'PATCH',
      headers: bearer(admin.key),
      body: JSON.stringify({ enabled: false }),
    });
    assert.equal(patched.status, 200, await patched.clone().text());
    assert.equal((await chat(bearer(byBare.key), 'llama-3b')).status, 401);
    const rotate = await fetch(`${gw.url}/admin/api/users/${byPinned.id}/rotate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin.key}` },
    });
    assert.equal(rotate.status, 200);
    const rotated = (await rotate.json()) as { key: string };
    assert.match(rotated.key, /^sk-/);
    assert.equal((await chat(bearer(byPinned.key), 'gpu/llama-3b')).status, 401);
    assert.equal((await chat(bearer(rotated.key), 'gpu/llama-3b')).status, 200);

    // the admin API is closed to plain users; lists never show keys
    assert.equal((await fetch(`${gw.url}/admin/api/users`, { headers: bearer(byAlias.key) })).status, 403);
    const list = await (await fetch(`${gw.url}/admin/api/users`, { headers: bearer(admin.key) })).text();
    for (const k of [admin.key, byAlias.key, rotated.key]) assert.ok(!list.includes(k));

    await new Promise((r) => setTimeout(r, 50));
    const logged = log.text();
    assert.ok(logged.length > 0, 'the log was captured');
    for (const k of [admin.key, byAlias.key, byBackend.key, byPinned.key, rotated.key, byBare.key, 'sk-wrong-key']) {
      assert.ok(!logged.includes(k), `key material in the log: ${k.slice(0, 6)}…`);
    }
  });

  test('a master key from the config locks the gateway and works as Bearer', async (t) => {
    const fake = await startFake('vllm', { models: ['m'] });
    const gw = await startGateway([{ name: 'v', url: fake.url }], { api_key: 'master-key-abcdefgh' });
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    assert.equal((await fetch(`${gw.url}/v1/models`)).status, 401);
    assert.equal((await fetch(`${gw.url}/v1/models`, { headers: bearer('master-key-abcdefgh') })).status, 200);
    assert.equal((await fetch(`${gw.url}/admin/api/users`, { headers: bearer('master-key-abcdefgh') })).status, 200);
    assert.equal((await fetch(`${gw.url}/admin/api/users`)).status, 401);
  });
});
