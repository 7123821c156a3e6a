/**
 * Three gateway processes, one Redis, two backends of `max_concurrent: 2`: the slot cap holds
 * across the instances at every sampled instant, no call is lost or run twice, parked calls are
 * served in arrival order across instances, and an instance killed with SIGKILL mid-stream gives
 * its slots back within the lease TTL while the others carry on.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startRedis, type RedisServer } from './helpers/redis-server.ts';
import { startInstance, type ClusterInstance } from './helpers/cluster-rig.ts';
import { waitFor } from './helpers/wait.ts';

const TTL_S = 3;

async function chat(base: string, label: string, stream = false): Promise<number> {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm1', stream, messages: [{ role: 'user', content: label }] }),
  });
  await res.text();
  return res.status;
}

describe('cluster: shared slots and queue over three instances', () => {
  let redis: RedisServer;
  let fakes: FakeBackend[];
  let instances: ClusterInstance[];
  let probe: Redis;

  before(async () => {
    redis = await startRedis();
    probe = new Redis(redis.url);
    fakes = await Promise.all([0, 1].map(() => startFake('vllm', { models: ['m1'], knobs: { latencyMs: 30 } })));
    const backends = fakes.map((f, i) => ({ name: `box${i}`, url: f.url, max_concurrent: 2 }));
    const settings = { park_timeout_s: 120, max_parked: 1000 };
    instances = await Promise.all(['a', 'b', 'c'].map((id) => startInstance(id, redis.url, backends, settings)));
  });
  after(async () => {
    await Promise.all(instances.map((i) => i.stop()));
    await Promise.all(fakes.map((f) => f.close()));
    probe.disconnect();
    await redis.stop();
  });

  it('300 calls over three instances: never more than 2 at once on a box, none lost, none twice', async () => {
    for (const f of fakes) f.requests.length = 0;
    let sampledPeak = 0;
    const sampler = setInterval(() => {
      for (const f of fakes) sampledPeak = Math.max(sampledPeak, f.inflight);
    }, 2);
    const labels = Array.from({ length: 300 }, (_, i) => `call-${i}`);
    const statuses = await Promise.all(labels.map((label, i) => chat(instances[i % 3].url, label, i % 2 === 0)));
    clearInterval(sampler);
    assert.deepEqual(
      statuses.filter((s) => s !== 200),
      [],
    );
    for (const f of fakes) assert.ok(f.maxInflight <= 2, `a box saw ${f.maxInflight} at once`);
    assert.ok(sampledPeak <= 2, `sampled ${sampledPeak} at once`);
    const served = fakes.flatMap((f) => f.servedOrder.filter((l) => l.startsWith('call-')));
    assert.equal(served.length, 300, 'every call reached a backend once');
    assert.equal(new Set(served).size, 300, 'no call ran twice');
    assert.ok(
      fakes.every((f) => f.maxInflight === 2),
      'both boxes were used to their cap',
    );
  });

  it('parked calls are served in arrival order across instances (within the 4 slots in flight)', async () => {
    for (const f of fakes) {
      f.requests.length = 0;
      f.setKnobs({ latencyMs: 150 });
    }
    // fill the four slots, then 24 more calls 25 ms apart, round robin over the instances
    const fill = Array.from({ length: 4 }, (_, i) => chat(instances[i % 3].url, `fill-${i}`));
    await new Promise((r) => setTimeout(r, 60));
    const queued: Promise<number>[] = [];
    for (let i = 0; i < 24; i++) {
      queued.push(chat(instances[i % 3].url, `fifo-${i}`));
      await new Promise((r) => setTimeout(r, 25));
    }
    const statuses = await Promise.all([...fill, ...queued]);
    assert.ok(statuses.every((s) => s === 200));
    // the order the boxes started them in (both boxes' logs, merged by arrival at the box)
    const started = mergeByArrival(fakes).filter((l) => l.startsWith('fifo-'));
    assert.equal(started.length, 24);
    const displacement = started.map((label, pos) => Math.abs(Number(label.slice(5)) - pos));
    assert.ok(Math.max(...displacement) <= 3, `out of order by up to ${Math.max(...displacement)}: ${started}`);
    for (const f of fakes) f.setKnobs({ latencyMs: 30 });
  });

  it('an instance killed with SIGKILL mid-stream: its slots come back within the TTL; the others carry on', async () => {
    for (const f of fakes) f.setKnobs({ latencyMs: 0, tokensPerSecond: 4, chunkCount: 200 }); // ~50 s streams
    const victim = instances[2];
    const streams = [0, 1].map((i) => chat(victim.url, `victim-${i}`, true).catch(() => -1));
    await waitFor(async () => (await leasesHeld(probe)) === 2, 'the victim holds both slots', 5000);
    // the other two instances' calls park behind the victim's two slots plus two of their own
    for (const f of fakes) f.setKnobs({ tokensPerSecond: 0, chunkCount: 3, latencyMs: 20 });
    const others = Array.from({ length: 12 }, (_, i) => chat(instances[i % 2].url, `other-${i}`));
    await new Promise((r) => setTimeout(r, 200));
    const killedAt = Date.now();
    await victim.kill();
    await Promise.all(streams);
    await waitFor(async () => (await leasesHeld(probe)) === 0, 'the slots come back', (TTL_S + 2) * 1000);
    const freedAfterMs = Date.now() - killedAt;
    assert.ok(freedAfterMs <= (TTL_S + 1) * 1000, `slots came back after ${freedAfterMs} ms (TTL ${TTL_S} s)`);
    const statuses = await Promise.all(others);
    assert.deepEqual(statuses, Array(12).fill(200), 'every call on the surviving instances ended well');
    for (const f of fakes) assert.ok(f.maxInflight <= 2);
  });
});

async function leasesHeld(redis: Redis): Promise<number> {
  const now = Date.now();
  let n = 0;
  for (const box of ['box0', 'box1']) n += await redis.zcount(`llmgw:slots:${box}`, now, '+inf');
  return n;
}

/** Chat labels both boxes got, merged by when each request arrived there. */
function mergeByArrival(fakes: FakeBackend[]): string[] {
  const all = fakes.flatMap((f) => f.requests.filter((r) => r.path.endsWith('/chat/completions')));
  return all.sort((x, y) => x.startedAt - y.startedAt).map((r) => String(r.body?.messages?.at(-1)?.content ?? ''));
}
