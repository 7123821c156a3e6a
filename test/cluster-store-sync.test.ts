/**
 * Cluster mode, the store: one redis-server, three in-process gateways (own store dirs, one
 * shared secret.key). What the admin API edits on one instance (users and keys, stored backends
 * with their api_key, settings and aliases, IP aliases) is in force on the others within 2 s;
 * concurrent edits on two instances converge; a late instance imports the state at boot; a
 * different secret.key is refused; Redis holds nothing in clear.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { adminApi } from './helpers/admin-api.ts';
import { startRedis, type RedisServer } from './helpers/redis-server.ts';
import { tempDirs } from './helpers/temp-dirs.ts';
import { GatewayLock } from '../src/store/backup/lock.ts';

const MASTER = 'master-key-cluster-store-0123456789';
const BACKEND_KEY = 'sk-stored-backend-secret-0f1e2d3c4b5a';
const BOUND_MS = 2000;
const secret = randomBytes(32);
const dirs = tempDirs('gw-cluster-store-');

let redis: RedisServer;
let fake: FakeBackend;
const gws: TestGateway[] = [];
let A: TestGateway, B: TestGateway, C: TestGateway;

function storeDir(key: Buffer = secret): string {
  const dir = dirs();
  writeFileSync(join(dir, 'secret.key'), key, { mode: 0o600 });
  return dir;
}

async function instance(id: string, dir = storeDir()): Promise<TestGateway> {
  const gw = await startGateway(
    [],
    { api_key: MASTER, health_check_interval: 300, cluster: { redis_url: redis.url, instance_id: id } },
    { storeDir: dir },
  );
  gws.push(gw);
  return gw;
}

const api = (gw: TestGateway) => adminApi(() => gw.url, MASTER);

async function models(gw: TestGateway, key: string): Promise<{ status: number; ids: string[] }> {
  const res = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
  const body = (await res.json()) as { data?: { id: string }[] };
  return { status: res.status, ids: (body.data ?? []).map((m) => m.id) };
}

/** Polls `cond` until it holds and asserts it did within `BOUND_MS` of the start. */
async function within(what: string, cond: () => Promise<boolean>): Promise<number> {
  const start = Date.now();
  for (;;) {
    if (await cond()) break;
    if (Date.now() - start > BOUND_MS + 3000) assert.fail(`never: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  const took = Date.now() - start;
  assert.ok(took <= BOUND_MS, `${what}: took ${took} ms (bound ${BOUND_MS} ms)`);
  return took;
}

before(async () => {
  redis = await startRedis();
  fake = await startFake('vllm', { models: ['stored-model'], apiKey: BACKEND_KEY });
  A = await instance('store-a');
  B = await instance('store-b');
  C = await instance('store-c');
});
after(async () => {
  for (const gw of gws.reverse()) await gw.close();
  await fake.close();
  await redis.stop();
});

describe('cluster: the store is the same on every instance', () => {
  let key = '';
  let userId = 0;

  test('a user created on A: its key works on B and C within 2 s', async () => {
    key = 'sk-user-cluster-' + randomBytes(12).toString('hex');
    assert.equal((await models(B, key)).status, 401, 'not known before');
    const created = await api(A)('POST', '/admin/api/users', { name: 'alice', key });
    assert.equal(created.status, 201, created.text);
    userId = created.json.id;
    await within('key accepted on B', async () => (await models(B, key)).status === 200);
    await within('key accepted on C', async () => (await models(C, key)).status === 200);
    const onC = await api(C)('GET', `/admin/api/users/${userId}`);
    assert.equal(onC.json.name, 'alice');
    assert.equal(onC.json.key_hint, created.json.key_hint);
  });

  test('disabled on A → refused on B within 2 s; deleted → refused on C and gone from B', async () => {
    assert.equal((await api(A)('PATCH', `/admin/api/users/${userId}`, { enabled: false })).status, 200);
    await within('disabled key refused on B', async () => (await models(B, key)).status === 401);
    assert.equal((await api(A)('PATCH', `/admin/api/users/${userId}`, { enabled: true })).status, 200);
    await within('enabled again on C', async () => (await models(C, key)).status === 200);
    assert.equal((await api(A)('DELETE', `/admin/api/users/${userId}`)).status, 204);
    await within('deleted key refused on C', async () => (await models(C, key)).status === 401);
    await within('gone from B', async () => (await api(B)('GET', `/admin/api/users/${userId}`)).status === 404);
  });

  test('a rotated key: the old one stops and the new one works on the other instances', async () => {
    const old = 'sk-rotate-cluster-' + randomBytes(12).toString('hex');
    const made = await api(B)('POST', '/admin/api/users', { name: 'rory', key: old });
    assert.equal(made.status, 201, made.text);
    await within('key accepted on A', async () => (await models(A, old)).status === 200);
    const rotated = await api(B)('POST', `/admin/api/users/${made.json.id}/rotate`, {});
    assert.equal(rotated.status, 200, rotated.text);
    await within('new key accepted on A', async () => (await models(A, rotated.json.key)).status === 200);
    assert.equal((await models(A, old)).status, 401, 'the old key is refused');
  });

  test('a stored backend with an api_key added on B: C discovers it (the key decrypts there)', async () => {
    const res = await api(B)('POST', '/admin/api/backends', { name: 'shared', url: fake.url, api_key: BACKEND_KEY });
    assert.equal(res.status, 201, res.text);
    await within("C's /v1/models lists the stored backend's model", async () =>
      (await models(C, MASTER)).ids.includes('shared/stored-model'),
    );
    const view = (await api(C)('GET', '/admin/api/backends/shared')).json;
    assert.equal(view.source, 'store');
    assert.equal(view.healthy, true, 'probed with the api_key');
    assert.ok(!JSON.stringify(view).includes(BACKEND_KEY), 'still masked');
  });

  test('an alias set on B (virtual_models) is in force on C and A within 2 s', async () => {
    const res = await api(B)('PUT', '/admin/api/settings/virtual_models', { value: { fast: 'stored-model' } });
    assert.equal(res.status, 200, res.text);
    await within('C holds the alias', async () => {
      const s = await api(C)('GET', '/admin/api/settings/virtual_models');
      return JSON.stringify(s.json.value) === JSON.stringify({ fast: 'stored-model' });
    });
    await within("A's /v1/models lists the alias", async () => (await models(A, MASTER)).ids.includes('fast'));
  });

  test('IP aliases replaced on C are shown on A within 2 s', async () => {
    const map = { '10.1.2.3': 'living-room', '192.168.7.9': 'laptop' };
    assert.equal((await api(C)('PUT', '/admin/api/ip-aliases', map)).status, 200);
    await within('A has the IP aliases', async () => {
      const got = await api(A)('GET', '/admin/api/ip-aliases');
      return JSON.stringify(got.json) === JSON.stringify(map);
    });
    assert.deepEqual(A.gateway.ipAliases.current(), map, 'the request path reads them too');
  });

  test('concurrent edits on A and B: both kept, every instance converges', async () => {
    const keyA = 'sk-concurrent-a-' + randomBytes(12).toString('hex');
    const keyB = 'sk-concurrent-b-' + randomBytes(12).toString('hex');
    const [ua, ub, sa, sb] = await Promise.all([
      api(A)('POST', '/admin/api/users', { name: 'concurrent-a', key: keyA }),
      api(B)('POST', '/admin/api/users', { name: 'concurrent-b', key: keyB }),
      api(A)('PUT', '/admin/api/settings/max_parked', { value: 77 }),
      api(B)('PUT', '/admin/api/settings/park_timeout_s', { value: 42 }),
    ]);
    for (const r of [ua, ub, sa, sb]) assert.ok(r.status < 300, r.text);
    // the same row on both at once: last writer wins, and everybody agrees on which
    await Promise.all([
      api(A)('PUT', '/admin/api/settings/affinity_max_wait_s', { value: 11 }),
      api(B)('PUT', '/admin/api/settings/affinity_max_wait_s', { value: 12 }),
    ]);
    const state = async (gw: TestGateway) => {
      const users = (await api(gw)('GET', '/admin/api/users')).json.data.map((u: { id: number; name: string }) => [
        u.id,
        u.name,
      ]);
      const cfg = gw.gateway.config();
      return JSON.stringify({ users, p: cfg.max_parked, t: cfg.park_timeout_s, w: cfg.affinity_max_wait_s });
    };
    await within('A, B and C agree', async () => {
      const [a, b, c] = await Promise.all([state(A), state(B), state(C)]);
      return a === b && b === c;
    });
    const final = JSON.parse(await state(C));
    const names = final.users.map((u: [number, string]) => u[1]);
    assert.ok(names.includes('concurrent-a') && names.includes('concurrent-b'), names.join());
    assert.equal(new Set(final.users.map((u: [number, string]) => u[0])).size, final.users.length, 'ids unique');
    assert.equal(final.p, 77);
    assert.equal(final.t, 42);
    assert.ok(final.w === 11 || final.w === 12, String(final.w));
    for (const gw of [A, B, C]) {
      assert.equal((await models(gw, keyA)).status, 200);
      assert.equal((await models(gw, keyB)).status, 200);
    }
  });

  test('a fourth instance started later has everything at boot', async () => {
    const D = await instance('store-d');
    const users = (await api(D)('GET', '/admin/api/users')).json.data.map((u: { name: string }) => u.name);
    assert.ok(users.includes('concurrent-a') && users.includes('rory'), users.join());
    assert.deepEqual(D.gateway.config().virtual_models, { fast: 'stored-model' });
    assert.equal(D.gateway.config().max_parked, 77);
    assert.deepEqual(D.gateway.ipAliases.current(), { '10.1.2.3': 'living-room', '192.168.7.9': 'laptop' });
    assert.ok(D.gateway.config().backends.some((b) => b.name === 'shared' && b.api_key === BACKEND_KEY));
    const fresh = 'sk-on-d-' + randomBytes(12).toString('hex');
    assert.equal((await api(D)('POST', '/admin/api/users', { name: 'dora', key: fresh })).status, 201);
    await within('a user made on D works on A', async () => (await models(A, fresh)).status === 200);
  });

  test('Redis holds no key, secret, name or address in clear', async () => {
    const probe = new Redis(redis.url);
    try {
      const keys = await probe.keys('llmgw:store:*');
      assert.ok(keys.length >= 5, keys.join());
      let all = '';
      for (const k of keys) {
        const type = await probe.type(k);
        all += type === 'hash' ? JSON.stringify(await probe.hgetall(k)) : ((await probe.get(k)) ?? '');
      }
      for (const clear of [BACKEND_KEY, MASTER, 'concurrent-a', 'living-room', '10.1.2.3', fake.url])
        assert.ok(!all.includes(clear), `found ${clear}`);
    } finally {
      probe.disconnect();
    }
  });

  test('an instance with a different secret.key is refused at boot, naming the file', async () => {
    const dir = storeDir(randomBytes(32));
    await assert.rejects(instance('store-x', dir), /secret\.key differs/);
    assert.equal(GatewayLock.liveHolder(dir), undefined, 'the store lock is let go');
  });

  test('Redis restarted empty: the instances seed it again and keep syncing', async () => {
    await redis.kill();
    await redis.restart();
    const key2 = 'sk-after-restart-' + randomBytes(12).toString('hex');
    await within('A reconnects', async () => A.gateway.cluster!.connected);
    await within('a user made on B after the restart works on C', async () => {
      const made = await api(B)('POST', '/admin/api/users', { name: 'after-restart', key: key2 });
      return made.status === 201 || made.status === 409;
    });
    await within('the key works on C', async () => (await models(C, key2)).status === 200);
    assert.equal((await models(C, fresh())).status, 401);
    const users = (await api(C)('GET', '/admin/api/users')).json.data.map((u: { name: string }) => u.name);
    assert.ok(users.includes('concurrent-b'), 'nothing lost: ' + users.join());
  });
});

function fresh(): string {
  return 'sk-unknown-' + randomBytes(12).toString('hex');
}
