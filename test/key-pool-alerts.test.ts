/**
 * A refused key of a pool raises `credential_rejected` naming the key by its hint (never the key),
 * a 429 raises nothing; and /health/deep lists the pool's masked key states. Over sockets: a
 * keyed fake backend, a local alert sink.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { startKeyedBackend } from './fakes/keyed-backend.ts';
import { bodyOf, startAlertSink } from './helpers/alert-sink.ts';
import { startGateway } from './helpers/gateway.ts';

const A = 'sk-pool-aaaaaaaaaaaaaaaa1111';
const B = 'sk-pool-bbbbbbbbbbbbbbbb2222';
const C = 'sk-pool-cccccccccccccccc3333';
const MASTER = 'sk-master-keypool-alerts-01';

const open: { close(): Promise<void> }[] = [];
after(async () => {
  for (const thing of open.reverse()) await thing.close();
});

test('a 401 on one pooled key: one credential_rejected alert with its hint; a 429 on another: none', async () => {
  const pool = await startKeyedBackend('m', {
    [A]: { status: 401 },
    [B]: { status: 429, retryAfter: '60' },
    [C]: 'ok',
  });
  const sink = await startAlertSink();
  open.push(pool, sink);
  const gw = await startGateway([{ name: 'pool', url: pool.url, api_keys: [A, B, C] }], {
    api_key: MASTER,
    alerts: [{ url: `${sink.url}/hook`, events: ['credential_rejected'], format: 'json', min_interval_s: 300 }],
  });
  open.push(gw);
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}` },
    body: JSON.stringify({ model: 'pool/m', messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(res.status, 200, await res.text());
  assert.deepEqual([pool.count(A), pool.count(B), pool.count(C)], [1, 1, 1]);
  const [alert] = await sink.waitFor(1, '/hook');
  const body = bodyOf(alert);
  assert.equal(body.event, 'credential_rejected');
  assert.equal(body.backend, 'pool');
  assert.equal(body.key, '#1 sk-…1111');
  assert.match(String(body.detail), /refused key #1 sk-…1111 \(HTTP 401\); muted/);
  for (const key of [A, B, C]) assert.ok(!alert.body.includes(key), 'no key in clear in the alert');
  // the 429 on B mutes it for a while: no alert for that, now or after the queue drained
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(sink.received.length, 1);

  const deep = (await (
    await fetch(`${gw.url}/health/deep`, { headers: { authorization: `Bearer ${MASTER}` } })
  ).json()) as {
    backends: { pool: { keys: { hint: string; state: string; reason?: number }[] } };
  };
  const keys = deep.backends.pool.keys;
  assert.deepEqual(
    keys.map((k) => [k.hint, k.state, k.reason ?? null]),
    [
      ['#1 sk-…1111', 'muted', 401],
      ['#2 sk-…2222', 'muted', 429],
      ['#3 sk-…3333', 'ok', null],
    ],
  );
  const text = JSON.stringify(deep);
  for (const key of [A, B, C]) assert.ok(!text.includes(key), '/health/deep shows no key in clear');
});
