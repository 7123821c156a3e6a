/**
 * Every call on record, over real sockets: answered (streamed or not) with tokens, cache-aware
 * cost and ttft; refused; aborted and dropped streams; quotas that survive a restart; /metrics.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startFake } from './fakes/index.ts';
import { startGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const post = (url: string, body: object, headers: Record<string, string> = {}) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

describe('call log', () => {
  test('answered, refused, aborted and dropped calls are all on record', async (t) => {
    const cloud = await startFake('openrouter', { models: ['acme/chat-large'] });
    const gpu = await startFake('llamacpp', { models: ['qwen3-8b'] });
    const gw = await startGateway(
      [
        { name: 'or', url: cloud.url, paid: true },
        { name: 'gpu', url: gpu.url },
      ],
      { capture_bodies: true },
    );
    t.after(async () => {
      await gw.close();
      await cloud.close();
      await gpu.close();
    });
    const log = gw.gateway.callLog;

    // non-streamed, paid, with prompt-cache hits billed at the cache price
    cloud.setKnobs({ cachedPromptTokens: 40 });
    const long = 'word '.repeat(200);
    const r1 = await post(
      gw.url,
      { model: 'or/acme/chat-large', messages: [{ role: 'user', content: long }] },
      { 'x-source': 'n8n' },
    );
    assert.equal(r1.status, 200);
    const answer = (await r1.json()) as { usage: { prompt_tokens: number; completion_tokens: number; cost: number } };
    const [paid] = log.recent({ backend: 'or' });
    assert.equal(paid.status, 200);
    assert.equal(paid.source, 'n8n');
    assert.equal(cloud.requests.at(-1)!.headers['x-source'], undefined, 'the attribution header stays in the gateway');
    assert.equal(paid.prompt_tokens, answer.usage.prompt_tokens);
    assert.equal(paid.completion_tokens, answer.usage.completion_tokens);
    assert.equal(paid.cached_tokens, 40);
    const expected = ((answer.usage.prompt_tokens - 40) * 3 + 40 * 0.3 + answer.usage.completion_tokens * 15) / 1e6;
    assert.ok(Math.abs(paid.cost_usd - expected) < 1e-12, `cost ${paid.cost_usd} vs ${expected}`);
    assert.equal(paid.upstream_cost_usd, answer.usage.cost);
    assert.equal(paid.requested_model, 'or/acme/chat-large');
    assert.equal(paid.model, 'acme/chat-large');
    assert.equal(paid.endpoint, '/v1/chat/completions');
    assert.equal(paid.has_bodies, true);

    // streamed, local (costs nothing), ttft recorded, usage known although the client did not ask
    const r2 = await post(gw.url, { model: 'gpu/qwen3-8b', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    await r2.text();
    await waitFor(() => log.recent({ backend: 'gpu' }).length === 1, 'streamed row');
    const [streamed] = log.recent({ backend: 'gpu' });
    assert.equal(streamed.status, 200);
    assert.equal(streamed.completion_tokens, gpu.knobs.chunkCount);
    assert.ok(streamed.prompt_tokens > 0);
    assert.equal(streamed.cost_usd, 0);
    assert.ok(streamed.ttft_ms !== null && streamed.ttft_ms <= streamed.duration_ms);

    // refused: unknown model
    assert.equal((await post(gw.url, { model: 'nope', messages: [] })).status, 404);
    const [refused] = log.recent({ status: 404 });
    assert.equal(refused.backend, '(refused)');
    assert.equal(refused.reason, 'unknown_model');

    // aborted by the client mid-stream: 499 with what was delivered
    gpu.setKnobs({ tokensPerSecond: 40, chunkCount: 200 });
    const r3 = await post(gw.url, {
      model: 'gpu/qwen3-8b',
      stream: true,
      messages: [{ role: 'user', content: 'long' }],
    });
    const reader = r3.body!.getReader();
    await reader.read();
    await reader.read();
    await reader.cancel();
    await waitFor(() => log.recent({ status: 499 }).length === 1, 'aborted row');
    const [aborted] = log.recent({ status: 499 });
    assert.equal(aborted.backend, 'gpu');
    assert.ok(aborted.completion_tokens > 0 && aborted.completion_tokens < 200, String(aborted.completion_tokens));

    // dropped by the backend mid-stream: 502
    gpu.setKnobs({ tokensPerSecond: 0, chunkCount: 10, dropAfterChunks: 4 });
    await (
      await post(gw.url, { model: 'gpu/qwen3-8b', stream: true, messages: [{ role: 'user', content: 'x' }] })
    ).text();
    await waitFor(() => log.recent({ status: 502 }).length === 1, 'dropped row');
    assert.equal(log.recent({ status: 502 })[0].completion_tokens, 4);

    // the admin API shows the same rows, and aggregates what is on disk
    await log.flush();
    const calls = (await (await fetch(`${gw.url}/admin/api/calls?limit=10`)).json()) as { data: { status: number }[] };
    assert.equal(calls.data.length, 5);
    const stats = (await (await fetch(`${gw.url}/admin/api/stats?group=backend`)).json()) as {
      data: { key: string; calls: number }[];
    };
    assert.deepEqual(Object.fromEntries(stats.data.map((r) => [r.key, r.calls])), { '(refused)': 1, gpu: 3, or: 1 });
    assert.equal((await fetch(`${gw.url}/admin/api/stats?group=nope`)).status, 400);
  });

  test('day quota: the N-th call passes, the next is 429 with Retry-After, also after a restart', async (t) => {
    const fake = await startFake('vllm', { models: ['m'] });
    const first = await startGateway([{ name: 'v', url: fake.url }], { api_key: 'master-key-0123456789' });
    const storeDir = first.storeDir;
    const admin = { authorization: 'Bearer master-key-0123456789', 'content-type': 'application/json' };
    const user = (await (
      await fetch(`${first.url}/admin/api/users`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({ name: 'kid', quota_req_day: 3 }),
      })
    ).json()) as { key: string };
    const call = (url: string) =>
      post(url, { model: 'v/m', messages: [{ role: 'user', content: 'x' }] }, { authorization: `Bearer ${user.key}` });
    for (let i = 0; i < 3; i++) assert.equal((await call(first.url)).status, 200, `call ${i + 1}`);
    const over = await call(first.url);
    assert.equal(over.status, 429);
    const retryAfter = Number(over.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 86_400, String(retryAfter));
    const body = (await over.json()) as { error: { code: string; type: string } };
    assert.equal(body.error.code, 'insufficient_quota');
    assert.equal(body.error.type, 'insufficient_quota');
    await first.app.close();

    const again = await startGateway(
      [{ name: 'v', url: fake.url }],
      { api_key: 'master-key-0123456789' },
      { storeDir },
    );
    t.after(async () => {
      await again.close();
      await fake.close();
    });
    assert.equal((await call(again.url)).status, 429, 'the count survived the restart');
  });

  test('day quota under concurrency: of six simultaneous calls at a limit of three, exactly three pass', async (t) => {
    const fake = await startFake('vllm', { models: ['m'], knobs: { latencyMs: 150 } });
    const gw = await startGateway([{ name: 'v', url: fake.url }], { api_key: 'master-key-0123456789' });
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    const admin = { authorization: 'Bearer master-key-0123456789', 'content-type': 'application/json' };
    const user = (await (
      await fetch(`${gw.url}/admin/api/users`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({ name: 'burst', quota_req_day: 3 }),
      })
    ).json()) as { id: number; key: string };
    const statuses = await Promise.all(
      Array.from({ length: 6 }, () =>
        post(
          gw.url,
          { model: 'v/m', messages: [{ role: 'user', content: 'x' }] },
          { authorization: `Bearer ${user.key}` },
        ).then(async (r) => {
          await r.text();
          return r.status;
        }),
      ),
    );
    assert.deepEqual([...statuses].sort(), [200, 200, 200, 429, 429, 429]);
    assert.equal(gw.gateway.callLog.quotas.inflight(user.id), 0, 'nothing left counted as running');
  });

  test('/metrics is Prometheus text and moves with traffic', async (t) => {
    const fake = await startFake('ollama', { models: ['m'] });
    const gw = await startGateway([{ name: 'o', url: fake.url }]);
    t.after(async () => {
      await gw.close();
      await fake.close();
    });
    const scrape = async () => {
      const res = await fetch(`${gw.url}/metrics`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type')!, /^text\/plain/);
      return parseProm(await res.text());
    };
    const before = await scrape();
    assert.equal(before.get('llm_gateway_backend_up{backend="o"}'), 1);
    for (let i = 0; i < 3; i++)
      await (await post(gw.url, { model: 'o/m', messages: [{ role: 'user', content: 'x' }] })).text();
    const after = await scrape();
    const key = 'llm_gateway_requests_total{endpoint="/v1/chat/completions",backend="o",status="200"}';
    assert.equal((after.get(key) ?? 0) - (before.get(key) ?? 0), 3);
    assert.ok((after.get('llm_gateway_tokens_total{backend="o",direction="out"}') ?? 0) > 0);
  });
});

/** A strict little parser: every sample line is `name{labels} value`; HELP/TYPE lines precede. */
function parseProm(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  const typed = new Set<string>();
  for (const line of text.split('\n')) {
    if (!line) continue;
    const meta = /^# (HELP|TYPE) (\w+) /.exec(line);
    if (meta) {
      if (meta[1] === 'TYPE') typed.add(meta[2]);
      continue;
    }
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})? (-?[\d.e+-]+|NaN|\+Inf|-Inf)$/.exec(line);
    assert.ok(m, `not a Prometheus sample line: ${line}`);
    const base = m[1].replace(/_(bucket|sum|count)$/, '');
    assert.ok(typed.has(m[1]) || typed.has(base), `no TYPE for ${m[1]}`);
    samples.set(m[1] + (m[2] ?? ''), Number(m[3]));
  }
  return samples;
}
