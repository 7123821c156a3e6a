/**
 * Redis lost while the cluster runs: new calls get a 503 that says the cluster store is
 * unreachable, a call already streaming finishes, and when Redis comes back (empty) the running
 * call's slot is held again once (its lease id), so a box of `max_concurrent: 1` still runs one
 * call at a time. /health/ready says 503 while Redis is away.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { startRedis, type RedisServer } from './helpers/redis-server.ts';
import { waitFor } from './helpers/wait.ts';

function chat(base: string, label: string, stream = false) {
  return fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm1', stream, messages: [{ role: 'user', content: label }] }),
  });
}

describe('cluster: Redis lost while running', () => {
  let redis: RedisServer;
  let fake: FakeBackend;
  let a: TestGateway;
  let b: TestGateway;

  before(async () => {
    redis = await startRedis();
    fake = await startFake('vllm', { models: ['m1'], knobs: { latencyMs: 10 } });
    const backends = [{ name: 'box', url: fake.url, max_concurrent: 1 }];
    const cluster = (id: string) => ({ cluster: { redis_url: redis.url, instance_id: id, lease_ttl_s: 3 } });
    a = await startGateway(backends, { park_timeout_s: 30, ...cluster('a') });
    b = await startGateway(backends, { park_timeout_s: 30, ...cluster('b') });
  });
  after(async () => {
    await Promise.all([a.close(), b.close()]);
    await fake.close();
    await redis.stop();
  });

  it('503 for new calls, the running stream finishes, and its slot is counted once when Redis is back', async () => {
    fake.setKnobs({ tokensPerSecond: 10, chunkCount: 40 }); // a 4 s stream
    const running = chat(a.url, 'long', true);
    const probe = new Redis(redis.url);
    await waitFor(async () => (await probe.zcard('llmgw:slots:box')) === 1, 'the stream holds its slot');
    probe.disconnect();
    await redis.kill();

    for (const gw of [a, b]) {
      const res = await chat(gw.url, 'while-down');
      assert.equal(res.status, 503);
      const body = (await res.json()) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'cluster_unavailable');
      assert.match(body.error.message, /cluster store \(Redis\) is unreachable/);
    }

    const notReady = await fetch(`${a.url}/health/ready`);
    assert.equal(notReady.status, 503, 'a load balancer is told to look elsewhere');
    const verdict = (await notReady.json()) as { reasons: string[]; checks: { cluster?: { ok: boolean } } };
    assert.ok(verdict.reasons.includes('the cluster store (Redis) is unreachable'), verdict.reasons.join('; '));
    assert.equal(verdict.checks.cluster?.ok, false);

    await redis.restart();
    const back = new Redis(redis.url);
    try {
      // the running call's lease is held again (re-added by its id), once
      await waitFor(async () => (await back.zcard('llmgw:slots:box')) === 1, 'the lease is back', 5000);
      const meanwhile = chat(b.url, 'after-restart');
      let peak = 0;
      const sampler = setInterval(() => void back.zcard('llmgw:slots:box').then((n) => (peak = Math.max(peak, n))), 20);
      const streamed = await running;
      assert.equal(streamed.status, 200);
      const text = await streamed.text();
      assert.match(text, /data: \[DONE\]/, 'the running stream finished whole');
      const after = await meanwhile;
      clearInterval(sampler);
      assert.equal(after.status, 200, 'calls are served again');
      assert.equal((await fetch(`${a.url}/health/ready`)).status, 200, 'ready again');
      assert.ok(peak <= 1, `the ledger counted ${peak} slots of a box of cap 1`);
      assert.equal(fake.maxInflight, 1, 'the box never ran two calls at once');
    } finally {
      back.disconnect();
    }
  });
});
