/**
 * The demo's several-gateways step (scripts/demo.ts): two gateway instances sharing one
 * redis-server (started here on a free loopback port when `redis-server` is installed) in front
 * of one box of `max_concurrent: 1`. Calls sent to both instances at once run one at a time on
 * the box, in arrival order; a user created on one instance works on the other.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { buildApp } from '../src/app.ts';
import { embeddedDefaultConfig } from '../src/config/defaults.ts';
import type { BackendSpec, GatewayConfig } from '../src/config/types.ts';
import { startFake } from '../test/fakes/index.ts';

type Say = (text: string) => void;
type Spec = (s: Partial<BackendSpec> & { name: string; url: string }) => BackendSpec;
const MASTER = 'demo-cluster-master-key-0123456789';

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export async function clusterWalkthrough(say: Say, step: number, spec: Spec): Promise<void> {
  say(`\n${step}. several gateways as one — two instances, one Redis, one box of max_concurrent 1:`);
  if (spawnSync('redis-server', ['--version']).status !== 0) {
    say('   (skipped: redis-server is not installed; apt-get install redis-server)');
    return;
  }
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'llm-gateway-demo-cluster-'));
  const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir], {
    stdio: 'ignore',
  });
  const box = await startFake('vllm', { models: ['demo-model'], knobs: { latencyMs: 300 } });
  const secret = randomBytes(32); // every instance of a cluster holds the same secret.key
  const instances: { url: string; close: () => Promise<void> }[] = [];
  try {
    await new Promise((r) => setTimeout(r, 300));
    for (const id of ['gw-1', 'gw-2']) {
      const storeDir = join(dir, id);
      mkdirSync(storeDir, { recursive: true });
      writeFileSync(join(storeDir, 'secret.key'), secret, { mode: 0o600 });
      const config: GatewayConfig = {
        ...embeddedDefaultConfig(),
        store_dir: storeDir,
        jobs_dir: join(storeDir, 'jobs'),
        log_level: 'error',
        api_key: MASTER,
        park_timeout_s: 30,
        cluster: { redis_url: `redis://127.0.0.1:${port}`, instance_id: id },
        backends: [spec({ name: 'box', url: box.url, max_concurrent: 1 })],
      };
      const { app, gateway } = await buildApp({ config, configSource: 'demo', logger: pino({ level: 'error' }) });
      await app.listen({ port: 0, host: '127.0.0.1' });
      await gateway.discovery.pollAll();
      const address = app.server.address() as { port: number };
      instances.push({ url: `http://127.0.0.1:${address.port}`, close: () => app.close() });
    }
    const [one, two] = instances;
    const call = (base: string, label: string, key = MASTER) =>
      fetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ model: 'demo-model', messages: [{ role: 'user', content: label }] }),
      }).then(async (r) => (await r.text(), r.status));
    const started = Date.now();
    const labels = ['gw-1 #1', 'gw-2 #1', 'gw-1 #2', 'gw-2 #2'];
    const statuses: number[] = [];
    for (const [i, label] of labels.entries()) {
      statuses.push(0);
      void call(i % 2 === 0 ? one.url : two.url, label).then((s) => (statuses[i] = s));
      await new Promise((r) => setTimeout(r, 30));
    }
    while (statuses.some((s) => s === 0)) await new Promise((r) => setTimeout(r, 50));
    say(`   4 calls, 2 to each instance, answered ${statuses.join(' ')} in ${Date.now() - started} ms`);
    say(`   the box ran at most ${box.maxInflight} at once, in this order: ${box.servedOrder.join(', ')}`);
    const key = 'sk-demo-cluster-user-' + randomBytes(8).toString('hex');
    const created = await fetch(`${one.url}/admin/api/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}` },
      body: JSON.stringify({ name: 'demo-cluster-user', key, quota_req_day: 2 }),
    });
    await created.text();
    await new Promise((r) => setTimeout(r, 1200));
    const onTwo = [
      await call(two.url, 'user 1', key),
      await call(one.url, 'user 2', key),
      await call(two.url, 'user 3', key),
    ];
    say(
      `   a user created on gw-1 (quota_req_day: 2) calls gw-2, gw-1, gw-2: ${onTwo.join(' ')} (the day quota counts across both)`,
    );
  } finally {
    for (const i of instances) await i.close();
    await box.close();
    redis.kill('SIGKILL');
  }
}
