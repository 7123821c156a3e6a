/**
 * The console's Backends tab shows, for a paid backend, each model's prices and where they come
 * from (config, discovered, built-in, none); the backend form edits `pricing` as JSON, and an
 * edit that does not touch it keeps it. Over real sockets, with a real gateway and fakes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { UiClient } from './helpers/ui.ts';

const MASTER = 'ui-pricing-master-key-0123456789';

let openai: FakeBackend;
let together: FakeBackend;
let gw: TestGateway;
let ui: UiClient;

before(async () => {
  openai = await startFake('vllm', { models: ['gpt-4o', 'house-model', 'mystery'] });
  together = await startFake('together');
  gw = await startGateway(
    [
      { name: 'oai', url: openai.url, paid: true, pricing: { 'house-*': { input: 2, output: 6 } } },
      { name: 'tg', url: together.url, paid: true },
    ],
    { api_key: MASTER, health_check_interval: 300 },
  );
  ui = await UiClient.login(gw, MASTER);
});
after(async () => {
  await gw.close();
  await Promise.all([openai.close(), together.close()]);
});

/** The `<tr data-price-source>` rows of one backend's price table, as model → source. */
function priceSources(html: string, backend: string): Record<string, string> {
  const row = html.split('<tr class="bk-row').find((r) => r.includes(`href="/ui/backends/${backend}/edit"`)) ?? '';
  const found = [...row.matchAll(/<tr data-price-source="([\w-]+)">\s*<th scope="row" class="mono">([^<]+)<\/th>/g)];
  return Object.fromEntries(found.map((m) => [m[2], m[1]]));
}

describe('backends tab: prices', () => {
  test('each model of a paid backend with its prices and their source', async () => {
    const html = await ui.html('/ui/backends');
    assert.match(html, /<summary>prices: 1 config · 1 built-in · 1 none<\/summary>/);
    assert.deepEqual(priceSources(html, 'oai'), { 'gpt-4o': 'built-in', 'house-model': 'config', mystery: 'none' });
    assert.match(html, /<span class="tag price-config">config<\/span> <span class="mono muted">house-\*<\/span>/);
    const cells = ['$2.5', '$10', '$1.25', '= in'].map((v) => `<td class="num">${v}</td>`).join('');
    assert.ok(html.includes(cells), 'gpt-4o: input, output, cache read, and cache writes billed at input');
    const tg = priceSources(html, 'tg');
    assert.ok(Object.keys(tg).length > 0 && Object.values(tg).every((s) => s === 'discovered'), JSON.stringify(tg));
  });

  test('the form edits pricing as JSON; an edit that leaves it alone keeps it', async () => {
    const edit = await ui.html('/ui/backends/tg/edit');
    assert.match(edit, /<textarea id="pricing" name="pricing"/);
    const pricing = { 'acme/*': { input: 9, output: 9 } };
    const base = { type: 'openai', enabled: 'on', name: 'tg', url: together.url, paid: 'on' };
    const fields = { ...base, pricing: JSON.stringify(pricing) };
    assert.equal((await ui.post('/ui/backends/tg/edit', fields)).status, 303);
    assert.deepEqual(gw.gateway.storedBackends.get('tg')?.pricing, pricing);
    const list = await ui.html('/ui/backends');
    const sources = Object.values(priceSources(list, 'tg'));
    assert.ok(sources.length > 0 && sources.every((s) => s === 'config'), `config now beats discovered: ${sources}`);

    // the form as the page renders it, posted back unchanged: pricing survives the round trip
    const again = await ui.html('/ui/backends/tg/edit');
    const shown = /<textarea id="pricing" name="pricing"[^>]*>([^<]*)<\/textarea>/.exec(again)?.[1] ?? '';
    const text = shown.replace(/&quot;/g, '"').replace(/&#34;/g, '"');
    assert.deepEqual(JSON.parse(text), pricing);
    const resent = await ui.post('/ui/backends/tg/edit', { ...fields, pricing: text, max_concurrent: '3' });
    assert.equal(resent.status, 303);
    assert.deepEqual(gw.gateway.storedBackends.get('tg')?.pricing, pricing);

    const bad = await ui.post('/ui/backends/tg/edit', { ...fields, pricing: '{"acme/*": {"input": 1}}' });
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /id="pricing-error">[^<]*output[^<]*is required/);
  });
});
