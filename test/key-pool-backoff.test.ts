/**
 * A sole key that gets a 429 rests its backend for the Retry-After: no request reaches it before
 * then (a call made meanwhile is refused like one for a down backend, with the time left as its
 * Retry-After), and it serves again once the time is up. And what the owner sees:
 * /health (admin) shows each pooled key masked with its state, and neither the /health body nor
 * the log carries a key in clear, even when the upstream echoes it in a refusal.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { Writable } from 'node:stream';
import { startKeyedBackend } from './fakes/keyed-backend.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const SOLE = 'sk-sole-dddddddddddddddd4444';
const A = 'sk-pool-aaaaaaaaaaaaaaaa1111';
const B = 'sk-pool-bbbbbbbbbbbbbbbb2222';

const open: { close(): Promise<void> }[] = [];
after(async () => {
  for (const thing of open.reverse()) await thing.close();
});

async function chat(gw: TestGateway, model: string) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: res.status, text: await res.text(), retryAfter: res.headers.get('retry-after') };
}

test('a sole key answered 429 with Retry-After: 1 is not asked again before that second, then used again', async () => {
  const fake = await startKeyedBackend('m', { [SOLE]: { status: 429, retryAfter: '1' } });
  open.push(fake);
  const gw = await startGateway([{ name: 'solo', url: fake.url, api_key: SOLE }], { park_timeout_s: 10 });
  open.push(gw);
  const first = await chat(gw, 'solo/m');
  assert.equal(first.status, 429, 'the upstream 429 reaches the client as it was');
  assert.equal(first.retryAfter, '1');
  const resting = gw.gateway.registry.get('solo')!.resting;
  assert.equal(resting?.reason, 429);
  fake.behaviour.set(SOLE, 'ok');
  // made while the key rests: refused at once, saying how long the rest has left
  const refused = await chat(gw, 'solo/m');
  assert.equal(refused.status, 503, refused.text);
  assert.equal(JSON.parse(refused.text).error.candidates[0].reason, 'keys_muted');
  assert.equal(refused.retryAfter, '1');
  assert.equal(fake.count(SOLE), 1, 'no request before the Retry-After');
  await waitFor(() => gw.gateway.registry.get('solo')!.resting === undefined, 'the rest ends', 3000);
  const third = await chat(gw, 'solo/m');
  assert.equal(third.status, 200, third.text);
  const [at429, atOk] = fake.calls.get(SOLE)!;
  assert.equal(fake.count(SOLE), 2);
  assert.ok(atOk - at429 >= 950, `the second request came ${atOk - at429} ms after the 429`);
  assert.equal(gw.gateway.registry.get('solo')!.resting, undefined, 'the rest is over');
});

test('a sole key without Retry-After backs off a few seconds; /health shows the rest', async () => {
  const fake = await startKeyedBackend('m', { [SOLE]: { status: 429 } });
  open.push(fake);
  const gw = await startGateway([{ name: 'solo', url: fake.url, api_key: SOLE }], { park_timeout_s: 0 });
  open.push(gw);
  assert.equal((await chat(gw, 'solo/m')).status, 429);
  const refused = await chat(gw, 'solo/m');
  assert.equal(refused.status, 503, refused.text);
  assert.equal(JSON.parse(refused.text).error.candidates[0].reason, 'keys_muted');
  assert.equal(fake.count(SOLE), 1, 'not asked again while backing off');
  const health = JSON.parse(await (await fetch(`${gw.url}/health`)).text());
  const rest = health.backends.solo.resting;
  assert.equal(rest.reason, 429);
  assert.ok(rest.seconds_left >= 1 && rest.seconds_left <= 2, JSON.stringify(rest));
  assert.equal(health.backends.solo.keys, undefined, 'a sole key has no pool to show');
});

test('/health (admin) shows each key masked with its state; no key in clear in /health or the log', async () => {
  const fake = await startKeyedBackend('m', { [A]: { status: 401 }, [B]: { status: 429, retryAfter: '40' } });
  open.push(fake);
  let log = '';
  const logStream = new Writable({
    write(chunk, _enc, done) {
      log += String(chunk);
      done();
    },
  });
  const gw = await startGateway(
    [{ name: 'pool', url: fake.url, api_keys: [A, B], paid: true }],
    { park_timeout_s: 0, log_level: 'debug' },
    { logStream },
  );
  open.push(gw);
  const res = await chat(gw, 'pool/m');
  assert.equal(res.status, 429, res.text);
  await chat(gw, 'pool/m');
  const body = await (await fetch(`${gw.url}/health`)).text();
  const health = JSON.parse(body);
  const [a, b] = health.backends.pool.keys;
  assert.deepEqual(
    { hint: a.hint, state: a.state, reason: a.reason, uses: a.uses, rejected: a.rejected },
    { hint: '#1 sk-…1111', state: 'muted', reason: 401, uses: 1, rejected: 1 },
  );
  assert.ok(a.seconds_left > 500 && typeof a.muted_until === 'string');
  assert.deepEqual(
    { hint: b.hint, state: b.state, reason: b.reason, rate_limited: b.rate_limited },
    { hint: '#2 sk-…2222', state: 'muted', reason: 429, rate_limited: 1 },
  );
  assert.ok(b.seconds_left > 30 && b.seconds_left <= 40, JSON.stringify(b));
  assert.equal(health.backends.pool.resting.reason, 429);
  assert.ok(log.includes('upstream attempt failed'), 'the log did speak of the refusals');
  for (const key of [A, B]) {
    assert.ok(!body.includes(key), 'no key in the /health body');
    assert.ok(!body.includes(key.slice(5)), 'not even most of one');
    assert.ok(!log.includes(key), 'no key in the log');
  }
});
