/**
 * /admin/api/backends over real sockets: a real gateway with a config.yaml backend and a master
 * key, fake backends to add. Backends are validated with config.yaml's rules, stored, discovered
 * and routable at once; secrets are write-only; drain lets in-flight work finish.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startComfyFake } from './fakes/comfyui-server.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';
import { adminApi, chatCall } from './helpers/admin-api.ts';

const MASTER = 'master-key-backends-0123456789';
const SECRET = 'sk-backend-secret-9f8e7d6c5b4a-wxyz';

let fileBox: FakeBackend;
let keyed: FakeBackend;
let gw: TestGateway;

before(async () => {
  fileBox = await startFake('llamacpp', { models: ['m'], knobs: { chunkCount: 12, tokensPerSecond: 30 } });
  keyed = await startFake('vllm', {
    models: ['m', 'keyed-model'],
    apiKey: SECRET,
    knobs: { chunkCount: 12, tokensPerSecond: 30 },
  });
  gw = await startGateway([{ name: 'filebox', url: fileBox.url }], { api_key: MASTER, health_check_interval: 300 });
});
after(async () => {
  await gw.close();
  await fileBox.close();
  await keyed.close();
});

const api = adminApi(() => gw.url, MASTER);
const chat = chatCall(() => gw.url, MASTER);

const view = async (name: string) => (await api('GET', `/admin/api/backends/${name}`)).json;
const listed = async () =>
  (
    (await (await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${MASTER}` } })).json()) as {
      data: { id: string }[];
    }
  ).data.map((m) => m.id);

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('backends: add, edit, secrets', () => {
  test('add → discovered and routable at once; the key is masked everywhere', async () => {
    const res = await api('POST', '/admin/api/backends', {
      name: 'cloud',
      url: `${keyed.url}/`,
      api_key: SECRET,
      paid: true,
    });
    assert.equal(res.status, 201, res.text);
    assert.ok(!res.text.includes(SECRET));
    assert.equal(res.json.data.source, 'store');
    assert.deepEqual(res.json.data.spec.api_key, { set: true, hint: 'sk-…wxyz' });
    assert.equal(res.json.data.spec.url, keyed.url, 'trailing slash stripped like config.yaml');
    assert.equal(gw.gateway.storedBackends.get('cloud')?.api_key, SECRET);

    await waitFor(() => gw.gateway.registry.get('cloud')?.healthy === true, 'cloud discovered');
    assert.ok((await listed()).includes('cloud/keyed-model'));
    const call = await chat('cloud/keyed-model');
    assert.equal(call.status, 200);
    assert.equal(call.headers.get('x-gateway-backend'), 'cloud');

    const all = await api('GET', '/admin/api/backends');
    assert.ok(
      !all.text.includes(SECRET) && !all.text.includes(SECRET.slice(-5)),
      'never more than the last 4 characters',
    );
    const cloud = all.json.data.find((b: { name: string }) => b.name === 'cloud');
    assert.deepEqual(
      {
        healthy: cloud.healthy,
        models: cloud.models,
        draining: cloud.draining,
        inflight: cloud.inflight,
        paid: cloud.paid,
      },
      { healthy: true, models: 2, draining: false, inflight: 0, paid: true },
    );
    assert.deepEqual(cloud.modelIds.sort(), ['keyed-model', 'm']);
    assert.equal(all.json.data.find((b: { name: string }) => b.name === 'filebox').source, 'config.yaml');
  });

  test('edit with a blank (or echoed) key keeps it; a new origin needs it again; {clear: true} removes it', async () => {
    const blank = await api('PUT', '/admin/api/backends/cloud', {
      url: keyed.url,
      api_key: '',
      paid: true,
      max_concurrent: 3,
    });
    assert.equal(blank.status, 200, blank.text);
    assert.equal(gw.gateway.storedBackends.get('cloud')?.api_key, SECRET, 'kept');
    assert.equal(gw.gateway.storedBackends.get('cloud')?.max_concurrent, 3);
    const echoed = await api('PUT', '/admin/api/backends/cloud', { ...(await view('cloud')).spec, max_concurrent: 4 });
    assert.equal(echoed.status, 200, echoed.text);
    assert.equal(gw.gateway.storedBackends.get('cloud')?.api_key, SECRET, 'the masked echo keeps it too');
    await waitFor(() => gw.gateway.registry.get('cloud')?.healthy === true, 'still up with the kept key');

    const moved = await api('PUT', '/admin/api/backends/cloud', { url: 'http://127.0.0.1:1', api_key: '' });
    assert.equal(moved.status, 400);
    assert.equal(moved.json.error.param, 'api_key');
    assert.equal(gw.gateway.storedBackends.get('cloud')?.url, keyed.url, 'nothing written');

    const cleared = await api('PUT', '/admin/api/backends/cloud', { url: keyed.url, api_key: { clear: true } });
    assert.equal(cleared.status, 200, cleared.text);
    assert.equal(gw.gateway.storedBackends.get('cloud')?.api_key, undefined);
    assert.equal(cleared.json.data.spec.api_key, undefined);
    await waitFor(() => gw.gateway.registry.get('cloud')?.error?.kind === 'auth', 'down without its key');
    assert.equal((await api('PUT', '/admin/api/backends/cloud', { url: keyed.url, api_key: SECRET })).status, 200);
    await waitFor(() => gw.gateway.registry.get('cloud')?.healthy === true, 'up again');
  });

  test('invalid specs are refused with their paths, nothing written', async () => {
    const before = JSON.stringify(gw.gateway.storedBackends.list());
    const bad = await api('PUT', '/admin/api/backends/broken', {
      url: 'http://10.0.0.9:8080/v1',
      stuck_after_s: 5,
      colour: 'red',
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.code, 'invalid_config');
    assert.deepEqual(bad.json.problems.map((p: { path: string }) => p.path).sort(), ['colour', 'stuck_after_s', 'url']);
    const badName = await api('POST', '/admin/api/backends', { name: 'a b', url: 'http://10.0.0.9:8080' });
    assert.equal(badName.json.error.param, 'name');
    const dup = await api('POST', '/admin/api/backends', { name: 'filebox', url: 'http://10.0.0.9:8080' });
    assert.equal(dup.status, 400);
    assert.match(dup.json.problems[0].message, /already exists/);
    const rename = await api('PUT', '/admin/api/backends/cloud', { name: 'filebox', url: keyed.url });
    assert.equal(rename.status, 400, 'renaming onto a name in use');
    assert.equal(JSON.stringify(gw.gateway.storedBackends.list()), before);
    assert.equal((await api('PUT', '/admin/api/backends/cloud', 'not an object')).status, 400);
  });

  test('rename: a store backend moves, unless an alias still names the old one', async () => {
    assert.equal((await api('POST', '/admin/api/backends', { name: 'temp', url: 'http://10.0.0.9:8080' })).status, 201);
    assert.equal(
      (await api('PUT', '/admin/api/settings/virtual_models', { value: { pinned: { temp: 'm' } } })).status,
      200,
    );
    const refused = await api('PUT', '/admin/api/backends/temp', { name: 'temp2', url: 'http://10.0.0.9:8080' });
    assert.equal(refused.status, 400);
    assert.equal(refused.json.problems[0].path, 'virtual_models.pinned.temp');
    assert.equal((await api('DELETE', '/admin/api/settings/virtual_models')).status, 200);
    const moved = await api('PUT', '/admin/api/backends/temp', { name: 'temp2', url: 'http://10.0.0.9:8080' });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(gw.gateway.storedBackends.get('temp'), undefined);
    assert.ok(gw.gateway.storedBackends.get('temp2'));
    const removed = await api('DELETE', '/admin/api/backends/temp2');
    assert.equal(removed.status, 200);
    assert.equal(removed.json.note, undefined);
    assert.equal(gw.gateway.storedBackends.get('temp2'), undefined);
    assert.equal(gw.gateway.registry.get('temp2'), undefined);
    assert.equal((await api('DELETE', '/admin/api/backends/temp2')).status, 404);
  });
});

describe('backends: remove, reset, drain', () => {
  test('removing a config.yaml backend disables it with a store override; reset brings it back', async () => {
    const res = await api('DELETE', '/admin/api/backends/filebox');
    assert.equal(res.status, 200);
    assert.match(res.json.note, /config\.yaml.*disabled/);
    assert.equal(res.json.data.source, 'both');
    assert.equal(res.json.data.enabled, false);
    assert.equal(res.json.data.fileSpec.enabled, true);
    assert.ok(!(await listed()).includes('filebox/m'));
    assert.equal((await chat('filebox/m')).status, 404);

    const reset = await api('POST', '/admin/api/backends/filebox/reset');
    assert.equal(reset.status, 200);
    assert.equal(reset.json.data.source, 'config.yaml');
    assert.equal(gw.gateway.storedBackends.get('filebox'), undefined);
    await waitFor(() => gw.gateway.registry.get('filebox')?.healthy === true, 'filebox back');
    assert.equal((await chat('filebox/m')).status, 200);
  });

  test('drain: the in-flight stream finishes, new work goes elsewhere; undrain restores it', async () => {
    const stream = await chat('filebox/m', true);
    assert.equal(stream.status, 200);
    const drain = await api('POST', '/admin/api/backends/filebox/drain', { on: true });
    assert.equal(drain.status, 200);
    assert.deepEqual(
      { draining: drain.json.data.draining, inflight: drain.json.data.inflight, available: drain.json.data.available },
      { draining: true, inflight: 1, available: false },
    );

    // `m` is on both boxes: it goes to cloud; `filebox/m` only has filebox, which takes nothing new
    const elsewhere = await chat('m');
    assert.equal(elsewhere.status, 200);
    assert.equal(elsewhere.headers.get('x-gateway-backend'), 'cloud');
    assert.equal((await chat('filebox/m')).status, 503);
    const body = await stream.text();
    assert.match(body, /data: \[DONE\]/, 'the in-flight stream ran to its end');
    await waitFor(async () => (await view('filebox')).inflight === 0, 'the lease released');

    assert.equal((await api('POST', '/admin/api/backends/filebox/drain', { on: false })).json.data.draining, false);
    const back = await chat('filebox/m');
    assert.equal(back.status, 200);
    assert.equal(back.headers.get('x-gateway-backend'), 'filebox');
    assert.equal(gw.gateway.storedBackends.get('filebox'), undefined, 'draining is never stored');
    assert.equal((await api('POST', '/admin/api/backends/nosuch/drain', { on: true })).status, 404);
    assert.equal((await api('POST', '/admin/api/backends/filebox/drain', { on: 'yes' })).status, 400);
  });
});

describe('backends: test connection', () => {
  test('a fake lists its models (the stored key used when blank); nothing is registered', async () => {
    const res = await api('POST', '/admin/api/backends/test', { name: 'probe', url: fileBox.url });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(
      { ok: res.json.ok, kind: res.json.kind, models: res.json.models },
      { ok: true, kind: 'openai', models: ['m'] },
    );
    assert.equal(gw.gateway.registry.get('probe'), undefined);
    assert.equal(gw.gateway.storedBackends.get('probe'), undefined);

    const withKey = await api('POST', '/admin/api/backends/test', { name: 'cloud', url: keyed.url });
    assert.equal(withKey.json.ok, true, withKey.text);
    assert.deepEqual(withKey.json.models.sort(), ['keyed-model', 'm']);
    const wrongKey = await api('POST', '/admin/api/backends/test', {
      name: 'cloud',
      url: keyed.url,
      api_key: 'sk-wrong-key-000000000',
    });
    assert.equal(wrongKey.json.ok, false);
    assert.equal(wrongKey.json.errorKind, 'auth');
  });

  test('a closed port fails with a clear error; an invalid spec is a 400', async () => {
    const port = await closedPort();
    const res = await api('POST', '/admin/api/backends/test', { name: 'gone', url: `http://127.0.0.1:${port}` });
    assert.equal(res.status, 200);
    assert.equal(res.json.ok, false);
    assert.equal(res.json.errorKind, 'unreachable');
    assert.match(res.json.error, new RegExp(`127\\.0\\.0\\.1:${port}.*cannot connect.*ECONNREFUSED`));
    const bad = await api('POST', '/admin/api/backends/test', { name: 'x', url: 'ftp://h' });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.param, 'url');
  });

  test('a ComfyUI fake: its inventory counted, nothing remembered', async (t) => {
    const comfy = await startComfyFake();
    t.after(() => comfy.close());
    const res = await api('POST', '/admin/api/backends/test', { name: 'painter', type: 'comfyui', url: comfy.url });
    assert.equal(res.json.ok, true, res.text);
    assert.equal(res.json.kind, 'comfyui');
    assert.ok(res.json.inventory.checkpoints > 0 && res.json.inventory.classes > 0, res.text);
    assert.equal(gw.gateway.comfy.inventory('painter'), undefined);
  });
});

describe('backends: access', () => {
  test('no key → 401, a non-admin user key → 403', async () => {
    const { key: userKey } = gw.gateway.users.create({ name: 'plain' });
    for (const [method, path, body] of [
      ['GET', '/admin/api/backends', undefined],
      ['PUT', '/admin/api/backends/x', { url: 'http://10.0.0.1:1' }],
      ['DELETE', '/admin/api/backends/filebox', undefined],
      ['POST', '/admin/api/backends/filebox/drain', { on: true }],
      ['POST', '/admin/api/backends/test', { name: 'x', url: 'http://10.0.0.1:1' }],
    ] as const) {
      assert.equal((await api(method, path, body, null)).status, 401, `${method} ${path}`);
      assert.equal((await api(method, path, body, userKey)).status, 403, `${method} ${path}`);
    }
    assert.equal(gw.gateway.storedBackends.get('x'), undefined);
    assert.equal(gw.gateway.registry.get('filebox')?.draining ?? false, false);
  });
});
