/**
 * Cluster mode: the Statistics tab names the instance it shows, and `instances=all` sums every
 * alive instance's call log (counts and tokens add, percentiles are left out of the sum and
 * shown per instance). The peers' summary route answers peers only.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sumSummaries } from '../src/cluster/stats-sum.ts';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { freePort, startRedis, type RedisServer } from './helpers/redis-server.ts';
import { Redis } from 'ioredis';
import { UiClient } from './helpers/ui.ts';
import { waitFor } from './helpers/wait.ts';

const MASTER = 'master-key-cluster-stats-0123';
const card = (html: string, label: string) =>
  new RegExp(`<span class="label">${label}</span>\\s*<span class="value">([^<]+)<`).exec(html)?.[1];
const HOUR = 3_600_000;

describe('cluster: statistics summed over the instances', () => {
  let redis: RedisServer;
  let fake: FakeBackend;
  let a: TestGateway;
  let b: TestGateway;

  before(async () => {
    redis = await startRedis();
    fake = await startFake('vllm');
    const start = (id: string) =>
      startGateway([{ name: 'llm', url: fake.url }], {
        api_key: MASTER,
        cluster: { redis_url: redis.url, instance_id: id },
      });
    a = await start('stats-a');
    b = await start('stats-b');
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await fake?.close();
    await redis?.stop();
  });

  const chat = async (gw: TestGateway, n: number) => {
    for (let i = 0; i < n; i++) {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: fake.models[0], messages: [{ role: 'user', content: `call ${i}` }] }),
      });
      assert.equal(res.status, 200);
      await res.text();
    }
  };

  test('each instance its own; the sum is the sum of both, percentiles per instance', async () => {
    await chat(a, 3);
    await chat(b, 5);
    const hour = Math.floor(Date.now() / HOUR) * HOUR;
    const range = { since: hour - 23 * HOUR, until: hour + HOUR, step: 'hour' as const };
    await waitFor(async () => (await a.gateway.callLog.summary(range)).total.calls === 3, 'A logged its calls');
    await waitFor(async () => (await b.gateway.callLog.summary(range)).total.calls === 5, 'B logged its calls');
    const [sa, sb] = [await a.gateway.callLog.summary(range), await b.gateway.callLog.summary(range)];

    const ui = await UiClient.login(a, MASTER);
    const own = await ui.html('/ui/stats?range=24h');
    assert.match(own, /Instance <code>stats-a<\/code>: its own call log only/);
    assert.equal(card(own, 'Calls'), '3');
    assert.match(own, /name="instances" value="all">/, 'the toggle, unchecked');

    const all = await ui.html('/ui/stats?range=24h&instances=all');
    assert.match(all, /<strong>All instances<\/strong>/);
    assert.equal(card(all, 'Calls'), String(sa.total.calls + sb.total.calls));
    assert.equal(
      card(all, 'Tokens in / out'),
      (sa.total.prompt_tokens + sb.total.prompt_tokens).toLocaleString('en-US'),
    );
    assert.equal(card(all, 'Duration p50 / p95'), '–', 'no summed percentile');
    assert.match(all, /percentiles \(duration and time to first token\) do not/);
    assert.match(all, /<code>stats-a<\/code> <span class="muted">\(this one\)<\/span><\/th>\s*<td>3<\/td>/);
    assert.match(all, /<code>stats-b<\/code><\/th>\s*<td>5<\/td>/);
    assert.match(all, /aria-current="true">24 h/);
    assert.match(all, /href="\/ui\/stats\?range=7d&amp;instances=all"/, 'the presets keep the sum');

    const summed = sumSummaries([sa, sb]);
    for (const k of ['calls', 'errors', 'prompt_tokens', 'completion_tokens', 'cost_usd'] as const)
      assert.equal(summed.total[k], sa.total[k] + sb.total[k], k);
    assert.equal(summed.total.p50_ms, null);
    assert.deepEqual(
      summed.series.map((p) => p.calls),
      sa.series.map((p, i) => p.calls + sb.series[i]!.calls),
      'per period too',
    );
    assert.equal(summed.backend.find((g) => g.key === 'llm')?.calls, 8);

    // a peer down: it is named as missing from the sum, not silently left out
    await b.close();
    b = undefined as unknown as TestGateway;
    const alone = await ui.html('/ui/stats?range=24h&instances=all');
    assert.equal(card(alone, 'Calls'), '3');
    assert.doesNotMatch(alone, /stats-b/, 'a closed instance is no longer alive');
    // one that still counts as alive but does not answer is listed as missing from the sum
    const raw = new Redis(redis.url);
    await raw.zadd('llmgw:alive', Date.now() + 60_000, 'stats-ghost');
    await raw.hset('llmgw:instance-urls', 'stats-ghost', `http://127.0.0.1:${await freePort()}`);
    raw.disconnect();
    const ghost = await ui.html('/ui/stats?range=24h&instances=all');
    assert.equal(card(ghost, 'Calls'), '3');
    assert.match(ghost, /<code>stats-ghost<\/code><\/th>\s*<td colspan="6" class="bad">not in the sum: unreachable/);
  });

  test("the peers' summary route is for peers only", async () => {
    const res = await fetch(`${a.url}/cluster/api/stats-summary?since=0&until=1&step=day`, {
      headers: { authorization: `Bearer ${MASTER}` },
    });
    assert.equal(res.status, 404);
  });
});
