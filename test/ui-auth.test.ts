/**
 * Console access over real HTTP: pages behind a login with an admin key (master key or admin
 * user), a non-admin key refused, sessions ended by logout and by the user losing the admin
 * role, CSRF on every POST, rate-limited login (an IPv6 client per /64), cookies Secure over
 * https, the bootstrap-open console (local requests only: a loopback caller naming this host,
 * not a rebinding page; create the first admin with its key shown once), strict security
 * headers, and the dashboard's escaping of what backends report.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { fetchAs, UiClient } from './helpers/ui.ts';

const MASTER = 'ui-master-key-0123456789';

describe('console access', () => {
  let gw: TestGateway;
  let fake: FakeBackend;
  before(async () => {
    fake = await startFake('vllm', { models: ['<script>alert(1)</script>', 'plain-model'] });
    gw = await startGateway([{ name: 'box', url: fake.url }], { api_key: MASTER });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  test('pages redirect to the login; assets and the login page need none', async () => {
    const anon = new UiClient(gw.url);
    const res = await anon.get('/ui/backends');
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), '/ui/login?next=%2Fui%2Fbackends');
    assert.equal((await anon.get('/ui/login')).status, 200);
    const css = await anon.get('/ui/assets/ui.css');
    assert.equal(css.status, 200);
    assert.match(css.headers.get('content-type') ?? '', /text\/css/);
    assert.equal((await anon.get('/ui/vendor/uplot/uPlot.iife.min.js')).status, 200);
    assert.equal((await anon.get('/ui/vendor/uplot/package.json')).status, 404, 'only the two uPlot files are served');
  });

  test('the master key logs in; the session cookie is HttpOnly, SameSite=Strict, signed, for /ui, 12 h', async () => {
    const ui = new UiClient(gw.url);
    await ui.get('/ui/login');
    const res = await ui.post('/ui/login', { key: MASTER, next: '/ui/calls' });
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), '/ui/calls');
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('gw_ui='))!;
    assert.match(cookie, /HttpOnly/i);
    assert.match(cookie, /SameSite=Strict/i);
    assert.match(cookie, /Path=\/ui/);
    assert.match(cookie, /Max-Age=43200/);
    assert.doesNotMatch(cookie, /Secure/, 'not over plain http');
    assert.ok(!cookie.includes(MASTER), 'the key is never in the cookie');
    const page = await ui.html('/ui');
    assert.match(page, /Backends/);
    assert.ok(!page.includes(MASTER), 'no secret in the page');
  });

  test('a next that leaves the console is ignored', async () => {
    const ui = new UiClient(gw.url);
    await ui.get('/ui/login');
    for (const next of ['https://evil.example/', '//evil.example/ui', '/uix', 'javascript:alert(1)']) {
      const res = await ui.post('/ui/login', { key: MASTER, next });
      assert.equal(res.headers.get('location'), '/ui', next);
    }
  });

  test('a wrong key or a non-admin user key is refused with the same message', async () => {
    const { key: userKey } = gw.gateway.users.create({ name: 'plain-user', role: 'user' });
    for (const key of ['wrong-key-000000000000', userKey]) {
      const ui = new UiClient(gw.url);
      await ui.get('/ui/login');
      const res = await ui.post('/ui/login', { key });
      assert.equal(res.status, 401);
      const html = await res.text();
      assert.match(html, /not an admin key/);
      assert.match(html, /aria-invalid="true"/);
      assert.equal(
        res.headers.getSetCookie().some((c) => c.startsWith('gw_ui=')),
        false,
      );
    }
  });

  test('CSRF: a POST without the token or with a wrong one is refused with 403 and changes nothing', async () => {
    const ui = await UiClient.login(gw, MASTER);
    for (const csrf of ['', 'forged-token']) {
      const res = await ui.post('/ui/logout', {}, { csrf });
      assert.equal(res.status, 403, `token ${JSON.stringify(csrf)}`);
      assert.match(await res.text(), /CSRF/);
    }
    assert.equal((await ui.get('/ui')).status, 200, 'still logged in');
    const other = await UiClient.login(gw, MASTER);
    const crossed = await ui.post('/ui/logout', {}, { csrf: other.csrf });
    assert.equal(crossed.status, 403, "another session's token is not this one's");
  });

  test('logout ends the session at once: the same cookie is refused afterwards', async () => {
    const ui = await UiClient.login(gw, MASTER);
    const res = await ui.post('/ui/logout', {});
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), '/ui/login?bye=1');
    assert.equal((await ui.get('/ui')).status, 303);
  });

  test('an admin user whose role is taken away loses the console on the next request', async () => {
    const { user, key } = gw.gateway.users.create({ name: 'ops', role: 'admin' });
    const ui = await UiClient.login(gw, key);
    assert.equal((await ui.get('/ui')).status, 200);
    gw.gateway.users.update(user.id, { role: 'user' });
    assert.equal((await ui.get('/ui')).status, 303);
  });

  test('security headers: a strict CSP, no framing, no caching of pages', async () => {
    const ui = await UiClient.login(gw, MASTER);
    const res = await ui.get('/ui');
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /script-src 'self'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
    assert.equal(res.headers.get('cache-control'), 'no-store');
    const html = await res.text();
    assert.doesNotMatch(html, /<script>(?!<\/script>)|<script(?![^>]*\bsrc=)[^>]*>[^<]/, 'no inline script');
    assert.doesNotMatch(html, /\sstyle="/, 'no inline style');
  });

  test('the dashboard renders a model id shaped like a script tag as text', async () => {
    const ui = await UiClient.login(gw, MASTER);
    const html = await ui.html('/ui');
    assert.ok(!html.includes('<script>alert(1)</script>'));
    assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
  });

  test('an unknown console page is an HTML 404 behind the login', async () => {
    const ui = await UiClient.login(gw, MASTER);
    const res = await ui.get('/ui/no-such-tab');
    assert.equal(res.status, 404);
    assert.match(res.headers.get('content-type') ?? '', /text\/html/);
  });
});

describe('the console of a bootstrap-open gateway', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway([]);
  });
  after(async () => {
    await gw.close();
  });

  test('open on this host with a banner; creating the admin shows its key once and locks the gateway', async () => {
    const ui = new UiClient(gw.url);
    const page = await ui.html('/ui');
    assert.match(page, /This gateway is open/);
    assert.match(page, /Create an admin user/);
    const res = await ui.post('/ui/bootstrap', {});
    assert.equal(res.status, 200);
    const html = await res.text();
    const key = /id="new-key"[^>]*value="([^"]+)"/.exec(html)?.[1];
    assert.ok(key && key.length >= 16, 'the key is shown');
    assert.equal(gw.gateway.authenticator.isOpen(), false);
    assert.doesNotMatch(await ui.html('/ui'), /This gateway is open/, 'the creator stays logged in');
    assert.equal((await new UiClient(gw.url).get('/ui')).status, 303, 'others must log in now');
    assert.equal((await ui.html('/ui')).includes(key), false, 'the key is never shown again');
    const again = await ui.post('/ui/bootstrap', {});
    assert.equal(again.status, 409);
  });
});

describe('the open console and DNS rebinding', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway([]);
  });
  after(async () => {
    await gw.close();
  });

  const foreign = (gwPort: number) => ({ host: `evil.example:${gwPort}` });

  test('from this host but named otherwise (a rebinding page): no open console, no bootstrap; the login page says why', async () => {
    const ui = new UiClient(gw.url);
    const evil = foreign(gw.port);
    const page = await ui.get('/ui', evil);
    assert.equal(page.status, 303, 'treated as remote: the login');
    const login = await ui.get('/ui/login', evil);
    assert.equal(login.status, 200);
    assert.match(await login.text(), /answers only when it is opened as <code>localhost<\/code>/);
    assert.equal((await ui.get('/ui/events', evil)).status, 303, 'no stream either');
    const boot = await ui.post('/ui/bootstrap', {}, { headers: { ...evil, origin: 'http://evil.example' } });
    assert.equal(boot.status, 403);
    assert.doesNotMatch(await boot.text(), /id="new-key"/);
    // the right Host, but the POST comes from another site's page
    const crossSite = await ui.post('/ui/bootstrap', {}, { headers: { origin: 'http://evil.example' } });
    assert.equal(crossSite.status, 403);
    assert.equal(gw.gateway.authenticator.isOpen(), true, 'no admin was created');
    assert.equal(gw.gateway.users.count(), 0);
    for (const host of [`localhost:${gw.port}`, `127.0.0.1:${gw.port}`, `[::1]:${gw.port}`, `127.9.9.9:${gw.port}`]) {
      assert.equal((await ui.get('/ui', { host })).status, 200, host);
    }
    assert.equal(
      (await ui.get('/ui', { origin: `http://localhost:${gw.port}` })).status,
      200,
      'a loopback origin is fine',
    );
  });

  test('the admin API the same way: 403 for a foreign Host or Origin, 200 for loopback names', async () => {
    const get = (headers: Record<string, string>) => fetchAs(`${gw.url}/admin/api/users`, { headers });
    for (const headers of [
      foreign(gw.port),
      { origin: 'http://evil.example' },
      { origin: 'null' },
      { host: `localhost.evil.example:${gw.port}` },
    ]) {
      const res = await get(headers);
      assert.equal(res.status, 403, JSON.stringify(headers));
      assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'admin_loopback_only');
    }
    const create = await fetchAs(`${gw.url}/admin/api/users`, {
      method: 'POST',
      body: JSON.stringify({ name: 'intruder', role: 'admin' }),
      headers: { 'content-type': 'application/json', ...foreign(gw.port), origin: 'http://evil.example' },
    });
    assert.equal(create.status, 403);
    assert.equal(gw.gateway.authenticator.isOpen(), true);
    for (const headers of [
      {},
      { host: `localhost:${gw.port}` },
      { host: `[::1]:${gw.port}` },
      { origin: `http://127.0.0.1:${gw.port}` },
    ] as Record<string, string>[]) {
      assert.equal((await get(headers)).status, 200, JSON.stringify(headers));
    }
  });
});

describe('console cookies and throttle behind a trusted proxy', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway([], { api_key: MASTER, trust_proxy: true });
  });
  after(async () => {
    await gw.close();
  });

  const csrfCookie = (res: Response) => res.headers.getSetCookie().find((c) => c.startsWith('gw_ui_csrf='));

  test('the CSRF cookie (and the session cookie) are Secure over https, not over http', async () => {
    const plain = csrfCookie(await new UiClient(gw.url).get('/ui/login'));
    assert.ok(plain);
    assert.doesNotMatch(plain, /;\s*Secure/i);
    const ui = new UiClient(gw.url);
    const https = csrfCookie(await ui.get('/ui/login', { 'x-forwarded-proto': 'https' }));
    assert.ok(https);
    assert.match(https, /;\s*Secure/i);
    const login = await ui.post('/ui/login', { key: MASTER }, { headers: { 'x-forwarded-proto': 'https' } });
    assert.equal(login.status, 303);
    assert.match(
      login.headers.getSetCookie().find((c) => c.startsWith('gw_ui='))!,
      /;\s*Secure/i,
    );
  });

  test('failed logins from one IPv6 /64 count together; another /64 is not held up', async () => {
    const ui = new UiClient(gw.url);
    await ui.get('/ui/login');
    const from = (ip: string, key: string) => ui.post('/ui/login', { key }, { headers: { 'x-forwarded-for': ip } });
    for (let i = 1; i <= 10; i++)
      assert.equal((await from(`2001:db8:1:2::${i.toString(16)}`, `wrong-${i}-0000000000000`)).status, 401);
    assert.equal((await from('2001:db8:1:2:ffff::99', MASTER)).status, 429, 'a new address in the same /64 waits');
    assert.equal((await from('2001:db8:1:3::1', 'wrong-x-0000000000000')).status, 401, 'the next /64 does not');
  });
});

describe('console login throttle', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway([], { api_key: MASTER });
  });
  after(async () => {
    await gw.close();
  });

  test('failed logins are throttled per address: after ten, even the right key waits', async () => {
    const ui = new UiClient(gw.url);
    await ui.get('/ui/login');
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++)
      statuses.push((await ui.post('/ui/login', { key: `wrong-${i}-0000000000000` })).status);
    assert.deepEqual(statuses, [...Array(10).fill(401), 429]);
    const blocked = await ui.post('/ui/login', { key: MASTER });
    assert.equal(blocked.status, 429);
    assert.ok(Number(blocked.headers.get('retry-after')) > 0);
  });
});
