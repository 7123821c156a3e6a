/**
 * Console sessions and the login throttle shared through Redis (cluster mode): two gateways on
 * one redis-server behave as one console behind a load balancer without sticky sessions. A
 * login on A works on B (a page, a CSRF-protected POST with A's page token), a logout on B ends
 * it on A (and A's open event stream), failed logins on A and B count together, each page names
 * its instance, Redis keeps only a hash of the session id; a lost Redis is a clear 503, and a
 * Redis back (empty) takes a new login.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { readSse } from './helpers/media-gateway.ts';
import { startRedis, type RedisServer } from './helpers/redis-server.ts';
import { UiClient } from './helpers/ui.ts';
import { waitFor } from './helpers/wait.ts';

const MASTER = 'cluster-sessions-master-key-0123456789';

/** The same browser (its cookie jar and last page's token) addressing another instance. */
function sameBrowser(ui: UiClient, base: string): UiClient {
  const other = new UiClient(base);
  (other as unknown as { cookies: Map<string, string> }).cookies = (
    ui as unknown as { cookies: Map<string, string> }
  ).cookies;
  other.csrf = ui.csrf;
  return other;
}

/** The session id inside the signed `gw_ui` cookie. */
function sessionIdOf(ui: UiClient): string {
  const raw = /(?:^|; )gw_ui=([^;]+)/.exec(ui.cookieHeader())?.[1];
  assert.ok(raw, 'a session cookie');
  const signed = decodeURIComponent(raw);
  return signed.slice(0, signed.lastIndexOf('.'));
}

