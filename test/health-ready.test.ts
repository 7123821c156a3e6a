/**
 * GET /health/ready (200 only with a writable store, a config in force and a backend up, or
 * ready_requires_backend: false) and GET /health/deep (admin: circuits, last errors, failure
 * counts, the queue by type key), over sockets against real fakes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startFake } from './fakes/index.ts';
import { startGateway } from './helpers/gateway.ts';

const MASTER = 'sk-master-ready-0123456789';
const auth = { authorization: `Bearer ${MASTER}` };

async function getJson(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

/** A port nothing listens on: a fake started and closed again. */
async function closedPortUrl(): Promise<string> {
  const gone = await startFake('vllm');
  await gone.close();
  return gone.url;
}

test('ready with a backend up; HEAD answers too; the checks say why', async (t) => {
  const fake = await startFake('vllm');
  const gw = await startGateway([{ name: 'box', url: fake.url }], { api_key: MASTER });
  t.after(async () => {
    await gw.close();
    await fake.close();
  });
  const ready = await getJson(`${gw.url}/health/ready`);
  assert.equal(ready.status, 200);
  assert.equal(ready.body.status, 'ready');
  assert.deepEqual(ready.body.reasons, []);
  assert.equal(ready.body.checks.store.ok, true);
  assert.equal(ready.body.checks.config.ok, true);
  assert.deepEqual(
    { up: ready.body.checks.backends.up, enabled: ready.body.checks.backends.enabled },
    { up: 1, enabled: 1 },
  );
  assert.equal(ready.headers.get('cache-control'), 'no-store');
  const head = await fetch(`${gw.url}/health/ready`, { method: 'HEAD' });
  assert.equal(head.status, 200);
});

test('not ready while every backend is down, unless ready_requires_backend is false', async (t) => {
  const url = await closedPortUrl();
  const strict = await startGateway([{ name: 'asleep', url }], { api_key: MASTER });
  const relaxed = await startGateway([{ name: 'asleep', url }], { api_key: MASTER, ready_requires_backend: false });
  t.after(async () => {
    await strict.close();
    await relaxed.close();
  });
  const down = await getJson(`${strict.url}/health/ready`);
  assert.equal(down.status, 503);
  assert.equal(down.body.status, 'not_ready');
  assert.match(down.body.reasons.join(' '), /no backend is up \(1 enabled, all down\)/);
  assert.ok(!JSON.stringify(down.body).includes(url), 'the public answer names no backend URL');
  const ok = await getJson(`${relaxed.url}/health/ready`);
  assert.equal(ok.status, 200);
  assert.equal(ok.body.checks.backends.required, false);
});

test('not ready while the store cannot take a write (another process holds its write lock), at once', async (t) => {
  const fake = await startFake('vllm');
  const gw = await startGateway([{ name: 'box', url: fake.url }], { api_key: MASTER });
  const other = new Database(join(gw.storeDir, 'store.db'));
  t.after(async () => {
    if (other.inTransaction) other.exec('ROLLBACK');
    other.close();
    await gw.close();
    await fake.close();
  });
  other.exec('BEGIN IMMEDIATE');
  const started = Date.now();
  const locked = await getJson(`${gw.url}/health/ready`);
  assert.ok(Date.now() - started < 2000, 'the probe does not wait out the busy timeout');
  assert.equal(locked.status, 503);
  assert.equal(locked.body.checks.store.ok, false);
  assert.match(locked.body.reasons[0], /store database cannot be written: database is locked/);
  other.exec('ROLLBACK');
  assert.equal((await getJson(`${gw.url}/health/ready`)).status, 200);
  // the probe left the gateway's own busy timeout as it was: writes still wait for a lock
  assert.equal(gw.gateway.store.pragma('busy_timeout', { simple: true }), 5000);
});

test('/health/deep is admin-only and shows circuits, last errors with their time, and failure counts', async (t) => {
  const fake = await startFake('vllm');
  const url = await closedPortUrl();
  const gw = await startGateway(
    [
      { name: 'up', url: fake.url },
      { name: 'gone', url },
    ],
    { api_key: MASTER },
  );
  t.after(async () => {
    await gw.close();
    await fake.close();
  });
  const anonymous = await getJson(`${gw.url}/health/deep`);
  assert.equal(anonymous.status, 401);
  assert.equal(anonymous.body.error.code, 'invalid_api_key');
  const deep = await getJson(`${gw.url}/health/deep`, auth);
  assert.equal(deep.status, 200);
  assert.equal(deep.body.detail, 'deep');
  const up = deep.body.backends.up;
  assert.equal(up.circuit, 'closed');
  assert.equal(up.last_error, null);
  assert.deepEqual(up.failures, { consecutive: 0, total: 0, times_down: 0 });
  const gone = deep.body.backends.gone;
  assert.equal(gone.circuit, 'open');
  assert.equal(gone.error.kind, 'unreachable');
  assert.equal(gone.last_error.kind, 'unreachable');
  assert.ok(Math.abs(Date.parse(gone.last_error.at) - Date.now()) < 60_000);
  assert.equal(gone.failures.times_down, 1);
  assert.ok(Date.parse(gone.next_check_at) > Date.now());
  assert.equal(gone.keys, null);
  assert.equal(gone.wake, null);
});

test('/health/deep lists parked calls under their type key', async (t) => {
  const fake = await startFake('vllm', { knobs: { tokensPerSecond: 20, chunkCount: 40 } });
  const gw = await startGateway([{ name: 'one', url: fake.url, max_concurrent: 1 }], { api_key: MASTER });
  t.after(async () => {
    await gw.close();
    await fake.close();
  });
  const model = `one/${fake.models[0]}`;
  const call = () =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
    }).then((r) => r.text());
  const running = call();
  while (fake.inflight === 0) await new Promise((r) => setTimeout(r, 20));
  const parked = call();
  let queue: any;
  for (let i = 0; i < 100 && !queue?.total; i++) {
    queue = (await getJson(`${gw.url}/health/deep`, auth)).body.queue;
    if (!queue.total) await new Promise((r) => setTimeout(r, 20));
  }
  assert.equal(queue.total, 1);
  const keys = Object.keys(queue.by_type_key);
  assert.equal(keys.length, 1);
  assert.equal(queue.by_type_key[keys[0]].parked, 1);
  assert.ok(queue.by_type_key[keys[0]].oldest_age_s >= 0);
  await Promise.all([running, parked]);
  assert.equal((await getJson(`${gw.url}/health/deep`, auth)).body.queue.total, 0);
});

test("scripts/wait-ready.mjs (the unit's ExecStartPost) exits 0 once ready and 1 with the reasons at its deadline", async (t) => {
  const fake = await startFake('vllm');
  const ready = await startGateway([{ name: 'box', url: fake.url }], { api_key: MASTER });
  const asleep = await startGateway([{ name: 'asleep', url: await closedPortUrl() }], { api_key: MASTER });
  t.after(async () => {
    await ready.close();
    await asleep.close();
    await fake.close();
  });
  const waitFor = (url: string) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, ['scripts/wait-ready.mjs', url, '2'], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.on('close', (code) => resolve({ code, stderr }));
    });
  const ok = await waitFor(`${ready.url}/health/ready`);
  assert.equal(ok.code, 0);
  const late = await waitFor(`${asleep.url}/health/ready`);
  assert.equal(late.code, 1);
  assert.match(late.stderr, /not ready after 2 s .*503: no backend is up/);
});
