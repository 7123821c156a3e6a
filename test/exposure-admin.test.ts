/**
 * An open gateway (no api_key, no users) reachable from the network: its admin API answers
 * loopback callers only, and /health shows strangers status and counts, never the fleet's
 * hosts, errors or models. Remote callers come through trust_proxy + X-Forwarded-For over a
 * socket, through fastify's inject with a remote address, and through a real LAN interface
 * when the machine has one.
 */
import assert from 'node:assert/strict';
import { networkInterfaces } from 'node:os';
import { describe, test } from 'node:test';
import { startFake } from './fakes/index.ts';
import { startGateway } from './helpers/gateway.ts';

const json = { 'content-type': 'application/json' };
const remote = { 'x-forwarded-for': '192.168.1.9' };
type OpenAIError = { error: { message: string; type: string; param: string | null; code: string } };

function assertLockHint(body: OpenAIError): void {
  assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type']);
  assert.equal(body.error.type, 'permission_error');
  assert.equal(body.error.code, 'admin_loopback_only');
  assert.match(body.error.message, /api_key/);
  assert.match(body.error.message, /admin user/);
  assert.match(body.error.message, /loopback/);
}

function lanAddress(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
}

describe('admin API while bootstrap-open', () => {
  test('a remote caller (trusted X-Forwarded-For) gets 403 with how to lock; loopback callers get in', async (t) => {
    const gw = await startGateway([], { trust_proxy: true });
    t.after(() => gw.close());

    for (const path of [
      '/admin/api/users',
      '/admin/api/ip-aliases',
      '/admin/api/stats?group=backend',
      '/admin/api/calls',
    ]) {
      const r = await fetch(`${gw.url}${path}`, { headers: remote });
      assert.equal(r.status, 403, path);
      assertLockHint((await r.json()) as OpenAIError);
    }
    // the first admin cannot be created from afar either: the gateway stays open
    const create = await fetch(`${gw.url}/admin/api/users`, {
      method: 'POST',
      headers: { ...json, ...remote },
      body: JSON.stringify({ name: 'intruder', role: 'admin' }),
    });
    assert.equal(create.status, 403);
    assert.equal(gw.gateway.authenticator.isOpen(), true);

    // loopback (no proxy header, or a proxy naming a loopback client) is the admin
    assert.equal((await fetch(`${gw.url}/admin/api/users`)).status, 200);
    assert.equal(
      (await fetch(`${gw.url}/admin/api/users`, { headers: { 'x-forwarded-for': '127.0.0.1' } })).status,
      200,
    );

    // once locked (an admin created from loopback), the admin key works from anywhere
    const made = await fetch(`${gw.url}/admin/api/users`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ name: 'root', role: 'admin' }),
    });
    assert.equal(made.status, 201);
    const { key } = (await made.json()) as { key: string };
    assert.equal(
      (await fetch(`${gw.url}/admin/api/users`, { headers: { ...remote, authorization: `Bearer ${key}` } })).status,
      200,
    );
    assert.equal((await fetch(`${gw.url}/admin/api/users`, { headers: remote })).status, 401);
  });

  test('judged on the socket address: remote 403, every loopback form 200 (inject)', async (t) => {
    const gw = await startGateway([]);
    t.after(() => gw.close());
    const asFrom = (remoteAddress: string) => gw.app.inject({ method: 'GET', url: '/admin/api/users', remoteAddress });
    const refused = await asFrom('192.168.1.9');
    assert.equal(refused.statusCode, 403);
    assertLockHint(refused.json() as OpenAIError);
    assert.equal((await asFrom('fd00::7')).statusCode, 403);
    for (const ip of ['127.0.0.1', '127.3.2.1', '::1', '::ffff:127.0.0.1'])
      assert.equal((await asFrom(ip)).statusCode, 200, ip);
    // without trust_proxy a forged X-Forwarded-For changes nothing
    const forged = await gw.app.inject({
      method: 'GET',
      url: '/admin/api/users',
      remoteAddress: '192.168.1.9',
      headers: { 'x-forwarded-for': '127.0.0.1' },
    });
    assert.equal(forged.statusCode, 403);
  });

  test('over a real LAN interface', async (t) => {
    const lan = lanAddress();
    if (!lan) return t.skip('no non-loopback IPv4 interface on this machine');
    const gw = await startGateway([], {}, { host: '0.0.0.0' });
    t.after(() => gw.close());
    const r = await fetch(`http://${lan}:${gw.port}/admin/api/users`);
    assert.equal(r.status, 403);
    assertLockHint((await r.json()) as OpenAIError);
    const health = (await (await fetch(`http://${lan}:${gw.port}/health`)).json()) as {
      detail: string;
      auth: { open: boolean };
    };
    assert.match(health.detail, /^summary/);
    assert.equal(health.auth.open, true);
    assert.equal((await fetch(`${gw.url}/admin/api/users`)).status, 200);
  });
});