describe('cluster: console sessions through Redis', () => {
  let redis: RedisServer;
  let a: TestGateway;
  let b: TestGateway;
  let probe: Redis;
  before(async () => {
    redis = await startRedis();
    const cluster = (id: string) => ({ api_key: MASTER, cluster: { redis_url: redis.url, instance_id: id } });
    a = await startGateway([], cluster('a'));
    b = await startGateway([], cluster('b'));
    probe = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    probe.on('error', () => {});
    await probe.connect();
  });
  after(async () => {
    probe.disconnect();
    await a?.close();
    await b?.close();
    await redis.stop();
  });

  test('a login on A works on B: a page, and a POST carrying the token of a page A rendered', async () => {
    const onA = await UiClient.login(a, MASTER);
    const onB = sameBrowser(onA, b.url);
    const page = await onB.get('/ui');
    assert.equal(page.status, 200, 'the session cookie signed by A is known to B');
    await onA.get('/ui/users/new'); // the form comes from A …
    onB.csrf = onA.csrf;
    const created = await onB.post('/ui/users', {
      // … and is posted to B
      name: 'from-b',
      role: 'user',
      enabled: 'on',
      quota_req_day: '',
      quota_cost_month: '',
      note: '',
    });
    assert.equal(created.status, 200, 'the CSRF check passes on B');
    assert.match(await created.text(), /shown <strong>this once<\/strong>/);
    assert.ok(b.gateway.users.list().some((u) => u.name === 'from-b'));
    const forged = await onB.post('/ui/users', { name: 'forged', role: 'user' }, { csrf: 'not-a-token' });
    assert.equal(forged.status, 403, 'a wrong token is still refused');
  });

  test('Redis holds the session under a hash of its id, with the session lifetime as TTL', async () => {
    const ui = await UiClient.login(a, MASTER);
    const id = sessionIdOf(ui);
    const key = `llmgw:ui:session:${createHash('sha256').update(id).digest('hex')}`;
    const stored = await probe.get(key);
    assert.ok(stored, 'the key is the sha256 of the id');
    assert.ok(!stored.includes(id), 'the id itself is not in the value');
    const keys = await probe.keys('llmgw:ui:session:*');
    assert.ok(
      keys.every((k) => !k.includes(id)),
      'nor in any key',
    );
    const ttl = await probe.pttl(key);
    assert.ok(ttl > 11.9 * 3_600_000 && ttl <= 12 * 3_600_000, `TTL ${ttl} ms`);
    assert.ok(!stored.includes(MASTER), 'never the master key');
  });

  test("a logout on B ends the session on A, and A's open event stream", async () => {
    const onA = await UiClient.login(a, MASTER);
    const stream = await fetch(`${a.url}/ui/events`, { headers: { cookie: onA.cookieHeader() }, redirect: 'manual' });
    assert.equal(stream.status, 200);
    const id = sessionIdOf(onA);
    const stolen = onA.cookieHeader();
    const onB = sameBrowser(onA, b.url);
    await onB.get('/ui');
    assert.equal((await onB.post('/ui/logout', {})).status, 303);
    assert.equal(await probe.exists(`llmgw:ui:session:${createHash('sha256').update(id).digest('hex')}`), 0);
    // the browser dropped its cookie; a copy of it (a stolen one) is no good on A either
    const stale = await fetch(`${a.url}/ui`, { headers: { cookie: stolen }, redirect: 'manual' });
    assert.equal(stale.status, 303);
    assert.match(stale.headers.get('location') ?? '', /^\/ui\/login/);
    const started = Date.now();
    const { frames, ended } = await readSse(stream, 6_000);
    assert.ok(ended, 'the stream on A ends');
    assert.equal(frames.at(-1)?.event, 'session-ended');
    assert.ok(Date.now() - started < 5_000, 'within a few seconds');
  });

  test('failed logins spread over A and B meet one throttle', async () => {
    const onA = new UiClient(a.url);
    await onA.get('/ui/login');
    const onB = new UiClient(b.url);
    await onB.get('/ui/login');
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const ui = i % 2 === 0 ? onA : onB;
      statuses.push((await ui.post('/ui/login', { key: `wrong-${i}-0000000000000` })).status);
    }
    assert.deepEqual(statuses, Array(10).fill(401), 'five failures on each: ten in all');
    for (const ui of [onA, onB]) {
      const blocked = await ui.post('/ui/login', { key: MASTER });
      assert.equal(blocked.status, 429, `${ui.base}: the eleventh attempt waits, even with the right key`);
      assert.ok(Number(blocked.headers.get('retry-after')) > 0);
    }
    const keys = await probe.keys('llmgw:ui:login-failures:*');
    assert.equal(keys.length, 1);
    assert.equal(await probe.get(keys[0]), '10');
    assert.ok((await probe.pttl(keys[0])) > 0, 'the count expires');
    await probe.del(keys[0]); // the tests after this one log in from the same address
  });

  test('every page names the instance that answered it', async () => {
    const onA = await UiClient.login(a, MASTER);
    assert.match(await onA.html('/ui'), /class="instance[^"]*"[^>]*>instance a</);
    assert.match(await sameBrowser(onA, b.url).html('/ui'), /class="instance[^"]*"[^>]*>instance b</);
    assert.match(await new UiClient(b.url).html('/ui/login'), />instance b</, 'the login page too');
  });

  test('Redis lost: a console request gets a 503 saying the cluster store is unreachable; back, a new login works', async () => {
    const onA = await UiClient.login(a, MASTER);
    await redis.kill();
    await waitFor(() => !a.gateway.cluster!.connected && !b.gateway.cluster!.connected, 'Redis seen lost', 5_000);
    for (const [gw, name] of [
      [a, 'a'],
      [b, 'b'],
    ] as const) {
      const res = await sameBrowser(onA, gw.url).get('/ui');
      assert.equal(res.status, 503, `${name}: a page needing the session`);
      const html = await res.text();
      assert.match(html, /cluster store \(Redis\) is unreachable/);
      assert.doesNotMatch(html, /at .*\.ts:\d+/, 'no stack');
      assert.match(html, new RegExp(`>instance ${name}<`));
    }
    const login = await new UiClient(a.url).get('/ui/login');
    assert.equal(login.status, 200, 'the login page itself needs no Redis');
    const attempt = await onA.post('/ui/login', { key: MASTER });
    assert.equal(attempt.status, 503, 'a login cannot be checked against the shared throttle');
    const json = await fetch(`${a.url}/ui`, { headers: { cookie: onA.cookieHeader(), accept: 'application/json' } });
    assert.equal(json.status, 503);
    assert.match(((await json.json()) as { error: { message: string } }).error.message, /unreachable/);

    await redis.restart();
    await waitFor(() => a.gateway.cluster!.connected && b.gateway.cluster!.connected, 'Redis seen back', 10_000);
    // Redis came back empty: the old session is gone, a new login works on both instances
    assert.equal((await onA.get('/ui')).status, 303);
    const again = await UiClient.login(a, MASTER);
    assert.equal((await again.get('/ui')).status, 200);
    assert.equal((await sameBrowser(again, b.url).get('/ui')).status, 200, 'and B knows it');
  });
});

describe('without cluster: nothing new', () => {
  let gw: TestGateway;
  before(async () => (gw = await startGateway([], { api_key: MASTER })));
  after(() => gw.close());

  test('no instance named on the page; sessions work as before', async () => {
    const ui = await UiClient.login(gw, MASTER);
    const html = await ui.html('/ui');
    assert.doesNotMatch(html, /class="instance/);
    assert.equal((await ui.post('/ui/logout', {})).status, 303);
    assert.equal((await ui.get('/ui')).status, 303);
  });
});
