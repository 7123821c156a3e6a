/**
 * The dedupe: a flapping backend, over sockets, costs one down alert within the interval, and
 * when the interval ends the last state is told if it differs from the last one sent (the rule
 * itself, on given times: the same event for the same subject once per interval, other
 * subjects and events apart, 0 = every time).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { AlertDedupe } from '../src/alerts/dedupe.ts';
import type { AlertEvent } from '../src/alerts/events.ts';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { bodyOf, startAlertSink, type AlertSink } from './helpers/alert-sink.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

describe('a flapping backend over sockets', () => {
  let sink: AlertSink;
  let box: FakeBackend;
  let gw: TestGateway;
  before(async () => {
    sink = await startAlertSink();
    box = await startFake('vllm', { models: ['m'] });
    gw = await startGateway([{ name: 'box', url: box.url }], {
      health_check_interval: 300,
      alerts: [
        { url: `${sink.url}/long`, format: 'json', min_interval_s: 300, events: ['backend_down', 'backend_up'] },
        { url: `${sink.url}/short`, format: 'json', min_interval_s: 1, events: ['backend_down', 'backend_up'] },
      ],
    });
  });
  after(async () => {
    await gw.close();
    await box.close();
    await sink.close();
  });

  const flip = async (refuse: boolean) => {
    box.setKnobs({ refuse });
    await gw.gateway.discovery.pollAll();
  };
  const events = (path: string) => sink.received.filter((r) => r.path === path).map((r) => String(bodyOf(r).event));

  test('down, up, down, up, down within the interval: one down and one up at once, then the last state', async () => {
    for (const refuse of [true, false, true, false, true]) await flip(refuse);
    await sink.waitFor(2, '/long');
    await sink.waitFor(2, '/short');
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(events('/long'), ['backend_down', 'backend_up'], 'five changes, two alerts');
    // the short interval ends: the backend is down, and the last word sent was "up"
    const short = await sink.waitFor(3, '/short', 5000);
    assert.deepEqual(
      short.map((r) => bodyOf(r).event),
      ['backend_down', 'backend_up', 'backend_down'],
    );
    assert.match(String(bodyOf(short[2]).detail), /changed more than once in the interval/);
    assert.deepEqual(events('/long'), ['backend_down', 'backend_up'], 'the long interval has not ended');
  });
});

describe('the dedupe rule', () => {
  const ev = (event: AlertEvent['event'], subject: Partial<AlertEvent> = { backend: 'b' }): AlertEvent => ({
    event,
    ...subject,
    detail: event,
    at: 0,
  });

  test('the same event for the same subject: once per interval, again after it', () => {
    const d = new AlertDedupe(10_000);
    assert.equal(d.offer(ev('quota_reached', { user: 'ann' }), 0), true);
    assert.equal(d.offer(ev('quota_reached', { user: 'ann' }), 9_999), false);
    assert.equal(d.offer(ev('quota_reached', { user: 'bob' }), 9_999), true, 'another subject');
    assert.equal(d.offer(ev('credential_rejected', { backend: 'ann' }), 9_999), true, 'another event');
    assert.equal(d.offer(ev('quota_reached', { user: 'ann' }), 10_000), true, 'the interval is over');
    assert.equal(d.nextDueAt(), undefined, 'nothing but up/down is held for later');
  });

  test('job_failed is per alias, whatever the backend', () => {
    const d = new AlertDedupe(10_000);
    assert.equal(d.offer(ev('job_failed', { alias: 'sdxl', backend: 'c1' }), 0), true);
    assert.equal(d.offer(ev('job_failed', { alias: 'sdxl', backend: 'c2' }), 1), false);
    assert.equal(d.offer(ev('job_failed', { alias: 'flux', backend: 'c1' }), 2), true);
  });

  test('a held-back up/down is sent when the interval ends only if it differs from the last sent', () => {
    const d = new AlertDedupe(10_000);
    assert.equal(d.offer(ev('backend_down'), 0), true);
    assert.equal(d.offer(ev('backend_up'), 1_000), true);
    assert.equal(d.offer(ev('backend_down'), 2_000), false);
    assert.equal(d.nextDueAt(), 10_000, 'due when the first down interval ends');
    assert.deepEqual(d.due(9_999), []);
    assert.deepEqual(
      d.due(10_000).map((e) => e.event),
      ['backend_down'],
    );
    assert.equal(d.nextDueAt(), undefined);

    const calm = new AlertDedupe(10_000);
    calm.offer(ev('backend_down'), 0);
    calm.offer(ev('backend_up'), 1_000);
    calm.offer(ev('backend_down'), 2_000);
    calm.offer(ev('backend_up'), 3_000);
    assert.deepEqual(calm.due(20_000), [], 'it ended up, as last told');
  });

  test('min_interval_s 0: every event goes', () => {
    const d = new AlertDedupe(0);
    for (let i = 0; i < 3; i++) assert.equal(d.offer(ev('backend_down'), i), true);
  });
});
