import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ModelPricing } from '../src/backends/types.ts';
import { computeCost, effectiveCost, type CostOptions, type TokenUsage } from '../src/stats/cost.ts';
import { usageFromAnthropic, usageFromOpenAI } from '../src/wire/usage.ts';
import { readFixture, readFixtureJson } from './helpers/fixtures.ts';

/** anthropic/claude-sonnet-4.6 on OpenRouter, per million tokens (checked against the fixture below). */
const SONNET: ModelPricing = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 };
const NO_CACHE_PRICES: ModelPricing = { input: 2, output: 8 };
const OPENAI: CostOptions = { local: false, shape: 'openai' };
const ANTHROPIC: CostOptions = { local: false, shape: 'anthropic' };

function close(actual: number, expected: number, msg?: string) {
  assert.ok(Math.abs(actual - expected) < 1e-12, `${msg ?? ''} expected ${expected}, got ${actual}`);
}

describe('computeCost', () => {
  const cases: {
    name: string;
    usage: TokenUsage;
    pricing: ModelPricing | undefined;
    opts: CostOptions;
    usd: number;
  }[] = [
    {
      name: 'local backend is free',
      usage: { prompt_tokens: 1e6, completion_tokens: 1e6 },
      pricing: SONNET,
      opts: { local: true, shape: 'openai' },
      usd: 0,
    },
    {
      name: 'no pricing is free',
      usage: { prompt_tokens: 1e6, completion_tokens: 1e6 },
      pricing: undefined,
      opts: OPENAI,
      usd: 0,
    },
    {
      name: 'plain input and output',
      usage: { prompt_tokens: 1_000_000, completion_tokens: 100_000 },
      pricing: SONNET,
      opts: OPENAI,
      usd: 3 + 1.5,
    },
    // OpenAI shape: prompt 10,000 INCLUDES 8,000 cached → 2,000 fresh.
    {
      name: 'openai: cached tokens at cache_read price',
      usage: { prompt_tokens: 10_000, completion_tokens: 0, cached_tokens: 8_000 },
      pricing: SONNET,
      opts: OPENAI,
      usd: (2_000 * 3 + 8_000 * 0.3) / 1e6,
    },
    {
      name: 'openai: cache writes at cache_write price',
      usage: { prompt_tokens: 10_000, completion_tokens: 0, cached_tokens: 6_000, cache_write_tokens: 3_000 },
      pricing: SONNET,
      opts: OPENAI,
      usd: (1_000 * 3 + 6_000 * 0.3 + 3_000 * 3.75) / 1e6,
    },
    {
      name: 'openai: unknown cache prices fall back to input',
      usage: { prompt_tokens: 10_000, completion_tokens: 1_000, cached_tokens: 4_000, cache_write_tokens: 1_000 },
      pricing: NO_CACHE_PRICES,
      opts: OPENAI,
      usd: (10_000 * 2 + 1_000 * 8) / 1e6,
    },
    // Anthropic shape: input_tokens 2,000 EXCLUDES the cache counts.
    {
      name: 'anthropic: input excludes cache reads and writes',
      usage: { prompt_tokens: 2_000, completion_tokens: 500, cached_tokens: 8_000, cache_write_tokens: 1_000 },
      pricing: SONNET,
      opts: ANTHROPIC,
      usd: (2_000 * 3 + 8_000 * 0.3 + 1_000 * 3.75 + 500 * 15) / 1e6,
    },
    {
      name: 'openai: cached larger than prompt never goes negative',
      usage: { prompt_tokens: 100, completion_tokens: 0, cached_tokens: 500 },
      pricing: SONNET,
      opts: OPENAI,
      usd: (500 * 0.3) / 1e6,
    },
    {
      name: 'garbage counts are 0',
      usage: { prompt_tokens: Number.NaN, completion_tokens: -5 },
      pricing: SONNET,
      opts: OPENAI,
      usd: 0,
    },
  ];
  for (const c of cases) {
    test(c.name, () => close(computeCost(c.usage, c.pricing, c.opts), c.usd));
  }

  test('same call, either shape, same price', () => {
    const openaiShape = {
      prompt_tokens: 11_000,
      completion_tokens: 500,
      cached_tokens: 8_000,
      cache_write_tokens: 1_000,
    };
    const anthropicShape = {
      prompt_tokens: 2_000,
      completion_tokens: 500,
      cached_tokens: 8_000,
      cache_write_tokens: 1_000,
    };
    close(computeCost(openaiShape, SONNET, OPENAI), computeCost(anthropicShape, SONNET, ANTHROPIC));
  });

  test('a real-looking agent session: cache reads dominate, the naive formula overstates ~5x', () => {
    // 40 turns of a coding agent: the conversation prefix is re-read from the cache each turn,
    // each turn writes its new tail (tool output) to the cache and adds a short fresh message.
    const turns = Array.from({ length: 40 }, (_, i) => ({
      input_tokens: 400,
      cache_read_input_tokens: 20_000 + i * 2_000,
      cache_creation_input_tokens: 2_000,
      output_tokens: 600,
    }));
    let correct = 0;
    let naive = 0;
    for (const t of turns) {
      const u = usageFromAnthropic({ usage: t })!;
      correct += computeCost(u, SONNET, OPENAI);
      // the reference implementation's mistake: every prompt token billed as fresh input
      naive += computeCost({ prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens }, SONNET, OPENAI);
    }
    // by hand: reads = 40*20,000 + 2,000*(0+…+39) = 2,360,000; writes 80,000; fresh 16,000; out 24,000
    close(correct, (16_000 * 3 + 2_360_000 * 0.3 + 80_000 * 3.75 + 24_000 * 15) / 1e6);
    close(correct, 1.416);
    close(naive, ((16_000 + 2_360_000 + 80_000) * 3 + 24_000 * 15) / 1e6);
    const overstatement = naive / correct;
    assert.ok(overstatement > 5 && overstatement < 6, `naive/correct = ${overstatement}`);
  });

  test('pricing used above matches the OpenRouter fixture', () => {
    const models = readFixtureJson<{ data: { id: string; pricing: Record<string, string> }[] }>(
      'llm/openrouter/api_v1_models_selection.json',
    );
    const p = models.data.find((m) => m.id === 'anthropic/claude-sonnet-4.6')!.pricing;
    const perMillion = (s: string) => Math.round(Number(s) * 1e6 * 1e6) / 1e6;
    assert.deepEqual(
      {
        input: perMillion(p.prompt),
        output: perMillion(p.completion),
        cache_read: perMillion(p.input_cache_read),
        cache_write: perMillion(p.input_cache_write),
      },
      SONNET,
    );
  });
});

