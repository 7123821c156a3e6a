/**
 * The rules of backends/pricing.ts (config → discovered → built-in → none; the exact id, else
 * the longest pattern, else the first of equal length), `pricing:` in config.yaml and in the
 * admin API's backend body (validated, stored, billed at), and the built-in table's sanity.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { callPricing, pricingReport, resolvePrice, type PricedSpec } from '../src/backends/pricing.ts';
import type { ModelInfo } from '../src/backends/types.ts';
import { BUILT_IN_PRICES } from '../src/backends/price-table.ts';
import { createConfigValidator, validateConfig } from '../src/config/schema.ts';
import { startFake } from './fakes/index.ts';
import { adminApi } from './helpers/admin-api.ts';
import { startGateway } from './helpers/gateway.ts';
import { waitFor } from './helpers/wait.ts';

const p = (input: number, output: number) => ({ input, output });
const spec = (over: Partial<PricedSpec> = {}): PricedSpec => ({ type: 'openai', paid: true, ...over });

describe('resolvePrice', () => {
  test('the exact id beats every pattern; else the longest pattern; equal lengths: the first', () => {
    const pricing = { 'gpt-*': p(1, 1), 'gpt-4o*': p(2, 2), 'gpt-4o': p(3, 3), 'gpt-?o*': p(4, 4), 'x*': p(5, 5) };
    const s = spec({ pricing });
    assert.deepEqual(resolvePrice(s, 'gpt-4o'), { pricing: p(3, 3), source: 'config', matched: 'gpt-4o' });
    assert.equal(resolvePrice(s, 'gpt-4o-mini')?.matched, 'gpt-4o*', 'as long as gpt-?o*: the first wins');
    assert.deepEqual(resolvePrice(s, 'gpt-5')?.pricing, p(1, 1));
    const first = (pricing: Record<string, ReturnType<typeof p>>) => resolvePrice(spec({ pricing }), 'ab')?.matched;
    assert.equal(first({ 'a*': p(1, 1), '*b': p(2, 2) }), 'a*', 'equal lengths: table order');
    assert.equal(first({ '*b': p(2, 2), 'a*': p(1, 1) }), '*b');
  });

  test('config beats discovered beats built-in; the built-in table only for paid LLM kinds', () => {
    const discovered = p(9, 9);
    assert.equal(resolvePrice(spec({ pricing: { '*': p(1, 1) } }), 'gpt-4o', discovered)?.source, 'config');
    const elsewhere = spec({ pricing: { other: p(1, 1) } });
    assert.deepEqual(resolvePrice(elsewhere, 'gpt-4o', discovered), { pricing: discovered, source: 'discovered' });
    assert.equal(resolvePrice(spec(), 'gpt-4o')?.source, 'built-in');
    assert.equal(resolvePrice(spec({ type: 'anthropic' }), 'claude-haiku-4-5')?.pricing.input, 1);
    assert.equal(resolvePrice(spec({ paid: false }), 'gpt-4o'), undefined, 'a free box serving a model called gpt-4o');
    assert.equal(resolvePrice(spec({ type: 'comfyui' }), 'gpt-4o'), undefined);
    assert.equal(resolvePrice(spec(), 'my-finetune'), undefined);
  });

  test('built-in: the most specific family wins, and dated snapshots are priced like their id', () => {
    const price = (type: 'openai' | 'anthropic', id: string) => resolvePrice(spec({ type }), id)?.pricing;
    assert.equal(price('anthropic', 'claude-opus-4-1-20250805')?.input, 15);
    assert.equal(price('anthropic', 'claude-opus-4-20250514')?.input, 15);
    assert.equal(price('anthropic', 'claude-opus-4-5-20251101')?.input, 5);
    assert.equal(price('anthropic', 'claude-opus-5-5')?.input, 4);
    assert.equal(price('anthropic', 'claude-opus-5')?.input, 5);
    assert.equal(price('anthropic', 'claude-sonnet-4-5-20250929')?.cache_write, 3.75);
    assert.equal(price('openai', 'gpt-5-mini-2025-08-07')?.input, 0.25);
    assert.equal(price('openai', 'gpt-5')?.input, 1.25);
    assert.equal(price('openai', 'gpt-4.1-nano')?.output, 0.4);
    assert.equal(price('openai', 'gpt-4o-realtime-preview'), undefined, 'priced otherwise: not guessed');
    assert.deepEqual(price('openai', 'gpt-4o-2024-08-06'), { input: 2.5, output: 10, cache_read: 1.25 });
    assert.deepEqual(price('openai', 'gpt-4o-2024-05-13'), { input: 5, output: 15 }, 'the first gpt-4o: its own price');
  });

  test('the built-in table reads as a price list: output ≥ input > cache read, writes ≥ input', () => {
    assert.ok(BUILT_IN_PRICES.length > 20);
    for (const [pattern, pr] of BUILT_IN_PRICES) {
      const embedding = pattern.startsWith('text-embedding-');
      assert.ok(pr.input > 0 && (embedding ? pr.output === 0 : pr.output >= pr.input), `${pattern}: input/output`);
      // no cache price: a snapshot without prompt caching (gpt-4o-2024-05-13)
      assert.ok(pr.cache_read === undefined || pr.cache_read < pr.input, `${pattern}: cache read`);
      if (pr.cache_write !== undefined) assert.ok(pr.cache_write >= pr.input, `${pattern}: cache write`);
    }
  });

  test('pricingReport counts each source', () => {
    const report = pricingReport(spec({ pricing: { mine: p(1, 2) } }), [
      { id: 'mine' },
      { id: 'listed', pricing: p(3, 4) },
      { id: 'gpt-4o' },
      { id: 'unknown' },
    ]);
    assert.deepEqual(report.sources, { config: 1, discovered: 1, 'built-in': 1, none: 1 });
    assert.deepEqual(report.models.listed, { source: 'discovered', input: 3, output: 4 });
    assert.deepEqual(report.models.unknown, { source: 'none' });
  });
});

describe('callPricing (once per call, resolved once per backend and model)', () => {
  test('a new spec (config change) or model list (discovery) is priced anew', () => {
    const backend = { spec: spec({ pricing: { 'm*': p(1, 2) } }), modelsById: new Map<string, ModelInfo>() };
    assert.deepEqual(callPricing(backend, 'm1'), p(1, 2));
    assert.deepEqual(callPricing(backend, 'm1'), p(1, 2), 'asked again');
    backend.spec = spec({ pricing: { 'm*': p(3, 4) } }); // the registry replaces a changed spec
    assert.deepEqual(callPricing(backend, 'm1'), p(3, 4));
    backend.spec = spec();
    assert.equal(callPricing(backend, 'm1'), undefined, 'nothing prices it now');
    backend.modelsById = new Map([['m1', { id: 'm1', pricing: p(5, 6) }]]); // a discovery replaces the list
    assert.deepEqual(callPricing(backend, 'm1'), p(5, 6));
    backend.modelsById = new Map([['m1', { id: 'm1', pricing: p(7, 8) }]]);
    assert.deepEqual(callPricing(backend, 'm1'), p(7, 8));
    assert.deepEqual(callPricing(backend, 'gpt-4o')?.input, 2.5, 'built-in');
    assert.equal(callPricing(backend, null), undefined);
    assert.equal(callPricing(undefined, 'm1'), undefined);
  });

  test('endless model names (a pass-through alias) are priced right past the cache size', () => {
    const backend = { spec: spec({ pricing: { 'x-*': p(1, 1), 'x-1*': p(2, 2) } }), modelsById: new Map() };
    for (let i = 0; i < 3000; i++) {
      const want = String(i).startsWith('1') ? 2 : 1;
      assert.equal(callPricing(backend, `x-${i}`)?.input, want, `x-${i}`);
    }
    assert.equal(callPricing(backend, 'x-1')?.input, 2, 'the first, long since dropped from the cache');
  });
});

describe('pricing: in config.yaml and the admin API', () => {
  const URL_ = 'http://10.0.0.1:8080';
  const backend = (pricing: unknown, type = 'openai') => ({ backends: [{ name: 'b', url: URL_, type, pricing }] });

  test('config.yaml: a valid table passes; a bad one is refused with its key path', () => {
    const ok = validateConfig(backend({ 'gpt-*': { input: 1, output: 2, cache_read: 0.1, cache_write: 1.25 } }));
    assert.ok(ok.ok, JSON.stringify(ok));
    const bad = validateConfig(backend({ 'gpt-*': { input: -1, output: 'two', prompt: 3 }, m: { output: 1 } }));
    assert.ok(!bad.ok);
    const paths = bad.problems.map((x) => x.path);
    const glob = 'backends[0].pricing["gpt-*"]';
    for (const path of [`${glob}.input`, `${glob}.output`, `${glob}.prompt`, 'backends[0].pricing.m.input']) {
      assert.ok(paths.includes(path), `${path} in ${JSON.stringify(bad.problems)}`);
    }
    const flat = validateConfig(backend({ input: 3, output: 15 }));
    const keyed = !flat.ok && flat.problems.some((x) => x.path === 'backends[0].pricing.input');
    assert.ok(keyed, 'prices must be keyed by model');
    const comfy = validateConfig(backend({ '*': { input: 1, output: 1 } }, 'comfyui'));
    assert.ok(!comfy.ok && comfy.problems.some((x) => x.path === 'backends[0].pricing'), JSON.stringify(comfy));
  });

  test('validateBackend (the console / admin API) takes the same rules', () => {
    const v = createConfigValidator();
    assert.ok(v.validateBackend({ name: 'b', url: URL_, pricing: { '*': { input: 1, output: 2 } } }).ok);
    const bad = v.validateBackend({ name: 'b', url: URL_, pricing: { '*': { input: 1 } } });
    assert.ok(!bad.ok && bad.problems.some((x) => x.path === 'pricing["*"].output'), JSON.stringify(bad));
  });

  test('over HTTP: a backend added with pricing through the admin API is billed at it', async (t) => {
    const MASTER = 'master-key-pricing-0123456789';
    const box = await startFake('vllm', { models: ['house-model'] });
    const gw = await startGateway([], { api_key: MASTER });
    t.after(async () => {
      await gw.close();
      await box.close();
    });
    const api = adminApi(() => gw.url, MASTER);
    const body = { name: 'cloud', url: box.url, paid: true };
    const typo = { 'house-*': { input: 'x', output: 1 } };
    const refused = await api('POST', '/admin/api/backends', { ...body, pricing: typo });
    assert.equal(refused.status, 400);
    assert.equal(refused.json.error.param, 'pricing["house-*"].input');

    const pricing = { 'house-*': { input: 2, output: 6 } };
    assert.equal((await api('POST', '/admin/api/backends', { ...body, pricing })).status, 201);
    assert.deepEqual((await api('GET', '/admin/api/backends/cloud')).json.spec.pricing, pricing, 'stored and shown');
    await waitFor(() => gw.gateway.registry.get('cloud')?.healthy === true, 'discovered');
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'cloud/house-model', messages: [{ role: 'user', content: 'hi there' }] }),
    });
    const usage = ((await res.json()) as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
    await waitFor(() => gw.gateway.callLog.recent({ backend: 'cloud' }).length === 1, 'row');
    const expected = (usage.prompt_tokens * 2 + usage.completion_tokens * 6) / 1e6;
    assert.ok(Math.abs(gw.gateway.callLog.recent({ backend: 'cloud' })[0].cost_usd - expected) < 1e-12);

    // a price change is hot: the next call is billed at the new price
    const repriced = { 'house-*': { input: 20, output: 60 } };
    assert.equal((await api('PUT', '/admin/api/backends/cloud', { ...body, pricing: repriced })).status, 200);
    const again = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'cloud/house-model', messages: [{ role: 'user', content: 'hi there' }] }),
    });
    const u2 = ((await again.json()) as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
    await waitFor(() => gw.gateway.callLog.recent({ backend: 'cloud' }).length === 2, 'second row');
    const second = gw.gateway.callLog.recent({ backend: 'cloud' })[0].cost_usd;
    assert.ok(Math.abs(second - (u2.prompt_tokens * 20 + u2.completion_tokens * 60) / 1e6) < 1e-12, `${second}`);
  });
});
