/**
 * The console's server tab over real sockets: a real gateway (config.yaml sets park_timeout_s,
 * a master key) on a fake LLM server with one slot. Every setting is listed with the value in
 * force and its source; a change through the form is validated with config.yaml's rules,
 * stored and in force at once (park_timeout_s 0: a busy backend's next call is refused at
 * once), reset brings config.yaml's value back; refused values keep what was typed and store
 * nothing; both forms need their CSRF token; a rejected config.yaml reload is shown.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { UiClient } from './helpers/ui.ts';

const MASTER = 'ui-server-master-key-0123456789';

let fake: FakeBackend;
let gw: TestGateway;
let ui: UiClient;

before(async () => {
  fake = await startFake('vllm', { models: ['m'], knobs: { chunkCount: 10, tokensPerSecond: 25 } });
  gw = await startGateway([{ name: 'box', url: fake.url, max_concurrent: 1 }], {
    api_key: MASTER,
    park_timeout_s: 30,
    health_check_interval: 300,
  });
  ui = await UiClient.login(gw, MASTER);
});
after(async () => {
  await gw.close();
  await fake.close();
});

const chat = (stream = false) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}` },
    body: JSON.stringify({ model: 'box/m', stream, messages: [{ role: 'user', content: 'hi' }] }),
  });

/** The page's row of one setting. */
function rowOf(html: string, key: string): string {
  const start = html.indexOf(`id="s-${key}"`);
  assert.ok(start >= 0, `the page lists ${key}`);
  return html.slice(start, html.indexOf('</li>', start));
}

async function follow(res: Response): Promise<string> {
  assert.equal(res.status, 303, `expected a redirect, got ${res.status}: ${(await res.text()).slice(0, 300)}`);
  return ui.html(res.headers.get('location')!);
}

describe('server tab: what is in force and where from', () => {
  test('every runtime setting, grouped, with its value and source; restart-only marked; the config source shown', async () => {
    const html = await ui.html('/ui/server');
    for (const key of [
      'park_timeout_s',
      'max_parked',
      'affinity_max_wait_s',
      'fast_probe_interval_s',
      'health_check_interval',
      'retention_days',
      'body_retention_days',
      'capture_bodies',
      'call_log',
      'responses_ttl_h',
      'job_ttl_h',
      'media_park_timeout_s',
      'async_park_timeout_s',
      'stream_idle_timeout_s',
      'first_byte_timeout_s',
      'request_timeout_s',
      'stream_keepalive_s',
      'log_level',
      'metrics_access',
      'cors_origins',
      'ref_url_allow_private',
      'trust_proxy',
      'gpu_groups',
      'store_dir',
      'api_key',
    ])
      rowOf(html, key);
    assert.match(html, /<h2 id="h-scheduler">Scheduler and parking<\/h2>/);
    assert.match(html, /Configuration from <code>test<\/code>/);

    const park = rowOf(html, 'park_timeout_s');
    assert.match(park, /<label for="v-park_timeout_s">Park timeout<\/label>/);
    assert.match(park, /In force: <strong class="st-value">30 s<\/strong>/);
    assert.match(park, /<span class="tag src-file">config\.yaml<\/span>/);
    assert.match(park, /From config\.yaml \(the default is 60 s\)/);
    assert.match(rowOf(html, 'max_parked'), /<span class="tag src-default">default<\/span>/);
    assert.match(rowOf(html, 'stats_flush_ms'), /<span class="tag restart"/);
    assert.doesNotMatch(park, /tag restart/);
    assert.match(rowOf(html, 'store_dir'), /Set in config\.yaml only/);
    assert.match(rowOf(html, 'log_level'), /<option value="fatal" selected>fatal<\/option>/);
    assert.match(
      html,
      /<th scope="row">Aliases <code>virtual_models<\/code><\/th>/,
      'settings of other tabs are listed with a link',
    );
  });

  test('the master key: set or not, never its value', async () => {
    const html = await ui.html('/ui/server');
    assert.ok(!html.includes(MASTER));
    const row = rowOf(html, 'api_key');
    assert.match(row, /In force: <strong class="st-value">set<\/strong>/);
    assert.doesNotMatch(row, /<input id="v-api_key"/, 'no input for it');
    const refused = await ui.post('/ui/server/api_key', { value: 'new-master-key-000000000000' });
    assert.equal(refused.status, 400);
    assert.equal(gw.gateway.masterKey(), MASTER);
  });
});