// The request path reads usage with upstream/usage.ts; these pin what the cost needs from it.
describe('usage as the call log reads it', () => {
  const openai = (usage: object) => usageFromOpenAI({ usage });

  test('OpenAI chat: prompt_tokens includes cached_tokens', () => {
    assert.deepEqual(
      openai({ prompt_tokens: 1200, completion_tokens: 30, prompt_tokens_details: { cached_tokens: 1024 } }),
      { prompt_tokens: 1200, completion_tokens: 30, total_tokens: 1230, cached_tokens: 1024 },
    );
  });

  test('OpenRouter: usage.cost and cache_write_tokens', () => {
    assert.deepEqual(
      openai({
        prompt_tokens: 5000,
        completion_tokens: 100,
        cost: 0.0123,
        prompt_tokens_details: { cached_tokens: 3000, cache_write_tokens: 1500 },
      }),
      {
        prompt_tokens: 5000,
        completion_tokens: 100,
        total_tokens: 5100,
        cached_tokens: 3000,
        cache_write_tokens: 1500,
        cost: 0.0123,
      },
    );
  });

  test('DeepSeek prompt_cache_hit_tokens', () => {
    assert.equal(
      openai({ prompt_tokens: 900, completion_tokens: 9, prompt_cache_hit_tokens: 640, prompt_cache_miss_tokens: 260 })!
        .cached_tokens,
      640,
    );
  });

  test('cache counts never exceed the prompt', () => {
    const u = openai({
      prompt_tokens: 100,
      completion_tokens: 1,
      prompt_tokens_details: { cached_tokens: 150, cache_write_tokens: 50 },
    })!;
    assert.equal(u.cached_tokens, 100);
    assert.equal(u.cache_write_tokens, 0);
  });

  test('missing or malformed usage is no usage; a malformed cost is ignored', () => {
    assert.equal(usageFromOpenAI({}), undefined);
    assert.equal(usageFromAnthropic({ usage: { input_tokens: 'x' } }), undefined);
    assert.equal(openai({ prompt_tokens: 10, cost: 'free' })!.cost, undefined);
  });

  test('Anthropic: cache counts are added to input_tokens', () => {
    assert.deepEqual(
      usageFromAnthropic({
        usage: {
          input_tokens: 12,
          cache_read_input_tokens: 40_000,
          cache_creation_input_tokens: 900,
          output_tokens: 77,
        },
      }),
      {
        prompt_tokens: 40_912,
        completion_tokens: 77,
        total_tokens: 40_989,
        cached_tokens: 40_000,
        cache_write_tokens: 900,
      },
    );
  });

  const usageEvents = (rel: string) =>
    readFixture(rel)
      .split('\n')
      .filter((l) => l.startsWith('data: {'))
      .map((l) => JSON.parse(l.slice(6)) as Record<string, any>);

  test('real Anthropic stream: message_start input + message_delta output', () => {
    const events = usageEvents('llm/anthropic/messages_stream_thinking.sse.txt');
    const start = events.find((e) => e.type === 'message_start')!.message.usage;
    const delta = events.findLast((e) => e.type === 'message_delta')!.usage;
    const u = usageFromAnthropic({ usage: { ...start, ...delta } })!;
    assert.equal(u.prompt_tokens, 69);
    assert.equal(u.completion_tokens, 53);
    assert.equal(u.cached_tokens ?? 0, 0);
  });

  test('real OpenAI chat stream usage chunk and Responses usage', () => {
    const chat = usageEvents('llm/openai/chat_completions_stream_tool_call_usage.sse.txt').findLast(
      (e) => e.usage,
    )!.usage;
    const fromChat = openai(chat)!;
    assert.deepEqual([fromChat.prompt_tokens, fromChat.completion_tokens, fromChat.cached_tokens ?? 0], [44, 16, 0]);
    const completed = usageEvents('llm/openai/responses_stream_text.sse.txt').find(
      (e) => e.type === 'response.completed',
    )!;
    const u = openai(completed.response.usage)!;
    assert.equal(u.prompt_tokens, completed.response.usage.input_tokens);
    assert.equal(u.completion_tokens, completed.response.usage.output_tokens);
    assert.ok(u.prompt_tokens > 0 && u.completion_tokens > 0);
  });
});

describe('effectiveCost', () => {
  test('upstream-reported cost wins; otherwise the computed one', () => {
    assert.equal(effectiveCost({ cost_usd: 0.5, upstream_cost_usd: 0.42 }), 0.42);
    assert.equal(effectiveCost({ cost_usd: 0.5, upstream_cost_usd: null }), 0.5);
    assert.equal(effectiveCost({ cost_usd: 0.5, upstream_cost_usd: 0 }), 0);
    assert.equal(effectiveCost({ cost_usd: Number.NaN, upstream_cost_usd: null }), 0);
  });
});
