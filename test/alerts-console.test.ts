/**
 * The alert targets in the console and the admin API, over sockets: the Server tab lists each
 * target masked (origin and the start of the path; no userinfo, no query) with its format and
 * events; its "send test alert" button POSTs with the CSRF token (403 without, 401 logged out)
 * and answers the page with the send's outcome; `POST /admin/api/alerts/test` does the same for
 * admins, with OpenAI-shaped errors for a bad or unknown index. The settings view masks the
 * URLs too, and the store cannot take `alerts` (config.yaml only).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { bodyOf, startAlertSink, type AlertSink } from './helpers/alert-sink.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { UiClient } from './helpers/ui.ts';

const MASTER = 'alerts-console-master-key-0123456789';
const admin = { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' };

let sink: AlertSink;
let box: FakeBackend;
let gw: TestGateway;
let ui: UiClient;
let port: string;

before(async () => {
  sink = await startAlertSink();
  port = new URL(sink.url).port;
  box = await startFake('vllm', { models: ['m'] });
  gw = await startGateway([{ name: 'box', url: box.url }], {
    api_key: MASTER,
    alerts: [
      { url: `http://me:hunter2@127.0.0.1:${port}/topic-secret-name?auth=tok`, format: 'ntfy', min_interval_s: 300 },
      { url: `http://127.0.0.1:${port}/j`, format: 'json', min_interval_s: 60, events: ['backend_down', 'job_failed'] },
      { url: 'http://127.0.0.1:9/nobody-listens', format: 'slack', min_interval_s: 300, events: ['backend_up'] },
    ],
  });
  await sink.waitFor(1);
  ui = await UiClient.login(gw, MASTER);
});
after(async () => {
  await gw.close();
  await box.close();
  await sink.close();
});

/** The alerts section of the server page. */
async function section(html?: string): Promise<string> {
  const page = html ?? (await ui.html('/ui/server'));
  const start = page.indexOf('id="alerts"');
  assert.ok(start >= 0, 'the server tab has an alerts section');
  return page.slice(start, page.indexOf('</section>', start));
}

describe('alerts on the server tab', () => {
  test('every target, masked, with its format, events and dedupe; no secret on the page', async () => {
    const page = await ui.html('/ui/server');
    const s = await section(page);
    assert.match(s, new RegExp(`http://127\\.0\\.0\\.1:${port}/topic-s…`));
    assert.match(s, new RegExp(`http://127\\.0\\.0\\.1:${port}/…<`));
    assert.match(s, /http:\/\/127\.0\.0\.1:9\/nobody…/);
    assert.match(s, /backend_down, job_failed/);
    assert.match(s, /all events/);
    assert.match(s, /once per 60 s per subject/);
    assert.equal((s.match(/Send test alert/g) ?? []).length, 3);
    for (const secret of ['hunter2', 'topic-secret-name', 'auth=tok', 'nobody-listens'])
      assert.ok(!page.includes(secret), `${secret} is on the page`);
    assert.ok(!/id="s-alerts"/.test(page), 'no settings row (and no JSON box) for alerts');
  });

  test('send test alert: the POST with the CSRF token sends one test alert and answers its outcome', async () => {
    const before = sink.received.length;
    const res = await ui.post('/ui/server/alerts/1/test', {});
    assert.equal(res.status, 200);
    const s = await section(await res.text());
    assert.match(s, /role="status">Test delivered \(HTTP 200\)/);
    const [r] = (await sink.waitFor(before + 1)).slice(before);
    assert.equal(r.path, '/j');
    assert.equal(bodyOf(r).event, 'test', 'sent even though the target does not list it');
  });

  test('a target that does not answer: the outcome says it failed', async () => {
    const res = await ui.post('/ui/server/alerts/2/test', {});
    assert.equal(res.status, 200);
    assert.match(await section(await res.text()), /role="status">Test failed: ECONNREFUSED/);
  });

  test('without the token: 403 and nothing sent; logged out: 401; an unknown target: 404; no storing', async () => {
    const before = sink.received.length;
    assert.equal((await ui.post('/ui/server/alerts/0/test', {}, { csrf: '' })).status, 403);
    assert.equal((await ui.post('/ui/server/alerts/0/test', {}, { csrf: 'forged' })).status, 403);
    const stranger = new UiClient(gw.url);
    await stranger.get('/ui/login');
    assert.equal((await stranger.post('/ui/server/alerts/0/test', {})).status, 401);
    assert.equal((await ui.post('/ui/server/alerts/7/test', {})).status, 404);
    assert.equal((await ui.post('/ui/server/alerts/x/test', {})).status, 404);
    const stored = await ui.post('/ui/server/alerts', { value: '[]' });
    assert.equal(stored.status, 400, 'the settings form cannot store alerts');
    assert.match(await stored.text(), /only config\.yaml sets this/);
    assert.equal(gw.gateway.config().alerts.length, 3);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(sink.received.length, before);
  });
});