describe('server tab: changes apply live', () => {
  test('park_timeout_s 0: a busy backend refuses the next call at once; source "store"; reset brings config.yaml back', async () => {
    await ui.html('/ui/server');
    const page = await follow(await ui.post('/ui/server/park_timeout_s', { value: '0' }));
    assert.match(page, /Saved park_timeout_s: in force now/);
    const row = rowOf(page, 'park_timeout_s');
    assert.match(row, /<span class="tag src-store">store<\/span>/);
    assert.match(row, /The store overrides config\.yaml&#39;s 30 s/);
    assert.match(row, /Reset to config\.yaml/);
    assert.equal(gw.gateway.settings.get('park_timeout_s'), 0);

    const held = await chat(true); // box has one slot
    assert.equal(held.status, 200);
    const started = Date.now();
    const refused = await chat();
    assert.equal(refused.status, 503);
    assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'parking_off');
    assert.ok(Date.now() - started < 1000, 'refused at once, not parked');
    await held.text();

    const reset = await follow(await ui.post('/ui/server/park_timeout_s/reset', {}));
    assert.match(reset, /park_timeout_s is back/);
    assert.match(rowOf(reset, 'park_timeout_s'), /<span class="tag src-file">config\.yaml<\/span>/);
    assert.equal(gw.gateway.settings.get('park_timeout_s'), undefined);
    const again = await chat(true);
    const parked = chat(); // parks behind the stream now
    await again.text();
    assert.equal((await parked).status, 200);
  });

  test('decimal comma, lists and JSON; log_level applies to the running logger', async () => {
    await follow(await ui.post('/ui/server/affinity_max_wait_s', { value: '2,5' }));
    assert.equal(gw.gateway.config().affinity_max_wait_s, 2.5);
    await follow(await ui.post('/ui/server/cors_origins', { value: 'http://a.example\nhttp://b.example' }));
    assert.deepEqual(gw.gateway.config().cors_origins, ['http://a.example', 'http://b.example']);
    await follow(await ui.post('/ui/server/gpu_groups', { value: '{"gpu1": {"max_concurrent": 2}}' }));
    assert.equal(gw.gateway.config().gpu_groups.gpu1?.max_concurrent, 2);
    await follow(await ui.post('/ui/server/log_level', { value: 'error' }));
    assert.equal(gw.app.log.level, 'error');
    await follow(await ui.post('/ui/server/expose_backend_names', { value: 'false' }));
    assert.equal(gw.gateway.config().expose_backend_names, false, 'a choice of auto / true / false posts the boolean');
    const reset = ['affinity_max_wait_s', 'cors_origins', 'gpu_groups', 'log_level', 'expose_backend_names'];
    for (const key of reset) await follow(await ui.post(`/ui/server/${key}/reset`, {}));
    assert.equal(gw.app.log.level, gw.gateway.config().log_level);
    assert.deepEqual(gw.gateway.config().cors_origins, []);
  });

  test('a value shaped like markup renders as text', async () => {
    await follow(await ui.post('/ui/server/cors_origins', { value: '<script>alert(1)</script>' }));
    const html = await ui.html('/ui/server');
    assert.ok(!html.includes('<script>alert(1)</script>'));
    assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
    await follow(await ui.post('/ui/server/cors_origins/reset', {}));
  });
});

