/**
 * Screenshots of the Aliases & routing and Reasoning tabs at desktop and phone width, light and
 * dark, into test-artifacts/ui/aliases-*.png and reasoning-*.png: the alias list with the live
 * map (covered and shadowed collisions, a pattern shadowed by exact aliases, an alias routing
 * nowhere, a backend down, an XSS-shaped name), the list filtered as you type, the editor, a
 * refused form; the rule list with the resolver, the resolver through an alias, the rule editor
 * and a refused rule. A real gateway in front of fake llama.cpp, vLLM, Ollama and OpenRouter
 * servers (and one address nothing answers on).
 *
 *   npx tsx scripts/ui-shots-aliases.ts
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { startFake, type FakeBackend } from '../test/fakes/index.ts';
import { startGateway } from '../test/helpers/gateway.ts';
import { UiClient } from '../test/helpers/ui.ts';
import { launchChromium, logIn, SHOTS_DIR, VIEWPORTS } from '../test/helpers/browser.ts';

const MASTER = 'ui-shots-master-key-0123456789';
const OUT = SHOTS_DIR;
const SIZES = VIEWPORTS;
const SCHEMES = ['light', 'dark'] as const;
const XSS = '<script>alert(1)</script>';

const login = (page: Page, url: string) => logIn(page, url, MASTER);

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const fakes: FakeBackend[] = [
    await startFake('llamacpp', { models: ['qwen3-8b', 'gemma-3-12b-it', XSS] }),
    await startFake('vllm', { models: ['Qwen/Qwen3-8B', 'coder-model', 'openai/gpt-oss-20b'] }),
    await startFake('ollama', { models: ['qwen3:8b', 'llama3.2:3b'] }),
    await startFake('openrouter', { models: ['qwen/qwen3-8b', 'anthropic/claude-sonnet-4.5', 'openai/gpt-oss-120b'] }),
  ];
  const [a, b, c, or] = fakes;
  const gw = await startGateway([
    { name: 'gpu1-llamacpp', url: a.url }, { name: 'gpu1-vllm', url: b.url }, { name: 'ollama', url: c.url },
    { name: 'openrouter', url: or.url, paid: true }, { name: 'gpu2-swap', url: 'http://127.0.0.1:9' },
  ], {
    api_key: MASTER,
    virtual_models: {
      fast: { 'gpu1-llamacpp': 'qwen3-8b', ollama: 'qwen3:8b', openrouter: 'qwen/qwen3-8b' },
      big: { 'gpu2-swap': 'llama-3.3-70b-instruct-q4', openrouter: 'openai/gpt-oss-120b' },
      coder: 'coder-model',
      'coder-model': { 'gpu1-llamacpp': 'qwen3-8b' },
      'qwen3-8b': { 'gpu1-llamacpp': 'qwen3-8b' },
      retired: 'old-model-nobody-serves',
      'claude-*haiku*': 'fast',
      'claude-*': 'big',
      'qwen*': 'fast',
      [XSS]: { 'gpu1-llamacpp': XSS },
    },
    alias_park: { fast: 10, big: 300 },
    alias_defaults: {
      fast: { reasoning: 'off', sampling_defaults: { temperature: 0.7, top_p: 0.8, top_k: 20, seed: 42 } },
      big: { reasoning: 'on' },
    },
    reasoning_rules: [
      { model: '*qwen3*', backends: ['ollama'], mechanism: 'nothink_token', params: { token: '/no_think', on_token: '/think' } },
      { model: 'qwen3-8b', backends: ['gpu1-llamacpp'], mechanism: 'enable_thinking' },
      { model: '*gemma*', mechanism: 'prefill', enabled: false },
    ],
  });
  // one change from the console: the alias tables now come from the store, overriding config.yaml
  const client = await UiClient.login(gw, MASTER);
  await client.get('/ui/aliases/new');
  await client.post('/ui/aliases/save', {
    original: '', name: 'local', mode: 'map', map_backend: ['gpu1-llamacpp', 'gpu1-vllm'], map_model: ['qwen3-8b', 'Qwen/Qwen3-8B'],
    single: '', park_s: '30', reasoning: 'auto', s_temperature: '0,6', s_top_p: '0,95', s_top_k: '20', s_min_p: '', s_repetition_penalty: '',
    s_presence_penalty: '1,5', s_frequency_penalty: '', sampling_json: '{"max_tokens": 8192}', voice: '',
  });

  const browser = await launchChromium();
  let problems = 0;
  try {
    for (const scheme of SCHEMES) {
      for (const [size, viewport] of Object.entries(SIZES)) {
        const context = await browser.newContext({ viewport, colorScheme: scheme, deviceScaleFactor: 1 });
        const page = await context.newPage();
        page.on('pageerror', (err) => { problems++; console.error('page error:', err.message); });
        page.on('console', (m) => { if (m.type() === 'error' && !/status of 400/.test(m.text()) && !m.location().url.endsWith('/favicon.ico')) { problems++; console.error('console:', m.text(), m.location().url); } });
        await login(page, gw.url);
        const shot = async (name: string) => {
          await page.evaluate('window.scrollTo(0, 0)');
          await page.screenshot({ path: join(OUT, `${name}-${size}-${scheme}.png`), fullPage: true });
        };

        await page.goto(`${gw.url}/ui/aliases`);
        await shot('aliases-list');
        await page.fill('#q', 'shadowed');
        await shot('aliases-filtered');

        await page.goto(`${gw.url}/ui/aliases/edit?name=local`);
        await shot('aliases-edit');

        await page.goto(`${gw.url}/ui/aliases/new`);
        await page.fill('#name', 'broken');
        await page.selectOption('#map-0-backend', 'ollama');
        await page.fill('#map-0-model', 'qwen3:8b');
        await page.fill('#s_temperature', 'warm');
        await page.fill('#sampling_json', '{"temperature": 0.5}');
        await Promise.all([page.waitForLoadState('load'), page.click('button.primary[type="submit"]')]);
        await shot('aliases-refused');

        await page.goto(`${gw.url}/ui/reasoning`);
        await shot('reasoning-list');
        await page.goto(`${gw.url}/ui/reasoning?backend=ollama&model=qwen3%3A8b&switch=none&alias=fast#resolver`);
        await shot('reasoning-resolver-alias');
        await page.goto(`${gw.url}/ui/reasoning/edit?i=0`);
        await shot('reasoning-edit');
        await page.goto(`${gw.url}/ui/reasoning/new`);
        await page.check('input[name="mechanism"][value="nothink_token"]');
        await page.fill('#params', '{"tokn": "/x"}');
        await Promise.all([page.waitForLoadState('load'), page.click('button.primary[type="submit"]')]);
        await shot('reasoning-refused');
        await context.close();
      }
    }
    // without script: every panel and every params help shows; the filter is a form
    const context = await browser.newContext({ viewport: SIZES.desktop, colorScheme: 'light', javaScriptEnabled: false });
    const page = await context.newPage();
    await login(page, gw.url);
    await page.goto(`${gw.url}/ui/aliases?q=claude`);
    await page.screenshot({ path: join(OUT, 'aliases-noscript-filter-desktop-light.png'), fullPage: true });
    await page.goto(`${gw.url}/ui/aliases/edit?name=fast`);
    await page.screenshot({ path: join(OUT, 'aliases-noscript-edit-desktop-light.png'), fullPage: true });
    await context.close();
  } finally {
    await browser.close();
    await gw.close();
    for (const f of fakes) await f.close();
  }
  console.log(`screenshots in ${OUT}${problems ? `; ${problems} page problems (see above)` : ''}`);
  if (problems) process.exitCode = 1;
}

await main();
