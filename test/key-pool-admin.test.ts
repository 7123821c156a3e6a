/**
 * A key pool added through /admin/api/backends: each key stored encrypted (no key in the store's
 * files), shown masked in the admin views with each key's state, kept when the spec comes back
 * echoed masked, replaced by a new sole api_key, and api_key with api_keys together refused.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startKeyedBackend, type KeyedBackend } from './fakes/keyed-backend.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { adminApi } from './helpers/admin-api.ts';
import { waitFor } from './helpers/wait.ts';

const MASTER = 'master-key-keypool-0123456789';
const A = 'sk-pool-aaaaaaaaaaaaaaaa1111';
const B = 'sk-pool-bbbbbbbbbbbbbbbb2222';

let fake: KeyedBackend;
let gw: TestGateway;
before(async () => {
  fake = await startKeyedBackend('m', { [A]: { status: 429, retryAfter: '50' }, [B]: 'ok' });
  gw = await startGateway([], { api_key: MASTER, health_check_interval: 300 });
});
after(async () => {
  await gw.close();
  await fake.close();
});

const api = adminApi(() => gw.url, MASTER);

/** Every byte of the store's files (the database and its write-ahead log). */
function storeBytes(): string {
  return readdirSync(gw.storeDir)
    .filter((f) => f.startsWith('store.db'))
    .map((f) => readFileSync(join(gw.storeDir, f)).toString('latin1'))
    .join('');
}

test('a pool added over the admin API is stored encrypted, shown masked, and rotates', async () => {
  const added = await api('POST', '/admin/api/backends', {
    name: 'cloud',
    url: fake.url,
    api_keys: [A, B],
    paid: true,
  });
  assert.equal(added.status, 201, added.text);
  assert.deepEqual(gw.gateway.storedBackends.get('cloud')?.api_keys, [A, B]);
  for (const key of [A, B]) assert.ok(!storeBytes().includes(key), 'no key in clear in the store');
  await waitFor(() => gw.gateway.registry.get('cloud')?.healthy === true, 'discovered with its pool');

  const chat = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}` },
    body: JSON.stringify({ model: 'cloud/m', messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(chat.status, 200, await chat.text());
  assert.deepEqual([fake.count(A), fake.count(B)], [1, 1]);

  const view = await api('GET', '/admin/api/backends/cloud');
  assert.deepEqual(view.json.spec.api_keys, [
    { set: true, hint: 'sk-…1111' },
    { set: true, hint: 'sk-…2222' },
  ]);
  assert.deepEqual(
    view.json.keys.map((k: { hint: string; state: string }) => [k.hint, k.state]),
    [
      ['#1 sk-…1111', 'muted'],
      ['#2 sk-…2222', 'ok'],
    ],
  );
  const listing = await api('GET', '/admin/api/backends');
  for (const text of [view.text, listing.text, added.text])
    for (const key of [A, B]) assert.ok(!text.includes(key), 'no admin view shows a key');
});

test('the spec echoed masked keeps the pool; a new sole api_key replaces it; both together are refused', async () => {
  const echoed = await api('PUT', '/admin/api/backends/cloud', {
    ...(await api('GET', '/admin/api/backends/cloud')).json.spec,
    max_concurrent: 3,
  });
  assert.equal(echoed.status, 200, echoed.text);
  assert.deepEqual(gw.gateway.storedBackends.get('cloud')?.api_keys, [A, B], 'kept from the masked echo');
  const reordered = await api('PUT', '/admin/api/backends/cloud', {
    url: fake.url,
    api_keys: [{ set: true, hint: 'sk-…2222' }, 'sk-pool-new-key-3333'],
  });
  assert.equal(reordered.status, 200, reordered.text);
  assert.deepEqual(gw.gateway.storedBackends.get('cloud')?.api_keys, [B, 'sk-pool-new-key-3333']);
  const unknown = await api('PUT', '/admin/api/backends/cloud', {
    url: fake.url,
    api_keys: [{ set: true, hint: 'x' }],
  });
  assert.equal(unknown.status, 400, unknown.text);
  assert.equal(unknown.json.error.param, 'api_keys[0]');
  const both = await api('PUT', '/admin/api/backends/cloud', { url: fake.url, api_key: A, api_keys: [B] });
  assert.equal(both.status, 400, both.text);
  assert.equal(both.json.error.param, 'api_keys');
  const moved = await api('PUT', '/admin/api/backends/cloud', { url: 'http://127.0.0.1:1' });
  assert.equal(moved.status, 400, 'a stored pool is never sent to a new address');
  assert.equal(moved.json.error.param, 'api_keys');
  const sole = await api('PUT', '/admin/api/backends/cloud', { url: fake.url, api_key: A });
  assert.equal(sole.status, 200, sole.text);
  assert.equal(gw.gateway.storedBackends.get('cloud')?.api_keys, undefined);
  assert.equal(gw.gateway.storedBackends.get('cloud')?.api_key, A);
  assert.equal(gw.gateway.registry.get('cloud')?.keys, undefined, 'the registry dropped the pool');
});