describe('/health detail', () => {
  test('strangers see status and counts only; admins (and loopback while open) see everything', async (t) => {
    const fake = await startFake('ollama', { models: ['secret-model:7b'] });
    const gw = await startGateway(
      [
        { name: 'gpu-box', url: fake.url, host: 'basement-rig' },
        { name: 'dead-box', url: 'http://127.0.0.1:1' },
      ],
      { trust_proxy: true, virtual_models: { 'secret-model:7b': 'secret-model:7b' } },
    );
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    gw.gateway.rejectReload([{ path: 'backends[0].api_key', message: 'reload-problem-text' }]);
    const health = async (headers: Record<string, string> = {}) => {
      const r = await fetch(`${gw.url}/health`, { headers });
      assert.equal(r.status, 200);
      return { text: await r.clone().text(), body: (await r.json()) as Record<string, any> };
    };
    const leaks = [
      /gpu-box/,
      /dead-box/,
      /basement-rig/,
      /secret-model/,
      new RegExp(String(fake.port)),
      /127\.0\.0\.1/,
      /reload-problem-text/,
      /unreachable/,
    ];
    const assertSummary = ({ text, body }: { text: string; body: Record<string, any> }, open: boolean) => {
      assert.equal(body.status, 'degraded');
      assert.equal(body.auth.open, open);
      assert.equal(typeof body.uptime_s, 'number');
      assert.deepEqual(body.backends, { total: 2, healthy: 1, inflight: 0 });
      assert.deepEqual(body.parked, { total: 0 });
      assert.equal(body.config, undefined);
      for (const leak of leaks) assert.doesNotMatch(text, leak);
    };
    const assertFull = ({ body }: { body: Record<string, any> }) => {
      assert.equal(body.detail, 'full');
      assert.equal(body.backends['gpu-box'].host, 'basement-rig');
      assert.equal(body.backends['dead-box'].error.kind, 'unreachable');
      assert.deepEqual(body.config.reload_errors, [{ path: 'backends[0].api_key', message: 'reload-problem-text' }]);
      assert.ok(Array.isArray(body.alias_collisions));
    };

    // open: loopback is the admin, a remote caller is a stranger
    assertFull(await health());
    assertSummary(await health(remote), true);

    // locked: the key decides, loopback or not
    gw.gateway.reload({ ...gw.gateway.config(), api_key: 'sk-master-0123456789abcdef' });
    gw.gateway.rejectReload([{ path: 'backends[0].api_key', message: 'reload-problem-text' }]);
    assertSummary(await health(), false);
    assertSummary(await health({ authorization: 'Bearer sk-wrong-0123456789abcdef' }), false);
    assertFull(await health({ authorization: 'Bearer sk-master-0123456789abcdef', ...remote }));
    const mk = async (body: object) => {
      const r = await fetch(`${gw.url}/admin/api/users`, {
        method: 'POST',
        headers: { ...json, authorization: 'Bearer sk-master-0123456789abcdef' },
        body: JSON.stringify(body),
      });
      assert.equal(r.status, 201);
      return ((await r.json()) as { key: string }).key;
    };
    const adminKey = await mk({ name: 'ops', role: 'admin' });
    const userKey = await mk({ name: 'kid' });
    assertFull(await health({ 'x-api-key': adminKey }));
    assertSummary(await health({ 'x-api-key': userKey }), false);
  });
});
