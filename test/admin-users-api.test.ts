import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { installErrorHandlers } from '../src/routes/error-handler.ts';
import { GatewayError } from '../src/errors.ts';
import { adminUsersRoutes } from '../src/routes/admin-users.ts';
import { openDatabase, type Db } from '../src/store/db.ts';
import { IpAliasesRepo } from '../src/store/ip-aliases-repo.ts';
import { STORE_MIGRATIONS } from '../src/store/migrations.ts';
import { createSecretBox } from '../src/store/secret.ts';
import { UsersRepo } from '../src/store/users-repo.ts';

const ADMIN = 'Bearer test-admin-token';

interface Harness {
  app: FastifyInstance;
  db: Db;
  users: UsersRepo;
  base: string;
  logs: string[];
}

/** A small app with only the admin plugin; requireAdmin accepts one fixed Authorization header. */
async function startHarness(hasMasterKey?: () => boolean): Promise<Harness> {
  const db = openDatabase(':memory:', STORE_MIGRATIONS);
  const users = new UsersRepo(db, createSecretBox(randomBytes(32)));
  const logs: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const app = Fastify({ logger: { level: 'trace', stream } });
  const requireAdmin = (req: FastifyRequest) => {
    if (!req.headers.authorization)
      throw new GatewayError({ status: 401, code: 'invalid_api_key', message: 'No key.' });
    if (req.headers.authorization !== ADMIN)
      throw new GatewayError({ status: 403, code: 'admin_required', message: 'Admins only.' });
  };
  installErrorHandlers(app); // the app's one error mapper, as in buildApp
  await app.register(adminUsersRoutes, { users, ipAliases: new IpAliasesRepo(db), requireAdmin, hasMasterKey });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, db, users, base: address, logs };
}

async function stop(h: Harness) {
  await h.app.close();
  h.db.close();
}

