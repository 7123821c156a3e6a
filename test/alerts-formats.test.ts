/**
 * Each alert format's exact POST, as a local sink receives it from a real gateway: json, ntfy
 * (text body, Title/Tags/Priority headers), discord ({content} with no mentions parsed) and
 * slack ({text}, `&<>` escaped), for the gateway's start and a backend going down; a target
 * that names its events gets only those.
 */
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { after, before, describe, test } from 'node:test';
import { renderAlert } from '../src/alerts/format.ts';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { bodyOf, startAlertSink, type AlertSink, type SinkRequest } from './helpers/alert-sink.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

const HOST = hostname();
const STARTED = 'started with 1 backend (test)';

let sink: AlertSink;
let box: FakeBackend;
let gw: TestGateway;

before(async () => {
  sink = await startAlertSink();
  box = await startFake('vllm', { models: ['m'] });
  gw = await startGateway([{ name: 'box', url: box.url }], {
    alerts: [
      { url: `${sink.url}/json`, format: 'json', min_interval_s: 300 },
      { url: `${sink.url}/ntfy/topic`, format: 'ntfy', min_interval_s: 300 },
      { url: `${sink.url}/discord/hook`, format: 'discord', min_interval_s: 300 },
      { url: `${sink.url}/slack/hook`, format: 'slack', min_interval_s: 300 },
      { url: `${sink.url}/only-down`, format: 'json', min_interval_s: 300, events: ['backend_down'] },
    ],
  });
  await sink.waitFor(4);
});
after(async () => {
  await gw.close();
  await box.close();
  await sink.close();
});

const on = (path: string): SinkRequest[] => sink.received.filter((r) => r.path === path);

describe('alert formats on the wire', () => {
  test('json: {event, detail, at, gateway}, application/json', () => {
    const [r] = on('/json');
    assert.equal(r.method, 'POST');
    assert.equal(r.headers['content-type'], 'application/json');
    assert.equal(r.headers['user-agent'], 'llm-gateway-alerts');
    const body = bodyOf(r);
    assert.deepEqual(body, { event: 'gateway_started', detail: STARTED, at: body.at, gateway: HOST });
    assert.match(String(body.at), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  test('ntfy: the detail as text, Title, Tags and Priority headers', () => {
    const [r] = on('/ntfy/topic');
    assert.equal(r.body, STARTED);
    assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(r.headers.title, `Gateway started (${HOST})`);
    assert.equal(r.headers.tags, 'rocket');
    assert.equal(r.headers.priority, '2');
  });

  test('discord: {content} in bold title + detail, no mention parsed', () => {
    const [r] = on('/discord/hook');
    assert.equal(r.headers['content-type'], 'application/json');
    assert.deepEqual(bodyOf(r), {
      content: `**Gateway started (${HOST})**\n${STARTED}`,
      allowed_mentions: { parse: [] },
    });
  });

  test('slack: {text} with the title in bold', () => {
    const [r] = on('/slack/hook');
    assert.equal(r.headers['content-type'], 'application/json');
    assert.deepEqual(bodyOf(r), { text: `*Gateway started (${HOST})*\n${STARTED}` });
  });

  test('a target naming its events gets only those; backend_down reaches every format', async () => {
    assert.deepEqual(on('/only-down'), [], 'gateway_started is not among its events');
    box.setKnobs({ refuse: true });
    await gw.gateway.discovery.pollAll();
    const [down] = await sink.waitFor(1, '/only-down');
    assert.equal(bodyOf(down).event, 'backend_down');
    const [, ntfy] = await sink.waitFor(2, '/ntfy/topic');
    assert.equal(ntfy.headers.title, `Backend box is down (unreachable) (${HOST})`);
    assert.equal(ntfy.headers.tags, 'warning');
    assert.equal(ntfy.headers.priority, '4');
    assert.equal(ntfy.body, bodyOf(down).detail);
    const [, discord] = await sink.waitFor(2, '/discord/hook');
    assert.match(String(bodyOf(discord).content), /^\*\*Backend box is down \(unreachable\) \(.+\)\*\*\n/);
    box.setKnobs({ refuse: false });
  });
});

describe('rendering what the gateway cannot be made to say over HTTP', () => {
  const at = Date.UTC(2026, 0, 2, 3, 4, 5);
  test('slack escapes &, < and >; discord keeps them (no mention is parsed anyway)', () => {
    const e = { event: 'quota_reached' as const, user: 'a<b>&c', detail: 'x <@everyone> & y', at };
    assert.deepEqual(JSON.parse(renderAlert(e, 'slack', 'gw').body), {
      text: '*User a&lt;b&gt;&amp;c reached a quota (gw)*\nx &lt;@everyone&gt; &amp; y',
    });
    assert.equal(
      JSON.parse(renderAlert(e, 'discord', 'gw').body).content,
      '**User a<b>&c reached a quota (gw)**\nx <@everyone> & y',
    );
  });

  test('ntfy headers carry printable ASCII only; the body keeps the text as it is', () => {
    const e = { event: 'quota_reached' as const, user: 'zoë', detail: 'zoë reached it', at };
    const post = renderAlert(e, 'ntfy', 'gw');
    assert.equal(post.headers.title, 'User zo? reached a quota (gw)');
    assert.equal(post.body, 'zoë reached it');
  });

  test('json carries the subject fields that are set, the kind, and the time in ISO 8601', () => {
    const e = { event: 'job_failed' as const, alias: 'sdxl', backend: 'comfy1', detail: 'boom', at };
    assert.deepEqual(JSON.parse(renderAlert(e, 'json', 'gw').body), {
      event: 'job_failed',
      backend: 'comfy1',
      alias: 'sdxl',
      detail: 'boom',
      at: '2026-01-02T03:04:05.000Z',
      gateway: 'gw',
    });
  });
});
