/**
 * `alerts` in config.yaml: defaults filled in, every mistake a problem naming its key path (a
 * URL's secret never quoted), and hot: a reload that adds a target sends the next event there.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { validateConfig } from '../src/config/schema.ts';
import { startFake } from './fakes/index.ts';
import { bodyOf, startAlertSink } from './helpers/alert-sink.ts';
import { startGateway } from './helpers/gateway.ts';

describe('alerts: the config', () => {
  test('defaults: format json, min_interval_s 300, every event; none configured = []', () => {
    const r = validateConfig({ alerts: [{ url: 'https://ntfy.sh/topic' }] });
    assert.ok(r.ok);
    assert.deepEqual(r.config.alerts, [{ url: 'https://ntfy.sh/topic', format: 'json', min_interval_s: 300 }]);
    const none = validateConfig({});
    assert.ok(none.ok);
    assert.deepEqual(none.config.alerts, []);
  });

  test('each mistake is a problem at its key path; a URL is never quoted back', () => {
    const r = validateConfig({
      alerts: [
        { url: 'ftp://host/secret-token-1' },
        { url: 'https://x.example/a', events: ['backend_down', 'nope'] },
        { url: 'https://x.example/b', format: 'xml' },
        { url: 'https://x.example/c', min_interval_s: -1 },
        { events: ['backend_up'] },
        { url: 'https://x.example/d', colour: 'red' },
        { url: 'not a url secret-token-2' },
        { url: 'https://x.example/e#secret-token-3' },
        { url: 'https://x.example/f', events: [] },
      ],
    });
    assert.ok(!r.ok);
    const byPath = new Map(r.problems.map((p) => [p.path, p.message]));
    assert.deepEqual(
      [...byPath.keys()].sort(),
      [
        'alerts[0].url',
        'alerts[1].events[1]',
        'alerts[2].format',
        'alerts[3].min_interval_s',
        'alerts[4].url',
        'alerts[5].colour',
        'alerts[6].url',
        'alerts[7].url',
        'alerts[8].events',
      ].sort(),
    );
    assert.match(byPath.get('alerts[0].url')!, /http:\/\/ or https:\/\//);
    assert.match(byPath.get('alerts[1].events[1]')!, /backend_down, backend_up, credential_rejected/);
    assert.match(byPath.get('alerts[2].format')!, /json, ntfy, discord, slack/);
    assert.match(byPath.get('alerts[7].url')!, /fragment/);
    assert.doesNotMatch(JSON.stringify(r.problems), /secret-token/);
  });
});

describe('alerts: hot', () => {
  test('a reload that adds a target: the next event goes there', async (t) => {
    const sink = await startAlertSink();
    const box = await startFake('vllm', { models: ['m'] });
    const gw = await startGateway([{ name: 'box', url: box.url }], {});
    t.after(async () => {
      await gw.close();
      await box.close();
      await sink.close();
    });
    gw.gateway.reload({
      ...gw.gateway.config(),
      alerts: [{ url: `${sink.url}/new`, format: 'json', min_interval_s: 300 }],
    });
    box.setKnobs({ refuse: true });
    await gw.gateway.discovery.pollAll();
    const [down] = await sink.waitFor(1, '/new');
    assert.equal(bodyOf(down).event, 'backend_down');
    gw.gateway.reload({ ...gw.gateway.config(), alerts: [] });
    box.setKnobs({ refuse: false });
    await gw.gateway.discovery.pollAll();
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(sink.received.length, 1, 'the target is gone: backend_up goes nowhere');
  });
});
