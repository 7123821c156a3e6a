/**
 * Money adds up over real sockets: a paid backend whose /v1/models publishes no prices (OpenAI's
 * and Anthropic's own APIs) is billed at the built-in table's prices, cache reads and writes at
 * their own; a backend's `pricing:` (glob patterns, the most specific wins) beats discovered
 * prices; a USD quota trips after a priced call; /health (admin) says where each price came from.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ANTHROPIC_FAKE_API_KEY, startAnthropicFake, startFake } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const MASTER = 'master-key-0123456789';
const admin = { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' };
type After = { after: (fn: () => Promise<void>) => void };
type ChatUsage = { prompt_tokens: number; completion_tokens: number };
type HealthPricing = { sources: Record<string, number>; models: Record<string, any> };

/** USD per million tokens × tokens, the way a provider bills it. */
const usd = (pairs: [tokens: number, perMillion: number][]) => pairs.reduce((sum, [n, p]) => sum + n * p, 0) / 1e6;

/** A chat answer's tokens at these input and output prices. */
const billed = (u: ChatUsage | undefined, input: number, output: number) =>
  usd([
    [u!.prompt_tokens, input],
    [u!.completion_tokens, output],
  ]);

function assertUsd(actual: number, expected: number, what: string): void {
  assert.ok(expected > 0, `${what}: the expected cost is not zero`);
  assert.ok(Math.abs(actual - expected) < 1e-12, `${what}: logged ${actual}, expected ${expected}`);
}

async function chat(gw: TestGateway, model: string, key = MASTER) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'word '.repeat(40) }] }),
  });
  const body = (await res.json()) as { usage?: ChatUsage; error?: { code?: string } };
  return { status: res.status, body };
}

/** The call-log row of the last call to `backend`, once it is queued. */
async function lastRow(gw: TestGateway, backend: string, count: number) {
  await waitFor(() => gw.gateway.callLog.recent({ backend }).length >= count, `row ${count} of ${backend}`);
  return gw.gateway.callLog.recent({ backend })[0];
}

async function health(gw: TestGateway) {
  const res = await fetch(`${gw.url}/health`, { headers: admin });
  assert.equal(res.status, 200);
  return (await res.json()) as { backends: Record<string, { pricing?: HealthPricing }> };
}

