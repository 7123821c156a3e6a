/**
 * Alerts raised by what really happens, over sockets: a gateway with one JSON alert target on
 * a local sink. Its start; the public emit a key pool calls; a fake backend going away and
 * coming back (down, then up, with the error kind; the first discovery is no transition); a
 * backend refusing the gateway's key; a user's day quota refusing a call, naming the user; the
 * paid budget spent by a paid call.
 */
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { after, before, describe, test } from 'node:test';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { bodyOf, startAlertSink, type AlertSink } from './helpers/alert-sink.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

const MASTER = 'alerts-events-master-key-0123456789';
const MODEL = 'acme/chat-large';

let sink: AlertSink;
let box: FakeBackend;
let locked: FakeBackend;
let cloud: FakeBackend;
let gw: TestGateway;

before(async () => {
  sink = await startAlertSink();
  box = await startFake('vllm', { models: ['m'] });
  locked = await startFake('vllm', { models: ['k'], apiKey: 'the-right-key' });
  cloud = await startFake('openrouter', { models: [MODEL] });
  gw = await startGateway(
    [
      { name: 'box', url: box.url },
      { name: 'locked', url: locked.url, api_key: 'a-wrong-key' },
      { name: 'cloud', url: cloud.url, paid: true },
    ],
    {
      api_key: MASTER,
      paid_budget_usd_month: 0.000001,
      alerts: [{ url: `${sink.url}/hook`, format: 'json', min_interval_s: 300 }],
    },
  );
});
after(async () => {
  await gw.close();
  await Promise.all([box.close(), locked.close(), cloud.close(), sink.close()]);
});

/** The JSON alerts received so far for `event`. */
const alertsOf = (event: string) => sink.received.map(bodyOf).filter((b) => b.event === event);

async function waitForEvent(event: string, n = 1): Promise<Record<string, unknown>[]> {
  await sink.waitFor(1);
  const start = Date.now();
  while (alertsOf(event).length < n) {
    if (Date.now() - start > 5000) assert.fail(`no ${event} alert; got ${sink.received.map((r) => r.body).join('\n')}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return alertsOf(event);
}

const chat = (model: string, key = MASTER) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello there' }] }),
  });

describe('alerts from real events', () => {
  test('gateway_started: one alert, in the json shape', async () => {
    const [started] = await waitForEvent('gateway_started');
    assert.equal(typeof started.at, 'string');
    assert.ok(Math.abs(Date.parse(String(started.at)) - Date.now()) < 60_000, 'at is an ISO time of now');
    assert.deepEqual(started, {
      event: 'gateway_started',
      detail: 'started with 3 backends (test)',
      at: started.at,
      gateway: hostname(),
    });
    const req = sink.received.find((r) => bodyOf(r).event === 'gateway_started')!;
    assert.equal(req.method, 'POST');
    assert.equal(req.path, '/hook');
    assert.equal(req.headers['content-type'], 'application/json');
  });

  test('the first discovery is no transition: no backend_down or backend_up for it', async () => {
    // the first verdict on `locked` (down: its key is refused) raised credential_rejected, and nothing else
    await waitForEvent('credential_rejected');
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(alertsOf('backend_down'), []);
    assert.deepEqual(alertsOf('backend_up'), []);
  });

  test('credential_rejected: a backend answering 401 to the gateway names the backend and the status', async () => {
    const [rejected] = await waitForEvent('credential_rejected');
    assert.equal(rejected.backend, 'locked');
    assert.equal(rejected.kind, 'auth');
    assert.equal(rejected.detail, 'locked refused the credential (HTTP 401)');
    assert.doesNotMatch(JSON.stringify(sink.received.map((r) => r.body)), /a-wrong-key/);
  });

  test('emit, as a key pool raises it: credential_rejected per key, each key once per interval', async () => {
    const raise = (key: string) =>
      gw.gateway.alerts.emit('credential_rejected', {
        backend: 'cloud',
        key,
        kind: 'auth',
        detail: `key ${key} got 401`,
      });
    raise('…a1b2');
    raise('…a1b2');
    raise('…c3d4');
    const start = Date.now();
    while (alertsOf('credential_rejected').filter((a) => a.backend === 'cloud').length < 2) {
      if (Date.now() - start > 5000) assert.fail('no credential_rejected for the pool keys');
      await new Promise((r) => setTimeout(r, 10));
    }
    await new Promise((r) => setTimeout(r, 50));
    const pool = alertsOf('credential_rejected').filter((a) => a.backend === 'cloud');
    assert.deepEqual(
      pool.map((a) => [a.key, a.kind, a.detail]),
      [
        ['…a1b2', 'auth', 'key …a1b2 got 401'],
        ['…c3d4', 'auth', 'key …c3d4 got 401'],
      ],
    );
  });

  test('backend_down then backend_up, with the error kind, as the fake goes away and comes back', async () => {
    box.setKnobs({ refuse: true });
    await gw.gateway.discovery.pollAll();
    const [down] = await waitForEvent('backend_down');
    assert.equal(down.backend, 'box');
    assert.equal(down.kind, 'unreachable');
    assert.equal(typeof down.detail, 'string');

    box.setKnobs({ refuse: false });
    await gw.gateway.discovery.pollAll();
    const [up] = await waitForEvent('backend_up');
    assert.deepEqual(
      { backend: up.backend, kind: up.kind, detail: up.detail },
      { backend: 'box', kind: 'unreachable', detail: 'box answers again (it was down: unreachable)' },
    );
    assert.equal(alertsOf('backend_down').length, 1);
  });

  test('quota_reached names the user whose day quota refused a call (429)', async () => {
    const { key } = gw.gateway.users.create({ name: 'ann', quota_req_day: 1 });
    assert.equal((await chat('box/m', key)).status, 200);
    const refused = await chat('box/m', key);
    assert.equal(refused.status, 429);
    const [quota] = await waitForEvent('quota_reached');
    assert.equal(quota.user, 'ann');
    assert.equal(quota.detail, 'ann reached its daily request quota: calls are refused (429)');
    assert.equal((await chat('box/m', key)).status, 429);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(alertsOf('quota_reached').length, 1, 'the same user again within min_interval_s: no second alert');
  });

  test('paid_budget_reached once a paid call spent the month budget', async () => {
    assert.deepEqual(alertsOf('paid_budget_reached'), []);
    assert.equal((await chat(`cloud/${MODEL}`)).status, 200);
    const [spent] = await waitForEvent('paid_budget_reached');
    assert.match(String(spent.detail), /^\$[\d.]+ of \$0\.000001 spent in \d{4}-\d\d: paid backends are not used$/);
    assert.equal((await chat(`cloud/${MODEL}`)).status, 429, 'the next paid-only call is refused');
  });
});