async function call(h: Harness, method: string, path: string, body?: unknown, auth: string | null = ADMIN) {
  const headers: Record<string, string> = {};
  if (auth) headers.authorization = auth;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(h.base + path, {
    method,
    headers,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, json: text ? JSON.parse(text) : undefined };
}

let h: Harness;
before(async () => {
  h = await startHarness(() => true);
});
after(async () => {
  await stop(h);
});

test('create shows the key once; list and get never show keys', async () => {
  const created = await call(h, 'POST', '/admin/api/users', {
    name: 'alice',
    allow: ['fast', 'gpu1'],
    quota_req_day: 500,
    quota_cost_month: 12.5,
  });
  assert.equal(created.status, 201);
  const { key, ...user } = created.json;
  assert.match(key, /^sk-[A-Za-z0-9_-]{43}$/);
  assert.equal(user.name, 'alice');
  assert.equal(user.role, 'user');
  assert.equal(user.enabled, true);
  assert.deepEqual(user.allow, ['fast', 'gpu1']);
  assert.equal(user.quota_req_day, 500);
  assert.equal(user.quota_cost_month, 12.5);
  assert.equal(user.key_hint, `sk-…${key.slice(-4)}`);
  assert.equal(h.users.findByKey(key)?.id, user.id);

  const list = await call(h, 'GET', '/admin/api/users');
  assert.equal(list.status, 200);
  assert.ok(list.json.data.some((u: { id: number }) => u.id === user.id));
  assert.ok(!list.text.includes(key), 'the list never contains a key');
  assert.ok(!/"key"|key_digest|key_cipher/.test(list.text));

  const one = await call(h, 'GET', `/admin/api/users/${user.id}`);
  assert.deepEqual(one.json, user);
  assert.ok(h.logs.length > 0, 'the logger is on');
  assert.ok(!h.logs.join('').includes(key), 'no key in any log line');
});

test('a pasted key is accepted and works', async () => {
  const created = await call(h, 'POST', '/admin/api/users', { name: 'pasted', key: 'my-own-key-0123456789' });
  assert.equal(created.status, 201);
  assert.equal(created.json.key, 'my-own-key-0123456789');
  assert.equal(h.users.findByKey('my-own-key-0123456789')?.name, 'pasted');
  assert.ok(!h.logs.join('').includes('my-own-key-0123456789'));
});

test('patch changes only the given fields', async () => {
  const { json: created } = await call(h, 'POST', '/admin/api/users', { name: 'bob', quota_req_day: 10 });
  const patched = await call(h, 'PATCH', `/admin/api/users/${created.id}`, {
    role: 'admin',
    enabled: false,
    quota_req_day: null,
    note: 'ops',
  });
  assert.equal(patched.status, 200);
  assert.equal(patched.json.role, 'admin');
  assert.equal(patched.json.enabled, false);
  assert.equal(patched.json.quota_req_day, null);
  assert.equal(patched.json.note, 'ops');
  assert.equal(patched.json.name, 'bob');
  assert.equal(patched.json.key, undefined);
  assert.equal(h.users.get(created.id)?.enabled, false);
});

test('rotate returns a new key; the old one stops working', async () => {
  const { json: created } = await call(h, 'POST', '/admin/api/users', { name: 'carol' });
  const rotated = await call(h, 'POST', `/admin/api/users/${created.id}/rotate`);
  assert.equal(rotated.status, 200);
  assert.deepEqual(Object.keys(rotated.json), ['key']);
  assert.notEqual(rotated.json.key, created.key);
  assert.equal(h.users.findByKey(created.key), undefined);
  assert.equal(h.users.findByKey(rotated.json.key)?.id, created.id);

  const pasted = await call(h, 'POST', `/admin/api/users/${created.id}/rotate`, { key: 'carols-new-key-0123456' });
  assert.equal(pasted.json.key, 'carols-new-key-0123456');
  assert.equal(h.users.findByKey(rotated.json.key), undefined);
  assert.equal(h.users.findByKey('carols-new-key-0123456')?.id, created.id);
});

test('delete removes the user (204); its key stops working; a second delete is 404', async () => {
  const { json: created } = await call(h, 'POST', '/admin/api/users', { name: 'dave' });
  const deleted = await call(h, 'DELETE', `/admin/api/users/${created.id}`);
  assert.equal(deleted.status, 204);
  assert.equal(h.users.findByKey(created.key), undefined);
  const again = await call(h, 'DELETE', `/admin/api/users/${created.id}`);
  assert.equal(again.status, 404);
  assert.equal(again.json.error.code, 'user_not_found');
});

test('unknown or malformed ids are 404 for get, patch and rotate', async () => {
  for (const [method, path, body] of [
    ['GET', '/admin/api/users/999999', undefined],
    ['PATCH', '/admin/api/users/999999', { note: 'x' }],
    ['POST', '/admin/api/users/999999/rotate', undefined],
    ['GET', '/admin/api/users/abc', undefined],
  ] as const) {
    const res = await call(h, method, path, body);
    assert.equal(res.status, 404, `${method} ${path}`);
    assert.equal(res.json.error.code, 'user_not_found');
  }
});

test('invalid bodies are 400 with an OpenAI-shaped error naming the field', async () => {
  const cases: [string, string, unknown, string | null][] = [
    ['POST', '/admin/api/users', {}, 'name'],
    ['POST', '/admin/api/users', { name: '' }, 'name'],
    ['POST', '/admin/api/users', { name: 'x', role: 'root' }, 'role'],
    ['POST', '/admin/api/users', { name: 'x', allow: 'fast' }, 'allow'],
    ['POST', '/admin/api/users', { name: 'x', allow: ['ok', 3] }, 'allow'],
    ['POST', '/admin/api/users', { name: 'x', quota_req_day: '5' }, 'quota_req_day'],
    ['POST', '/admin/api/users', { name: 'x', quota_req_day: 1.5 }, 'quota_req_day'],
    ['POST', '/admin/api/users', { name: 'x', quota_cost_month: -1 }, 'quota_cost_month'],
    ['POST', '/admin/api/users', { name: 'x', key: 'too-short' }, 'key'],
    ['POST', '/admin/api/users', { name: 'x', colour: 'red' }, 'colour'],
    ['PATCH', '/admin/api/users/1', { enabled: 'yes' }, 'enabled'],
    ['PATCH', '/admin/api/users/1', { key: 'sk-patching-keys-is-not-allowed' }, 'key'],
    ['POST', '/admin/api/users/1/rotate', { key: 'short' }, 'key'],
    ['POST', '/admin/api/users', [], null],
  ];
  for (const [method, path, body, param] of cases) {
    const res = await call(h, method, path, body);
    assert.equal(res.status, 400, `${method} ${path} ${JSON.stringify(body)}: ${res.text}`);
    assert.deepEqual(Object.keys(res.json.error).sort(), ['code', 'message', 'param', 'type']);
    assert.equal(res.json.error.type, 'invalid_request_error');
    assert.equal(res.json.error.param, param, `${JSON.stringify(body)} → ${res.text}`);
    if (param) assert.ok(res.json.error.message.includes(param), res.json.error.message);
  }
});

test('malformed JSON is a 400 that does not quote the body', async () => {
  const res = await call(h, 'POST', '/admin/api/users', '{"name":"eve","key":"sk-secret-in-broken-json-0123"');
  assert.equal(res.status, 400);
  assert.equal(res.json.error.code, 'invalid_json');
  assert.ok(!res.text.includes('sk-secret-in-broken-json'));
  assert.ok(!h.logs.join('').includes('sk-secret-in-broken-json'));
});

test('a duplicate name is 409, on create and on rename', async () => {
  await call(h, 'POST', '/admin/api/users', { name: 'frank' });
  const dup = await call(h, 'POST', '/admin/api/users', { name: 'frank' });
  assert.equal(dup.status, 409);
  assert.equal(dup.json.error.code, 'user_exists');
  assert.equal(dup.json.error.param, 'name');
  const { json: other } = await call(h, 'POST', '/admin/api/users', { name: 'grace' });
  const rename = await call(h, 'PATCH', `/admin/api/users/${other.id}`, { name: 'frank' });
  assert.equal(rename.status, 409);
});

test('requireAdmin guards every route before the body is looked at', async () => {
  for (const [method, path, body] of [
    ['GET', '/admin/api/users', undefined],
    ['POST', '/admin/api/users', { bogus: true }],
    ['GET', '/admin/api/ip-aliases', undefined],
    ['PUT', '/admin/api/ip-aliases', { '10.0.0.1': 'x' }],
  ] as const) {
    const anonymous = await call(h, method, path, body, null);
    assert.equal(anonymous.status, 401, `${method} ${path}`);
    assert.equal(anonymous.json.error.code, 'invalid_api_key');
    const user = await call(h, method, path, body, 'Bearer some-user');
    assert.equal(user.status, 403, `${method} ${path}`);
  }
});

test('ip-aliases: PUT replaces the map, GET returns it, bad addresses are 400', async () => {
  assert.deepEqual((await call(h, 'GET', '/admin/api/ip-aliases')).json, {});
  const put = await call(h, 'PUT', '/admin/api/ip-aliases', {
    '192.168.1.20': 'desk',
    '2001:db8:1:2::/64': ' laptop ',
  });
  assert.equal(put.status, 200);
  assert.deepEqual(put.json, { '192.168.1.20': 'desk', '2001:db8:1:2::/64': 'laptop' });
  assert.deepEqual((await call(h, 'GET', '/admin/api/ip-aliases')).json, put.json);

  const badIp = await call(h, 'PUT', '/admin/api/ip-aliases', { 'not-an-ip': 'x' });
  assert.equal(badIp.status, 400);
  assert.equal(badIp.json.error.param, 'not-an-ip');
  const badAlias = await call(h, 'PUT', '/admin/api/ip-aliases', { '10.0.0.1': 7 });
  assert.equal(badAlias.status, 400);
  assert.equal(badAlias.json.error.param, '10.0.0.1');
  assert.deepEqual((await call(h, 'GET', '/admin/api/ip-aliases')).json, put.json, 'a refused PUT changes nothing');
});

test('without a master key, changes that would leave no enabled admin are refused', async (t) => {
  const g = await startHarness(() => false);
  t.after(() => stop(g));
  const plainFirst = await call(g, 'POST', '/admin/api/users', { name: 'plain' });
  assert.equal(plainFirst.status, 409);
  assert.equal(plainFirst.json.error.code, 'would_lock_out');
  assert.equal(g.users.count(), 0);

  const { json: admin } = await call(g, 'POST', '/admin/api/users', { name: 'root', role: 'admin' });
  assert.equal((await call(g, 'POST', '/admin/api/users', { name: 'plain' })).status, 201);
  assert.equal((await call(g, 'PATCH', `/admin/api/users/${admin.id}`, { enabled: false })).status, 409);
  assert.equal((await call(g, 'PATCH', `/admin/api/users/${admin.id}`, { role: 'user' })).status, 409);
  assert.equal((await call(g, 'DELETE', `/admin/api/users/${admin.id}`)).status, 409);
  assert.equal(g.users.hasAdmin(), true);

  const { json: second } = await call(g, 'POST', '/admin/api/users', { name: 'root2', role: 'admin' });
  assert.equal((await call(g, 'DELETE', `/admin/api/users/${admin.id}`)).status, 204, 'another admin remains');
  assert.equal((await call(g, 'PATCH', `/admin/api/users/${second.id}`, { note: 'last admin' })).status, 200);
});
