/**
 * Quotas across a cluster: a user created on one instance works on the others, and its
 * `quota_req_day` is exact across them — 20 concurrent calls spread over three instances with
 * a day limit of 7 give exactly 7 answers and 13 refusals (429 insufficient_quota).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { adminApi } from './helpers/admin-api.ts';
import { startRedis, type RedisServer } from './helpers/redis-server.ts';
import { tempDirs } from './helpers/temp-dirs.ts';

const MASTER = 'master-key-cluster-quota-0123456789';
const secret = randomBytes(32);
const dirs = tempDirs('gw-cluster-quota-');

function chat(gw: TestGateway, key: string, label: string): Promise<Response> {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'm1', messages: [{ role: 'user', content: label }] }),
  });
}

describe('cluster: a user and its day quota across three instances', () => {
  let redis: RedisServer;
  let fake: FakeBackend;
  const gws: TestGateway[] = [];

  before(async () => {
    redis = await startRedis();
    fake = await startFake('vllm', { models: ['m1'], knobs: { latencyMs: 40 } });
    for (const id of ['q-a', 'q-b', 'q-c']) {
      const dir = dirs();
      writeFileSync(join(dir, 'secret.key'), secret, { mode: 0o600 });
      const cluster = { redis_url: redis.url, instance_id: id };
      const backends = [{ name: 'box', url: fake.url, max_concurrent: 2 }];
      gws.push(await startGateway(backends, { api_key: MASTER, park_timeout_s: 30, cluster }, { storeDir: dir }));
    }
  });
  after(async () => {
    for (const gw of gws) await gw.close();
    await fake.close();
    await redis.stop();
  });

  test('created on A, the key works on B and C; 7 of 20 concurrent calls pass a day limit of 7', async () => {
    const key = 'sk-quota-user-' + randomBytes(12).toString('hex');
    const created = await adminApi(() => gws[0].url, MASTER)('POST', '/admin/api/users', {
      name: 'quota-user',
      key,
      quota_req_day: 7,
    });
    assert.equal(created.status, 201, created.text);
    // the user reaches B and C (the store's sync); a models list costs no quota
    for (const gw of gws.slice(1)) {
      const deadline = Date.now() + 2000;
      for (;;) {
        const res = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
        await res.text();
        if (res.status === 200) break;
        assert.ok(Date.now() < deadline, 'the user works on every instance within 2 s');
        await new Promise((r) => setTimeout(r, 25));
      }
    }
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => chat(gws[i % 3], key, `q-${i}`)));
    const statuses = await Promise.all(answers.map(async (r) => (await r.text(), r.status)));
    assert.equal(statuses.filter((s) => s === 200).length, 7, `statuses: ${statuses}`);
    assert.equal(statuses.filter((s) => s === 429).length, 13, `statuses: ${statuses}`);
    assert.equal(fake.requests.filter((r) => r.path.endsWith('/chat/completions')).length, 7);
    // once on record, the day's 7 still count everywhere
    await new Promise((r) => setTimeout(r, 200));
    for (const gw of gws) {
      const again = await chat(gw, key, 'again');
      assert.equal(again.status, 429);
      const body = (await again.json()) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'insufficient_quota');
      assert.match(body.error.message, /Daily request quota reached \(7 requests per day\)/);
    }
  });
});