describe('server tab: refused values', () => {
  test('inline at the setting, what was typed kept, nothing stored', async () => {
    for (const [key, value, message] of [
      ['park_timeout_s', '-1', /must be &gt;= 0/],
      ['max_parked', 'lots', /must be an integer/],
      ['max_parked', '1,5', /must be an integer, got number 1\.5/],
      ['log_level', 'loud', /must be one of/],
      ['gpu_groups', '{"gpu1": {"max_concurrent": 0}}', /gpu1\.max_concurrent: must be &gt;= 1/],
      ['gpu_groups', '{"gpu1": ', /not valid JSON/],
    ] as const) {
      const res = await ui.post(`/ui/server/${key}`, { value });
      assert.equal(res.status, 400, `${key} = ${value}`);
      const html = await res.text();
      const row = rowOf(html, key);
      assert.match(row, new RegExp(`<p class="error" id="v-${key}-error">`), key);
      assert.match(row, message, `${key} = ${value}`);
      assert.match(row, /aria-invalid="true"/);
      assert.match(html, /Nothing was saved/);
      if (key !== 'log_level' && !value.startsWith('{'))
        assert.match(row, new RegExp(`value="${value}"`), 'the typed value is kept');
      assert.equal(gw.gateway.settings.get(key), undefined, `${key}: nothing stored`);
    }
    assert.equal(gw.gateway.config().park_timeout_s, 30);
    assert.equal((await ui.post('/ui/server/store_dir', { value: '/tmp/x' })).status, 400);
    assert.equal((await ui.post('/ui/server/no_such_key', { value: '1' })).status, 404);
  });
});

describe('server tab: settings other tabs own', () => {
  test('set or reset of one is refused with 409 and a link to its tab; nothing stored', async () => {
    gw.gateway.admin.setSetting('alias_park', { fast: 5 });
    for (const [key, value, tab, path] of [
      ['virtual_models', '{"sneaky": "m"}', 'Aliases &amp; routing', '/ui/aliases'],
      ['alias_park', '{"fast": 1}', 'Aliases &amp; routing', '/ui/aliases'],
      ['alias_defaults', '{}', 'Aliases &amp; routing', '/ui/aliases'],
      ['reasoning_rules', '[]', 'Reasoning', '/ui/reasoning'],
      ['image_models', '{}', 'Mapping', '/ui/mapping'],
    ] as const) {
      const before = gw.gateway.settings.get(key);
      for (const [route, body] of [
        [`/ui/server/${key}`, { value }],
        [`/ui/server/${key}/reset`, {}],
      ] as const) {
        const res = await ui.post(route, body);
        assert.equal(res.status, 409, route);
        const html = await res.text();
        assert.match(html, /Nothing was saved/, route);
        assert.match(html, new RegExp(`<code>${key}</code> is changed on the <a href="${path}">${tab}</a> tab`), route);
        assert.deepEqual(gw.gateway.settings.get(key), before, `${route}: nothing stored`);
      }
    }
    assert.equal(Object.hasOwn(gw.gateway.config().virtual_models, 'sneaky'), false);
    assert.deepEqual(gw.gateway.config().alias_park, { fast: 5 }, 'not reset from here');
    gw.gateway.admin.resetSetting('alias_park');
  });
});

describe('server tab: CSRF and reload problems', () => {
  test('set and reset without their token or with a wrong one: 403, nothing changed', async () => {
    await ui.html('/ui/server');
    await follow(await ui.post('/ui/server/max_parked', { value: '7' }));
    for (const csrf of ['', 'forged-token']) {
      assert.equal((await ui.post('/ui/server/max_parked', { value: '1' }, { csrf })).status, 403);
      assert.equal((await ui.post('/ui/server/max_parked/reset', {}, { csrf })).status, 403);
    }
    assert.equal(gw.gateway.settings.get('max_parked'), 7);
    await follow(await ui.post('/ui/server/max_parked/reset', {}));
    assert.equal(gw.gateway.settings.get('max_parked'), undefined);
  });

  test('a rejected config.yaml reload is shown with its problems (escaped)', async () => {
    assert.doesNotMatch(await ui.html('/ui/server'), /was not reloaded/);
    gw.gateway.rejectReload([{ path: 'backends[0].url', message: 'is not a URL: "<b>x</b>"' }]);
    const html = await ui.html('/ui/server');
    assert.match(html, /config\.yaml was not reloaded/);
    assert.match(html, /<strong>backends\[0\]\.url<\/strong>: is not a URL: &quot;&lt;b&gt;x&lt;\/b&gt;&quot;/);
    gw.gateway.rejectReload([]);
  });
});
