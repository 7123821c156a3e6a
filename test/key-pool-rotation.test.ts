/**
 * A backend with `api_keys` over sockets: a key refused with 429 or 401 is muted and the call
 * moves to the next key of the same backend before any other candidate, with exactly one
 * upstream request per key; a 401 leaves the backend up while another key is usable; every key
 * muted sends the call to the next candidate, or refuses it saying why; a stream whose head is
 * out is never sent again with another key.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import OpenAI from 'openai';
import { startKeyedBackend } from './fakes/keyed-backend.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

const A = 'sk-pool-aaaaaaaaaaaaaaaa1111';
const B = 'sk-pool-bbbbbbbbbbbbbbbb2222';
const OTHER = 'sk-other-cccccccccccccc3333';

const open: { close(): Promise<void> }[] = [];
after(async () => {
  for (const thing of open.reverse()) await thing.close();
});

/** A pooled backend `pool` (keys A, B) and another candidate `other`, both serving `m` under the alias `pm`. */
async function rig(behaviour: Record<string, Parameters<typeof startKeyedBackend>[1][string]>, parkS = 0) {
  const pool = await startKeyedBackend('m', behaviour);
  const other = await startKeyedBackend('m', { [OTHER]: 'ok' });
  open.push(pool, other);
  const gw = await startGateway(
    [
      { name: 'pool', url: pool.url, api_keys: [A, B] },
      { name: 'other', url: other.url, api_key: OTHER, paid: true },
    ],
    { virtual_models: { pm: { pool: 'm', other: 'm' } }, park_timeout_s: parkS },
  );
  open.push(gw);
  return { pool, other, gw };
}

async function chat(gw: TestGateway, model = 'pm', stream = false) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: res.status, text: await res.text(), backend: res.headers.get('x-gateway-backend') };
}

function keyStates(gw: TestGateway) {
  return gw.gateway.registry.keyStates('pool')!;
}

test('429 with Retry-After on key A: the call succeeds on key B, one request per key, no other candidate', async () => {
  const { pool, other, gw } = await rig({ [A]: { status: 429, retryAfter: '120' }, [B]: 'ok' });
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  const answer = await client.chat.completions.create({ model: 'pm', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(answer.choices[0].message.content, 'hello from 22');
  assert.equal(pool.count(A), 1);
  assert.equal(pool.count(B), 1);
  assert.equal(other.total(), 0, 'the other candidate was never tried');
  const [a, b] = keyStates(gw);
  assert.equal(a.state, 'muted');
  assert.equal(a.reason, 429);
  assert.ok(a.seconds_left! > 100 && a.seconds_left! <= 120, `Retry-After honoured: ${a.seconds_left}`);
  assert.equal(b.state, 'ok');
  // the next call goes to B at once: A is not asked again while muted
  assert.equal((await chat(gw)).status, 200);
  assert.equal(pool.count(A), 1);
  assert.equal(pool.count(B), 2);
});

test('a 401 on one key mutes it for longer; the backend stays up and B serves', async () => {
  const { pool, other, gw } = await rig({ [A]: { status: 401 }, [B]: 'ok' });
  const rejected: unknown[] = [];
  gw.gateway.registry.onKeyRejected((e) => rejected.push(e));
  const res = await chat(gw);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.backend, 'pool');
  assert.equal(pool.count(A), 1);
  assert.equal(other.total(), 0);
  const state = gw.gateway.registry.get('pool')!;
  assert.equal(state.healthy, true, 'one refused key does not take the backend down');
  assert.equal(state.resting, undefined);
  const [a] = keyStates(gw);
  assert.equal(a.reason, 401);
  assert.ok(a.seconds_left! > 500, `muted for minutes, not seconds: ${a.seconds_left}`);
  assert.deepEqual(rejected, [{ backend: 'pool', key_hint: '#1 sk-…1111', status: 401 }]);
});

test('every key muted: the call goes to the next candidate, and the pool is not asked again', async () => {
  const { pool, other, gw } = await rig({ [A]: { status: 429, retryAfter: '60' }, [B]: { status: 429 } });
  const res = await chat(gw);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.backend, 'other');
  assert.equal(pool.count(A) + pool.count(B), 2, 'one request per key');
  assert.equal(other.total(), 1);
  assert.ok(gw.gateway.registry.get('pool')!.resting, 'the pool rests');
  assert.equal((await chat(gw)).backend, 'other');
  assert.equal(pool.total(), 2, 'a resting pool gets no request');
});