describe('alerts in the admin API', () => {
  test('GET /admin/api/alerts: the targets masked, the last send of each', async () => {
    const res = await fetch(`${gw.url}/admin/api/alerts`, { headers: admin });
    assert.equal(res.status, 200);
    const { data } = (await res.json()) as { data: Record<string, unknown>[] };
    assert.deepEqual(
      data.map((t) => [t.index, t.url, t.format, t.events, t.min_interval_s]),
      [
        [0, `http://127.0.0.1:${port}/topic-s…`, 'ntfy', 'all', 300],
        [1, `http://127.0.0.1:${port}/…`, 'json', ['backend_down', 'job_failed'], 60],
        [2, 'http://127.0.0.1:9/nobody…', 'slack', ['backend_up'], 300],
      ],
    );
    assert.equal((data[0].last as { event: string }).event, 'gateway_started');
  });

  test('POST /admin/api/alerts/test: one target by index, with Basic credentials from its userinfo', async () => {
    const before = sink.received.length;
    const res = await fetch(`${gw.url}/admin/api/alerts/test`, { method: 'POST', headers: admin, body: '{"index":0}' });
    assert.equal(res.status, 200);
    const { data } = (await res.json()) as { data: { ok: boolean; status: number; target: { index: number } }[] };
    assert.deepEqual(
      data.map((d) => [d.target.index, d.ok, d.status]),
      [[0, true, 200]],
    );
    const r = sink.received[before];
    assert.equal(r.path, '/topic-secret-name?auth=tok');
    assert.equal(r.headers.authorization, `Basic ${Buffer.from('me:hunter2').toString('base64')}`);
    assert.equal(r.headers.title?.toString().startsWith('Test alert'), true);
  });

  test('no body: every target; bad input is a 400, an unknown index a 404, no key a 401', async () => {
    const all = await fetch(`${gw.url}/admin/api/alerts/test`, {
      method: 'POST',
      headers: { authorization: admin.authorization },
    });
    assert.equal(all.status, 200);
    const { data } = (await all.json()) as { data: { ok: boolean }[] };
    assert.deepEqual(
      data.map((d) => d.ok),
      [true, true, false],
    );
    const post = (body: string, headers: Record<string, string> = admin) =>
      fetch(`${gw.url}/admin/api/alerts/test`, { method: 'POST', headers, body });
    for (const [body, status, param] of [
      ['{"index":-1}', 400, 'index'],
      ['{"index":"0"}', 400, 'index'],
      ['{"other":1}', 400, 'other'],
      ['[1]', 400, null],
      ['{"index":3}', 404, 'index'],
    ] as const) {
      const res = await post(body);
      assert.equal(res.status, status, body);
      const { error } = (await res.json()) as { error: Record<string, unknown> };
      assert.equal(typeof error.message, 'string');
      assert.equal(error.param, param, body);
      assert.ok('type' in error && 'code' in error);
    }
    assert.equal((await post('{}', { 'content-type': 'application/json' })).status, 401);
  });

  test('the settings view masks alert URLs; the store cannot take alerts', async () => {
    const res = await fetch(`${gw.url}/admin/api/settings`, { headers: admin });
    const text = await res.text();
    assert.equal(res.status, 200, text.slice(0, 200));
    for (const secret of ['hunter2', 'topic-secret-name', 'auth=tok']) assert.ok(!text.includes(secret), secret);
    const put = await fetch(`${gw.url}/admin/api/settings/alerts`, {
      method: 'PUT',
      headers: admin,
      body: JSON.stringify({ value: [{ url: 'http://127.0.0.1:1/x' }] }),
    });
    assert.ok(put.status >= 400 && put.status < 500, `storing alerts answered ${put.status}`);
    assert.equal(gw.gateway.config().alerts.length, 3);
  });
});
