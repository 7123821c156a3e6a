/**
 * Cluster mode: one instance's verdict on a backend reaches the others. Two in-process
 * gateways in front of one fake backend; the backend dies, A's failed call and probe mark it
 * down, and B shows it down within a second without probing it itself; the backend comes
 * back, A's probe sees it and B probes at once on the hint. A remote mark is not published
 * again.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { startRedis, type RedisServer } from './helpers/redis-server.ts';
import { startFake, type FakeBackend } from './fakes/index.ts';
import type { HealthChange } from '../src/cluster/health-share.ts';

const MASTER = 'master-key-cluster-health-0123';

async function healthOf(gw: TestGateway, name: string): Promise<{ healthy: boolean; error: any }> {
  const res = await fetch(`${gw.url}/health`, { headers: { authorization: `Bearer ${MASTER}` } });
  const body = (await res.json()) as { backends: Record<string, { healthy: boolean; error: any }> };
  return body.backends[name]!;
}

async function until(what: string, ms: number, check: () => Promise<boolean>): Promise<number> {
  const start = Date.now();
  for (;;) {
    if (await check()) return Date.now() - start;
    if (Date.now() - start > ms) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('cluster: backend health shared', () => {
  let redis: RedisServer;
  let fake: FakeBackend;
  let a: TestGateway;
  let b: TestGateway;
  let watcher: Redis;
  const messages: HealthChange[] = [];
  /** Probes B ran itself (its discovery's probe). */
  const probesOfB: number[] = [];

  before(async () => {
    redis = await startRedis();
    fake = await startFake('llamacpp');
    const settings = { api_key: MASTER, health_check_interval: 300, fast_probe_interval_s: 2, failure_threshold: 1 };
    a = await startGateway([{ name: 'llm', url: fake.url }], {
      ...settings,
      cluster: { redis_url: redis.url, instance_id: 'gw-a' },
    });
    b = await startGateway([{ name: 'llm', url: fake.url }], {
      ...settings,
      cluster: { redis_url: redis.url, instance_id: 'gw-b' },
    });
    const probe = b.gateway.discovery.probe.bind(b.gateway.discovery);
    b.gateway.discovery.probe = (name: string) => (probesOfB.push(Date.now()), probe(name));
    watcher = new Redis(redis.url);
    await watcher.subscribe('llmgw:health');
    watcher.on('message', (_channel: string, message: string) => messages.push(JSON.parse(message)));
  });
  after(async () => {
    watcher.disconnect();
    await a.close();
    await b.close();
    await fake.close();
    await redis.stop();
  });

  it('a down mark seen by A reaches B at once, and the recovery reaches both', async () => {
    assert.equal((await healthOf(a, 'llm')).healthy, true);
    assert.equal((await healthOf(b, 'llm')).healthy, true);

    fake.setKnobs({ refuse: true });
    const res = await fetch(`${a.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: fake.models[0], messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.ok(res.status >= 500, `the call through A fails (${res.status})`);
    await res.text();
    // A's failed call asks for a probe, which marks the backend down there
    await until('A marks it down', 3000, async () => !(await healthOf(a, 'llm')).healthy);
    const downAt = Date.now();
    const took = await until('B shows it down', 1000, async () => !(await healthOf(b, 'llm')).healthy);
    assert.ok(took <= 1000, `B within 1 s (${took} ms)`);
    const onB = await healthOf(b, 'llm');
    assert.equal(onB.error.kind, (await healthOf(a, 'llm')).error.kind, 'the same kind of error');
    assert.match(onB.error.detail, /gw-a/, 'B says who saw it');
    assert.equal(probesOfB.filter((t) => t <= downAt + took).length, 0, 'B did not probe it itself');
    const downs = messages.filter((m) => !m.up);
    assert.deepEqual(
      downs.map((m) => [m.b, m.from]),
      [['llm', 'gw-a']],
      'one down message, from A: B does not publish the mark it applied',
    );

    // the box comes back: A's probe sees it first, B probes at once on A's hint
    fake.setKnobs({ refuse: false });
    const probesBefore = probesOfB.length;
    await a.gateway.discovery.probe('llm');
    assert.equal((await healthOf(a, 'llm')).healthy, true);
    await until('B back up on the hint', 1000, async () => (await healthOf(b, 'llm')).healthy);
    assert.ok(probesOfB.length > probesBefore, 'B probed it itself before calling it up');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await healthOf(a, 'llm')).healthy, true);
    assert.ok(
      messages.every((m) => m.up || m.from === 'gw-a'),
      `no down from B: ${JSON.stringify(messages)}`,
    );
    assert.ok(messages.length <= 3, `no ping-pong: ${JSON.stringify(messages)}`);
  });
});
