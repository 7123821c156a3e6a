/**
 * Screenshots of the Backends and Server tabs at desktop and phone width, light and dark, into
 * test-artifacts/ui/backends-*.png and server-*.png: the fleet list (up, down, draining with a
 * call finishing, disabled, a store override of config.yaml, ComfyUI, an XSS-shaped model id),
 * the new-backend form per type (script on: only that type's options), a connection test that
 * lists models and one that fails, a refused form, the edit page without script; the settings
 * page, a refused setting and a rejected config.yaml reload.
 *
 *   npx tsx scripts/ui-shots-backends.ts
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { startFake } from '../test/fakes/index.ts';
import { startComfyFake } from '../test/fakes/comfyui-server.ts';
import { startGateway } from '../test/helpers/gateway.ts';
import { launchChromium, logIn, SHOTS_DIR, VIEWPORTS } from '../test/helpers/browser.ts';

const MASTER = 'ui-shots-master-key-0123456789';
const OUT = SHOTS_DIR;
const SIZES = VIEWPORTS;
const SCHEMES = ['light', 'dark'] as const;

const login = (page: Page, url: string) => logIn(page, url, MASTER);

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const gpu = await startFake('llamacpp', { models: ['qwen3-8b'], knobs: { chunkCount: 4000, tokensPerSecond: 40 } });
  const swap = await startFake('llamaswap', {
    models: [
      'llama-3.3-70b-instruct-q4', 'qwen2.5-coder-32b', '<script>alert(1)</script>', 'nomic-embed-text', 'gemma-3-27b',
    ],
    knobs: { loadingMs: 400, chunkCount: 30 },
  });
  const cloud = await startFake('openrouter', { apiKey: 'sk-or-shots-000000000000-abcd' });
  const comfy = await startComfyFake();
  const gw = await startGateway([
    { name: 'gpu1-llamacpp', url: gpu.url, local: true, max_concurrent: 1, host: 'gpu1' },
    { name: 'gpu1-swap', url: swap.url, local: true, max_concurrent: 2, host: 'gpu1' },
    { name: 'nas-ollama', url: 'http://127.0.0.1:9', local: true, host: 'nas' },
  ], { api_key: MASTER, park_timeout_s: 45, health_check_interval: 300 });
  const admin = gw.gateway.admin;
  const must = (r: { ok: boolean }, what: string) => { if (!r.ok) throw new Error(`${what}: ${JSON.stringify(r)}`); };
  must(admin.saveBackend({ name: 'openrouter', url: cloud.url, api_key: 'sk-or-shots-000000000000-abcd', paid: true, chat_only: true, max_concurrent: 8 }, { create: true }), 'openrouter');
  must(admin.saveBackend({ name: 'comfyui', url: comfy.url, type: 'comfyui', max_concurrent: 1, gpu_group: 'gpu1', host: 'gpu1', max_wait: 900 }, { create: true }), 'comfyui');
  must(admin.saveBackend({ name: 'claude', url: 'https://api.anthropic.com', type: 'anthropic', enabled: false, paid: true, models: ['claude-sonnet-4-5'] }, { create: true }), 'claude');
  must(admin.saveBackend({ name: 'gpu1-swap', url: swap.url, local: true, max_concurrent: 3, host: 'gpu1' }, { replace: 'gpu1-swap' }), 'override');
  must(admin.setSetting('max_parked', 40), 'max_parked');
  must(admin.setSetting('park_timeout_s', 20), 'park');
  await gw.gateway.discovery.pollAll();
  // calls that teach speeds and, on the llama-swap box, swap costs (each model change is a load)
  const answered = (model: string, stream: boolean) => fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}` },
    body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'word '.repeat(50) }] }),
  }).then((r) => r.text());
  for (const [model, stream] of [
    ['llama-3.3-70b-instruct-q4', true], ['qwen2.5-coder-32b', true], ['gemma-3-27b', false],
    ['llama-3.3-70b-instruct-q4', false], ['<script>alert(1)</script>', true], ['qwen2.5-coder-32b', true],
  ] as const) await answered(`gpu1-swap/${model}`, stream);
  await answered(`openrouter/${cloud.models[0]}`, true);
  // one call in flight on gpu1-llamacpp while it drains
  const held = fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}` },
    body: JSON.stringify({ model: 'gpu1-llamacpp/qwen3-8b', stream: true, messages: [{ role: 'user', content: 'write a long story' }] }),
  }).then((r) => r.text()).catch(() => '');
  await new Promise((r) => setTimeout(r, 300));
  admin.drainBackend('gpu1-llamacpp', true);

  const browser = await launchChromium();
  let problems = 0;
  try {
    for (const scheme of SCHEMES) {
      for (const [size, viewport] of Object.entries(SIZES)) {
        const context = await browser.newContext({ viewport, colorScheme: scheme, deviceScaleFactor: 1 });
        const page = await context.newPage();
        page.on('pageerror', (err) => { problems++; console.error('page error:', err.message); });
        page.on('console', (m) => { if (m.type() === 'error' && !/status of 400/.test(m.text())) { problems++; console.error('console:', m.text(), m.location().url); } });
        page.on('dialog', (d) => void d.accept());
        await login(page, gw.url);
        const shot = async (name: string) => {
          await page.evaluate('window.scrollTo(0, 0)');
          await page.screenshot({ path: join(OUT, `${name}-${size}-${scheme}.png`), fullPage: true });
        };

        await page.goto(`${gw.url}/ui/backends`);
        await page.waitForTimeout(300);
        await shot('backends-list');

        await page.goto(`${gw.url}/ui/backends/new`);
        await page.fill('#name', 'gpu2-vllm');
        await page.fill('#url', swap.url);
        await page.click('[data-test-button]');
        await page.waitForSelector('.bk-test');
        await shot('backends-new-tested');

        await page.selectOption('#type', 'comfyui');
        await page.fill('#poll_interval', '0,5');
        await page.fill('#url', 'http://127.0.0.1:9');
        await page.click('[data-test-button]');
        await page.waitForSelector('.bk-test.bad');
        await shot('backends-new-comfyui-failed');

        await page.selectOption('#type', 'openai');
        await page.fill('#name', 'bad name');
        await page.fill('#url', 'ftp://box');
        await page.fill('#max_concurrent', '1,5');
        await page.fill('#sampling_defaults', '{"temperature": ');
        await Promise.all([page.waitForLoadState('load'), page.click('button.primary[type="submit"]')]);
        await shot('backends-refused');

        await page.goto(`${gw.url}/ui/backends/gpu1-swap/edit`);
        await shot('backends-edit-override');
        await page.goto(`${gw.url}/ui/backends/openrouter/edit`);
        await page.focus('#api_key');
        await shot('backends-edit-secret');

        await page.goto(`${gw.url}/ui/server`);
        await shot('server');
        await page.fill('#v-park_timeout_s', '-3');
        await Promise.all([page.waitForLoadState('load'), page.click('#s-park_timeout_s button.primary')]);
        await shot('server-refused');
        await context.close();
      }
    }
    gw.gateway.rejectReload([
      { path: 'backends[2].url', message: '"192.168.1.30:11434" is not a URL (write e.g. http://10.0.0.5:8080)' },
      { path: 'virtual_models.fast.gpu3', message: 'names no backend in backends[] (known: gpu1-llamacpp, gpu1-swap, nas-ollama)' },
    ]);
    for (const scheme of SCHEMES) {
      const context = await browser.newContext({ viewport: SIZES.desktop, colorScheme: scheme });
      const page = await context.newPage();
      await login(page, gw.url);
      await page.goto(`${gw.url}/ui/server`);
      await page.screenshot({ path: join(OUT, `server-reload-problems-desktop-${scheme}.png`) });
      await context.close();
    }
    // without script every option is shown and the test button posts the form
    const context = await browser.newContext({ viewport: SIZES.desktop, colorScheme: 'light', javaScriptEnabled: false });
    const page = await context.newPage();
    await login(page, gw.url);
    await page.goto(`${gw.url}/ui/backends/comfyui/edit`);
    await Promise.all([page.waitForLoadState('load'), page.click('[data-test-button]')]);
    await page.screenshot({ path: join(OUT, 'backends-edit-noscript-desktop-light.png'), fullPage: true });
    await context.close();
  } finally {
    await browser.close();
    admin.drainBackend('gpu1-llamacpp', false);
    await gw.close();
    await Promise.all([gpu.close(), swap.close(), cloud.close(), comfy.close()]);
    await held;
  }
  console.log(`screenshots in ${OUT}${problems ? `; ${problems} page problems (see above)` : ''}`);
  if (problems) process.exitCode = 1;
}

await main();
