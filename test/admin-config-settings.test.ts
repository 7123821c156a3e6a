/**
 * /admin/api/settings over real sockets: a real gateway (config.yaml = the test's overrides, a
 * master key) on a fake backend. Settings are validated with config.yaml's rules and their key
 * paths, stored, and in force at once; reset goes back to config.yaml or the default.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { adminApi, chatCall } from './helpers/admin-api.ts';

const MASTER = 'master-key-settings-0123456789';

let fake: FakeBackend;
let gw: TestGateway;

before(async () => {
  fake = await startFake('vllm', { models: ['m'], knobs: { chunkCount: 10, tokensPerSecond: 25 } });
  gw = await startGateway([{ name: 'box', url: fake.url, max_concurrent: 1 }], {
    api_key: MASTER,
    park_timeout_s: 30,
    health_check_interval: 300,
  });
});
after(async () => {
  await gw.close();
  await fake.close();
});

const api = adminApi(() => gw.url, MASTER);
const chat = chatCall(() => gw.url, MASTER);

const setting = async (key: string) =>
  (await api('GET', '/admin/api/settings')).json.data.find((s: { key: string }) => s.key === key);

describe('settings: view and sources', () => {
  test('every top-level key but backends; default / config.yaml / store, restart-only marked', async () => {
    const res = await api('GET', '/admin/api/settings');
    assert.equal(res.status, 200);
    const keys = res.json.data.map((s: { key: string }) => s.key);
    assert.ok(!keys.includes('backends'));
    for (const k of ['park_timeout_s', 'max_parked', 'virtual_models', 'log_level', 'store_dir', 'api_key'])
      assert.ok(keys.includes(k), k);

    const park = await setting('park_timeout_s');
    assert.deepEqual(
      {
        value: park.value,
        source: park.source,
        fileValue: park.fileValue,
        defaultValue: park.defaultValue,
        overridden: park.overridden,
        restartOnly: park.restartOnly,
      },
      { value: 30, source: 'config.yaml', fileValue: 30, defaultValue: 60, overridden: false, restartOnly: false },
    );
    const parked = await setting('max_parked');
    assert.equal(parked.source, 'default');
    assert.equal(parked.value, 100);
    assert.equal(parked.fileValue, undefined);
    assert.equal((await setting('stats_flush_ms')).restartOnly, true);
    const storeDir = await setting('store_dir');
    assert.equal(storeDir.storable, false);
    assert.equal(storeDir.restartOnly, true);
  });

  test('the master key is shown as set, never its value', async () => {
    const res = await api('GET', '/admin/api/settings');
    assert.ok(!res.text.includes(MASTER));
    const key = res.json.data.find((s: { key: string }) => s.key === 'api_key');
    assert.deepEqual(key, {
      key: 'api_key',
      secret: true,
      set: true,
      source: 'config.yaml',
      restartOnly: false,
      overridden: false,
      storable: true,
    });
    const one = await api('GET', '/admin/api/settings/api_key');
    assert.equal(one.status, 200);
    assert.ok(!one.text.includes(MASTER));
  });
});

describe('settings: changes apply live', () => {
  test('virtual_models: set → listed and routable at once; reset → gone', async () => {
    const set = await api('PUT', '/admin/api/settings/virtual_models', { value: { fast: 'm', pinned: { box: 'm' } } });
    assert.equal(set.status, 200, set.text);
    assert.equal(set.json.ok, true);
    assert.equal(set.json.data.source, 'store');
    assert.deepEqual(gw.gateway.settings.get('virtual_models'), { fast: 'm', pinned: { box: 'm' } });

    const models = (await (
      await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${MASTER}` } })
    ).json()) as { data: { id: string }[] };
    assert.ok(
      models.data.some((m) => m.id === 'fast'),
      'the alias is listed',
    );
    const res = await chat('pinned');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gateway-backend'), 'box');

    const reset = await api('DELETE', '/admin/api/settings/virtual_models');
    assert.equal(reset.status, 200);
    assert.equal(reset.json.data.source, 'default');
    assert.equal(gw.gateway.settings.get('virtual_models'), undefined);
    const after = (await (
      await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${MASTER}` } })
    ).json()) as { data: { id: string }[] };
    assert.ok(!after.data.some((m) => m.id === 'fast'));
  });

  test('park_timeout_s: 0 from the store turns parking off at once; reset brings config.yaml back', async () => {
    const set = await api('PUT', '/admin/api/settings/park_timeout_s', { value: 0 });
    assert.equal(set.status, 200, set.text);
    const view = await setting('park_timeout_s');
    assert.deepEqual(
      {
        value: view.value,
        source: view.source,
        storeValue: view.storeValue,
        fileValue: view.fileValue,
        overridden: view.overridden,
      },
      { value: 0, source: 'store', storeValue: 0, fileValue: 30, overridden: true },
    );

    // box has one slot: hold it with a slow stream, then a second call finds it busy
    const held = await chat('box/m', true);
    assert.equal(held.status, 200);
    const refused = await chat('box/m');
    assert.equal(refused.status, 503);
    assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'parking_off');
    await held.text();

    assert.equal((await api('DELETE', '/admin/api/settings/park_timeout_s')).status, 200);
    assert.equal((await setting('park_timeout_s')).source, 'config.yaml');
    const again = await chat('box/m', true);
    const parked = chat('box/m'); // parks behind the stream now
    await again.text();
    assert.equal((await parked).status, 200);
  });

  test('log_level applies to the running logger', async () => {
    assert.equal((await api('PUT', '/admin/api/settings/log_level', { value: 'error' })).status, 200);
    assert.equal(gw.app.log.level, 'error');
    assert.equal((await api('DELETE', '/admin/api/settings/log_level')).status, 200);
    assert.equal(gw.app.log.level, gw.gateway.config().log_level);
  });
});

describe('settings: refused values write nothing', () => {
  test('key paths in problems, the store row unchanged', async () => {
    assert.equal((await api('PUT', '/admin/api/settings/virtual_models', { value: { keep: 'm' } })).status, 200);
    const bad = await api('PUT', '/admin/api/settings/virtual_models', { value: { fast: { nosuch: 'm' }, empty: '' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.code, 'invalid_config');
    assert.equal(bad.json.error.type, 'invalid_request_error');
    const paths = bad.json.problems.map((p: { path: string }) => p.path).sort();
    assert.deepEqual(paths, ['virtual_models.empty', 'virtual_models.fast.nosuch']);
    assert.ok(paths.includes(bad.json.error.param));
    assert.match(bad.json.error.message, /and 1 more problem/);
    assert.deepEqual(gw.gateway.settings.get('virtual_models'), { keep: 'm' }, 'the stored row is unchanged');
    assert.deepEqual(gw.gateway.config().virtual_models, { keep: 'm' });
    assert.equal((await api('DELETE', '/admin/api/settings/virtual_models')).status, 200);
  });

  test('wrong types, out of range, not storable, unknown keys, null', async () => {
    const negative = await api('PUT', '/admin/api/settings/park_timeout_s', { value: -1 });
    assert.equal(negative.status, 400);
    assert.equal(negative.json.error.param, 'park_timeout_s');
    const level = await api('PUT', '/admin/api/settings/log_level', { value: 'loud' });
    assert.equal(level.status, 400);
    assert.match(level.json.problems[0].message, /must be one of/);
    const storeDir = await api('PUT', '/admin/api/settings/store_dir', { value: '/elsewhere' });
    assert.equal(storeDir.status, 400);
    assert.match(storeDir.json.problems[0].message, /not a setting the store may hold/);
    assert.equal((await api('PUT', '/admin/api/settings/colour', { value: 'red' })).status, 400);
    assert.equal((await api('PUT', '/admin/api/settings/park_timeout_s', { value: null })).status, 400);
    assert.equal(
      (await api('PUT', '/admin/api/settings/park_timeout_s', { wrong: 1 })).status,
      400,
      'the body is {value}',
    );
    assert.equal((await api('GET', '/admin/api/settings/colour')).status, 404);
    for (const key of ['park_timeout_s', 'log_level', 'store_dir', 'colour'])
      assert.equal(gw.gateway.settings.get(key), undefined, key);
  });
});

describe('settings: access', () => {
  test('no key → 401, a non-admin user key → 403, an admin user key → 200', async () => {
    assert.equal((await api('GET', '/admin/api/settings', undefined, null)).status, 401);
    assert.equal((await api('PUT', '/admin/api/settings/park_timeout_s', { value: 1 }, null)).status, 401);
    const { key: userKey } = gw.gateway.users.create({ name: 'plain' });
    assert.equal((await api('GET', '/admin/api/settings', undefined, userKey)).status, 403);
    assert.equal((await api('PUT', '/admin/api/settings/park_timeout_s', { value: 1 }, userKey)).status, 403);
    assert.equal((await api('DELETE', '/admin/api/settings/park_timeout_s', undefined, userKey)).status, 403);
    assert.equal(gw.gateway.settings.get('park_timeout_s'), undefined);
    const { key: adminKey } = gw.gateway.users.create({ name: 'boss', role: 'admin' });
    assert.equal((await api('GET', '/admin/api/settings', undefined, adminKey)).status, 200);
  });
});
