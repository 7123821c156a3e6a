/**
 * Cluster mode: media jobs reachable from every instance. Two gateways in front of one fake
 * ComfyUI; a job made on A is read and downloaded through B (forwarded to A with the caller's
 * key, answered unchanged), another user gets the same 404 through B as through A, a job known
 * nowhere is B's own 404, a forged peer mark is nobody's, and a dead owner is a clear 503.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { GatewayConfig } from '../src/config/types.ts';
import type { JobView } from '../src/media/service-types.ts';
import { startComfyFake } from './fakes/comfyui-server.ts';
import { fakeObjectInfo } from './fakes/comfyui-nodes.ts';
import type { ComfyFake } from './fakes/comfyui-types.ts';
import { workflow } from './helpers/comfy-workflows.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { bearer, call, createUser, MASTER, pollJob, readSse } from './helpers/media-gateway.ts';
import { startRedis, type RedisServer } from './helpers/redis-server.ts';
import { MARK_HEADER, CLIENT_IP_HEADER } from '../src/cluster/internal-auth.ts';

const UNKNOWN_ID = `job_${'0'.repeat(32)}`;
const FAST_COMFY = { poll_interval: 0.05, disconnect_grace: 0.5, max_wait: 30 } as const;

async function pair(redis: RedisServer, comfy: ComfyFake, overrides: Partial<GatewayConfig>, tag: string) {
  const start = (id: string) =>
    startGateway([{ name: 'comfy', url: comfy.url, type: 'comfyui', ...FAST_COMFY }], {
      image_models: { sd15: [{ backend: 'comfy', workflow_json: workflow('txt2img_sd15_api.json') }] },
      cluster: { redis_url: redis.url, instance_id: `${tag}-${id}` },
      ...overrides,
    });
  return [await start('a'), await start('b')] as const;
}

const bytesOf = async (res: Response) => Buffer.from(await res.arrayBuffer());

describe('cluster: media jobs across instances', () => {
  let redis: RedisServer;
  let comfy: ComfyFake;
  let a: TestGateway;
  let b: TestGateway;

  before(async () => {
    redis = await startRedis();
    comfy = await startComfyFake({ objectInfo: fakeObjectInfo(), knobs: { stepMs: 20, steps: 4 } });
    [a, b] = await pair(redis, comfy, { api_key: MASTER }, 'jobs');
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await comfy?.close();
    await redis?.stop();
  });

  test("a job made on A: B answers its status, events and files; another user gets A's 404", async () => {
    // users live in A's store (each instance has its own here); B checks no key itself, A does
    const alice = await createUser(a.url, 'alice');
    const bob = await createUser(a.url, 'bob');
    const made = await call<JobView>(a.url, 'POST', '/v1/generations', alice, {
      model: 'sd15',
      prompt: 'a lighthouse',
      mode: 'async',
    });
    assert.equal(made.status, 202, JSON.stringify(made.body));
    const id = made.body.id;
    assert.equal(a.gateway.media.store.get(id, Date.now())?.id, id, 'the row is on A');
    assert.equal(b.gateway.media.store.get(id, Date.now()), undefined, 'and not on B');

    const viaB = await pollJob(b.url, id, alice, (v) => v.status === 'done');
    const viaA = await call<JobView>(a.url, 'GET', `/v1/jobs/${id}`, alice);
    assert.deepEqual(viaB, viaA.body, 'the same view through B');

    const fromA = await fetch(`${a.url}/v1/jobs/${id}/result/0`, { headers: bearer(alice) });
    const fromB = await fetch(`${b.url}/v1/jobs/${id}/result/0`, { headers: bearer(alice) });
    assert.equal(fromB.status, 200);
    assert.equal(fromB.headers.get('content-type'), fromA.headers.get('content-type'));
    assert.equal(fromB.headers.get('x-gateway-instance'), 'jobs-a', 'B says who answered');
    const [bytesA, bytesB] = [await bytesOf(fromA), await bytesOf(fromB)];
    assert.ok(bytesA.length > 0);
    assert.ok(bytesB.equals(bytesA), 'the same bytes through B');
    const thumbB = await fetch(`${b.url}/v1/jobs/${id}/result/0?format=png&w=4`, { headers: bearer(alice) });
    assert.equal(thumbB.status, 200);
    assert.equal(thumbB.headers.get('content-type'), 'image/png', 'the query goes along');
    await thumbB.arrayBuffer();

    const events = await readSse(await fetch(`${b.url}/v1/jobs/${id}/events`, { headers: bearer(alice) }));
    assert.ok(events.ended);
    assert.equal(events.events.at(-1)!.type, 'done', 'the event stream through B');

    for (const path of ['', '/result/0', '/input/0', '/events']) {
      const throughA = await call(a.url, 'GET', `/v1/jobs/${id}${path}`, bob);
      const throughB = await call(b.url, 'GET', `/v1/jobs/${id}${path}`, bob);
      assert.equal(throughA.status, 404, `A ${path}`);
      assert.equal(throughB.status, 404, `B ${path}`);
      assert.deepEqual(throughB.body.error, throughA.body.error, `${path}: the same refusal through B`);
    }
    const cancelB = await call(b.url, 'POST', `/v1/jobs/${id}/cancel`, bob);
    assert.equal(cancelB.status, 404, 'cancel through B is gated too');
    assert.equal((await call(b.url, 'GET', `/v1/jobs/${id}`, undefined)).status, 401, 'no key: A says 401');
    assert.equal((await call(b.url, 'GET', `/v1/jobs/${id}`, 'sk-wrong-key')).status, 401);

    // a job nobody knows: B's own 404, the same as A's (with a key B knows: users are in A's store only here)
    const unknownB = await call(b.url, 'GET', `/v1/jobs/${UNKNOWN_ID}`, MASTER);
    const unknownA = await call(a.url, 'GET', `/v1/jobs/${UNKNOWN_ID}`, MASTER);
    assert.equal(unknownB.status, 404);
    assert.deepEqual(unknownB.body.error, unknownA.body.error);
    // the job list stays per instance
    const listB = await call<{ data: JobView[] }>(b.url, 'GET', '/v1/jobs', MASTER);
    assert.deepEqual(listB.body.data, []);
  });

  test('the owner instance gone: a clear 503 naming it', async () => {
    const made = await call<JobView>(a.url, 'POST', '/v1/generations', MASTER, { model: 'sd15', prompt: 'x' });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    await a.close();
    const r = await call(b.url, 'GET', `/v1/jobs/${made.body.id}`, MASTER);
    assert.equal(r.status, 503);
    assert.equal(r.body.error.code, 'instance_unreachable');
    assert.match(r.body.error.message, /the instance that ran this job \(jobs-a\) is unreachable/i);
    const file = await call(b.url, 'GET', `/v1/jobs/${made.body.id}/result/0`, MASTER);
    assert.equal(file.status, 503);
    a = undefined as unknown as TestGateway;
  });
});

describe('cluster: media jobs while the gateways are open (owners by client address)', () => {
  let redis: RedisServer;
  let comfy: ComfyFake;
  let a: TestGateway;
  let b: TestGateway;
  before(async () => {
    redis = await startRedis();
    comfy = await startComfyFake({ objectInfo: fakeObjectInfo(), knobs: { stepMs: 20, steps: 4 } });
    [a, b] = await pair(redis, comfy, { api_key: undefined, trust_proxy: true }, 'open');
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await comfy?.close();
    await redis?.stop();
  });

  test("the client's address goes along (its own jobs through B), and a forged peer mark is nobody's", async () => {
    const from = (ip: string) => ({ 'x-forwarded-for': ip });
    const made = await call<JobView>(
      a.url,
      'POST',
      '/v1/generations',
      undefined,
      { model: 'sd15', prompt: 'open' },
      from('10.0.0.1'),
    );
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const id = made.body.id;
    assert.equal((await call(b.url, 'GET', `/v1/jobs/${id}`, undefined, undefined, from('10.0.0.1'))).status, 200);
    assert.equal((await call(b.url, 'GET', `/v1/jobs/${id}`, undefined, undefined, from('10.0.0.2'))).status, 404);
    // 10.0.0.2 claims to be a peer forwarding for 10.0.0.1: the mark does not verify, it stays 10.0.0.2
    const forged = {
      ...from('10.0.0.2'),
      [MARK_HEADER]: `${Date.now()}.${'0'.repeat(64)}`,
      [CLIENT_IP_HEADER]: '10.0.0.1',
    };
    assert.equal((await call(a.url, 'GET', `/v1/jobs/${id}`, undefined, undefined, forged)).status, 404);
    assert.equal((await call(b.url, 'GET', `/v1/jobs/${id}`, undefined, undefined, forged)).status, 404);
  });
});