test('every key muted and nothing else serves: the 429 as it was, then a refusal that says why', async () => {
  const { pool, gw } = await rig({ [A]: { status: 429, retryAfter: '60' }, [B]: { status: 429, retryAfter: '30' } });
  const first = await chat(gw, 'pool/m');
  assert.equal(first.status, 429, first.text);
  assert.ok(!first.text.includes(A) && !first.text.includes(B), 'the keys the upstream echoed are redacted');
  const second = await chat(gw, 'pool/m');
  assert.equal(second.status, 503, second.text);
  const error = JSON.parse(second.text).error;
  assert.equal(error.candidates[0].reason, 'keys_muted', second.text);
  assert.equal(error.candidates[0].status, 429);
  assert.match(error.message, /rate-limited its keys/);
  assert.equal(pool.total(), 2);
});

test('every key refused (401/403): the backend is down with its credential refused', async () => {
  const { pool, gw } = await rig({ [A]: { status: 401 }, [B]: { status: 403 } });
  const first = await chat(gw, 'pool/m');
  assert.equal(first.status, 502, first.text);
  assert.equal(JSON.parse(first.text).error.code, 'upstream_auth_failed');
  assert.equal(pool.total(), 2, 'one request per key');
  const state = gw.gateway.registry.get('pool')!;
  assert.equal(state.healthy, false);
  assert.equal(state.error?.kind, 'auth');
  const second = await chat(gw, 'pool/m');
  assert.equal(second.status, 503, second.text);
  assert.equal(JSON.parse(second.text).error.candidates[0].reason, 'credential_refused', second.text);
  assert.equal(pool.total(), 2);
});

test('a stream whose head went out is never sent again with another key', async () => {
  const { pool, other, gw } = await rig({ [A]: 'break-stream', [B]: 'ok' });
  const res = await chat(gw, 'pm', true);
  assert.equal(res.status, 200);
  assert.match(res.text, /first /);
  assert.doesNotMatch(res.text, /\[DONE\]/, 'no made-up end');
  assert.equal(pool.count(A), 1);
  assert.equal(pool.count(B), 0, 'the completion was not sent twice');
  assert.equal(other.total(), 0);
});

test('a stream refused with 429 before its head: the next key streams it', async () => {
  const { pool, gw } = await rig({ [A]: { status: 429, retryAfter: '5' }, [B]: 'ok' });
  const res = await chat(gw, 'pm', true);
  assert.equal(res.status, 200);
  assert.match(res.text, /first [\s\S]*and last[\s\S]*\[DONE\]/);
  assert.equal(pool.count(A), 1);
  assert.equal(pool.count(B), 1);
});

test('a key revoked at discovery is muted there; the backend comes up with the next key and serves', async () => {
  const { pool, gw } = await rig({ [A]: { status: 401, models: true }, [B]: 'ok' });
  const state = gw.gateway.registry.get('pool')!;
  assert.equal(state.healthy, true, 'one revoked key does not take the backend down');
  assert.equal(keyStates(gw)[0].reason, 401);
  const res = await chat(gw, 'pool/m');
  assert.equal(res.status, 200, res.text);
  assert.deepEqual([pool.count(A), pool.count(B)], [0, 1], 'the muted key is not sent the call');
});

test('a reload keeping every key muted: none is sent again, the pool rests, another candidate serves', async () => {
  const { pool, gw } = await rig({ [A]: { status: 429, retryAfter: '60' }, [B]: { status: 429, retryAfter: '60' } });
  assert.equal((await chat(gw)).backend, 'other');
  const registry = gw.gateway.registry;
  const cap = registry.get('other')!.cap;
  registry.reconcile(
    registry.list().map((b) => (b.name === 'pool' ? { ...b.spec, api_keys: [B, A] } : b.spec)),
    cap,
  );
  await gw.gateway.discovery.probe('pool');
  assert.equal(registry.get('pool')!.resting, undefined, 'the reload lifted the rest');
  assert.equal(registry.get('pool')!.healthy, true);
  assert.deepEqual(
    registry.keyStates('pool')!.map((k) => k.state),
    ['muted', 'muted'],
    'the keys that stayed kept their state',
  );
  const res = await chat(gw);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.backend, 'other');
  assert.equal(pool.total(), 2, 'no muted key was sent the call');
  assert.equal(registry.get('pool')!.resting?.reason, 429, 'it rests again');
});