describe('pricing', () => {
  test('a paid OpenAI-kind backend with no prices in /v1/models is billed at the built-in price', async (t: After) => {
    const openai = await startFake('vllm', { models: ['gpt-4o', 'gpt-4o-mini-2024-07-18', 'gpt-4o-audio-preview'] });
    const gw = await startGateway([{ name: 'oai', url: openai.url, paid: true }], { api_key: MASTER });
    t.after(async () => {
      await gw.close();
      await openai.close();
    });

    const a = await chat(gw, 'oai/gpt-4o');
    assert.equal(a.status, 200);
    const rowA = await lastRow(gw, 'oai', 1);
    assertUsd(rowA.cost_usd, billed(a.body.usage, 2.5, 10), 'gpt-4o');

    const b = await chat(gw, 'oai/gpt-4o-mini-2024-07-18');
    const rowB = await lastRow(gw, 'oai', 2);
    assert.equal(rowB.model, 'gpt-4o-mini-2024-07-18');
    assertUsd(rowB.cost_usd, billed(b.body.usage, 0.15, 0.6), 'a dated snapshot');

    const h = (await health(gw)).backends.oai.pricing!;
    assert.deepEqual(h.sources, { config: 0, discovered: 0, 'built-in': 2, none: 1 });
    const gpt4o = { source: 'built-in', input: 2.5, output: 10, cache_read: 1.25, matched: 'gpt-4o' };
    assert.deepEqual(h.models['gpt-4o'], gpt4o);
    assert.equal(h.models['gpt-4o-mini-2024-07-18'].matched, 'gpt-4o-mini-20??-??-??');
    assert.deepEqual(h.models['gpt-4o-audio-preview'], { source: 'none' }, 'a variant priced otherwise is not guessed');
  });

  test('embeddings on a paid OpenAI-kind backend are billed at the built-in input price', async (t: After) => {
    const openai = await startFake('vllm', { models: ['text-embedding-3-small'] });
    const gw = await startGateway([{ name: 'oai', url: openai.url, paid: true }], { api_key: MASTER });
    t.after(async () => {
      await gw.close();
      await openai.close();
    });
    const res = await fetch(`${gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ model: 'oai/text-embedding-3-small', input: ['word '.repeat(50), 'other words'] }),
    });
    assert.equal(res.status, 200);
    const usage = ((await res.json()) as { usage: { prompt_tokens: number } }).usage;
    const row = await lastRow(gw, 'oai', 1);
    assertUsd(row.cost_usd, usd([[usage.prompt_tokens, 0.02]]), 'text-embedding-3-small');
  });

  test('an Anthropic backend is billed at the built-in price, cache reads and writes at theirs', async (t: After) => {
    const claude = await startAnthropicFake({ knobs: { cacheReadTokens: 1200, cacheWriteTokens: 300 } });
    const gw = await startGateway(
      [{ name: 'claude', url: claude.url, type: 'anthropic', api_key: ANTHROPIC_FAKE_API_KEY, paid: true }],
      { api_key: MASTER },
    );
    t.after(async () => {
      await gw.close();
      await claude.close();
    });
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { ...admin, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: 'claude/claude-sonnet-4-5-20250929',
        max_tokens: 64,
        system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
        messages: [{ role: 'user', content: 'hello there' }],
      }),
    });
    assert.equal(res.status, 200);
    const u = ((await res.json()) as { usage: Record<string, number> }).usage;
    assert.equal(u.cache_read_input_tokens, 1200);
    const row = await lastRow(gw, 'claude', 1);
    assertUsd(
      row.cost_usd,
      usd([
        [u.input_tokens, 3],
        [u.cache_read_input_tokens, 0.3],
        [u.cache_creation_input_tokens, 3.75],
        [u.output_tokens, 15],
      ]),
      'claude-sonnet-4-5',
    );

    // streamed: the usage comes in message_start (input, cache) and message_delta (output)
    const streamed = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { ...admin, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: 'claude/claude-haiku-4-5-20251001',
        max_tokens: 64,
        stream: true,
        system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
        messages: [{ role: 'user', content: 'hello again' }],
      }),
    });
    const lines = (await streamed.text()).split('\n').filter((l) => l.startsWith('data: '));
    const events = lines.map((l) => JSON.parse(l.slice(6)));
    const start = events.find((e) => e.type === 'message_start').message.usage as Record<string, number>;
    const output = events.filter((e) => e.type === 'message_delta').at(-1).usage.output_tokens as number;
    const streamedRow = await lastRow(gw, 'claude', 2);
    assert.equal(streamedRow.cached_tokens, 1200);
    assertUsd(
      streamedRow.cost_usd,
      usd([
        [start.input_tokens, 1],
        [1200, 0.1],
        [300, 1.25],
        [output, 5],
      ]),
      'claude-haiku-4-5, streamed',
    );

    const h = (await health(gw)).backends.claude.pricing!;
    assert.equal(h.models['claude-sonnet-4-5-20250929'].source, 'built-in');
    assert.equal(h.models['claude-opus-4-1-20250805'].input, 15, 'Opus 4.1 is on the old tier');
    assert.equal(h.models['claude-haiku-4-5-20251001'].output, 5);
  });

  test('pricing: in config beats discovered prices; the most specific pattern wins', async (t: After) => {
    const together = await startFake('together');
    const pricing = {
      'acme/*': { input: 7, output: 11 },
      'acme/Llama-3-70B*': { input: 1, output: 2, cache_read: 0.5 },
    };
    const gw = await startGateway([{ name: 'tg', url: together.url, paid: true, pricing }], { api_key: MASTER });
    t.after(async () => {
      await gw.close();
      await together.close();
    });
    const id = 'acme/Llama-3-70B-Instruct-Turbo';
    const discovered = gw.gateway.registry.get('tg')!.modelsById.get(id)!.pricing!;
    assert.ok(discovered.input > 0 && discovered.input !== 1, 'the backend publishes a price of its own');

    const r = await chat(gw, `tg/${id}`);
    assert.equal(r.status, 200);
    const row = await lastRow(gw, 'tg', 1);
    assertUsd(row.cost_usd, billed(r.body.usage, 1, 2), 'the longer pattern');

    const h = (await health(gw)).backends.tg.pricing!;
    const longer = { source: 'config', input: 1, output: 2, cache_read: 0.5, matched: 'acme/Llama-3-70B*' };
    assert.deepEqual(h.models[id], longer);
    assert.ok(Object.keys(h.models).length > 1, 'the backend lists other models');
    for (const [model, view] of Object.entries(h.models)) {
      if (model !== id) assert.deepEqual(view, { source: 'config', input: 7, output: 11, matched: 'acme/*' }, model);
    }
  });

  test('a configured price on a model nothing else prices; on a free backend the cost stays 0', async (t: After) => {
    const box = await startFake('vllm', { models: ['gpt-4o', 'local-model'] });
    const gw = await startGateway(
      [
        { name: 'paid', url: box.url, paid: true, pricing: { 'local-*': { input: 4, output: 8 } } },
        { name: 'free', url: box.url, paid: false, pricing: { '*': { input: 4, output: 8 } } },
      ],
      { api_key: MASTER },
    );
    t.after(async () => {
      await gw.close();
      await box.close();
    });
    const r = await chat(gw, 'paid/local-model');
    assertUsd((await lastRow(gw, 'paid', 1)).cost_usd, billed(r.body.usage, 4, 8), 'config');
    assert.equal((await chat(gw, 'free/gpt-4o')).status, 200);
    assert.equal((await lastRow(gw, 'free', 1)).cost_usd, 0, 'a free backend costs nothing whatever its prices');
    const h = await health(gw);
    assert.equal(h.backends.free.pricing!.models['gpt-4o'].source, 'config');
    assert.equal(h.backends.paid.pricing!.models['gpt-4o'].source, 'built-in');
  });

  test('a USD quota trips after a call priced by the built-in table', async (t: After) => {
    const openai = await startFake('vllm', { models: ['gpt-5'] });
    const gw = await startGateway([{ name: 'oai', url: openai.url, paid: true }], { api_key: MASTER });
    t.after(async () => {
      await gw.close();
      await openai.close();
    });
    const created = await fetch(`${gw.url}/admin/api/users`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ name: 'u', quota_cost_month: 0.00001 }),
    });
    assert.equal(created.status, 201);
    const user = (await created.json()) as { key: string };
    const first = await chat(gw, 'oai/gpt-5', user.key);
    assert.equal(first.status, 200);
    const spent = billed(first.body.usage, 1.25, 10);
    assert.ok(spent > 0.00001, `the first call (${spent} USD) spends the whole budget`);
    await lastRow(gw, 'oai', 1);
    const second = await chat(gw, 'oai/gpt-5', user.key);
    assert.equal(second.status, 429);
    assert.equal(second.body.error?.code, 'insufficient_quota');
  });
});
