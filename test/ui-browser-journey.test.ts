/**
 * The console in headless Chromium, as an owner uses it: log in; add a backend pointing at a
 * fake and watch it come up on the dashboard without a reload; create an alias and see it
 * route; change a server setting and see it take effect; log out and be refused. Then a
 * screenshot of every tab in light and dark, at desktop and phone width, into
 * test-artifacts/ui/ for reviewers. (Chat streaming, media progress and the user key shown
 * once have their own browser tests: ui-playground, ui-users-browser.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { startComfyFake } from './fakes/comfyui-server.ts';
import type { ComfyFake } from './fakes/comfyui-types.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';
import { launchChromium, logIn, newContext, shoot, skipWithoutChromium } from './helpers/browser.ts';
import { sd15Models, submitText } from './helpers/media-service.ts';
import { TABS } from '../src/ui/tabs/list.ts';

const KEY = 'journey-master-key-00000';

describe('the console in a browser', { skip: skipWithoutChromium }, () => {
  let gw: TestGateway;
  let first: FakeBackend;
  let later: FakeBackend;
  let comfy: ComfyFake;
  let browser: Browser;
  const cspErrors: string[] = [];

  before(async () => {
    first = await startFake('vllm', { models: ['qwen3-8b'] });
    later = await startFake('ollama', { models: ['llama3.2:3b'], knobs: { tokensPerSecond: 400 } });
    comfy = await startComfyFake({ knobs: { stepMs: 30, steps: 4 } });
    gw = await startGateway(
      [
        { name: 'gpu-box', url: first.url },
        { name: 'comfy', url: comfy.url, type: 'comfyui', poll_interval: 0.05 },
      ],
      { api_key: KEY, image_models: sd15Models(['comfy']), health_check_interval: 0.5 },
    );
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await gw?.close();
    await Promise.all([first?.close(), later?.close(), comfy?.close()]);
  });

  async function page(opts: Parameters<typeof newContext>[1] = {}): Promise<Page> {
    const context = await newContext(browser, opts);
    const p = await context.newPage();
    p.on('console', (m) => {
      if (m.type() === 'error' && /Content Security Policy|Refused to/.test(m.text())) cspErrors.push(m.text());
    });
    return p;
  }

  test('log in, add a backend and see it come up on the open dashboard; create an alias; change a setting; log out', async () => {
    const dashboard = await page();
    await logIn(dashboard, gw.url, KEY);
    await dashboard.locator('[data-backend="gpu-box"]').waitFor();
    assert.equal(await dashboard.locator('[data-backend="ollama-box"]').count(), 0);

    // a second tab adds the backend through the form; the first never reloads
    const admin = await dashboard.context().newPage();
    await admin.goto(`${gw.url}/ui/backends/new`);
    await admin.getByLabel('Name', { exact: true }).fill('ollama-box');
    await admin.getByLabel('URL', { exact: true }).fill(later.url);
    await admin.getByRole('button', { name: 'Add backend' }).click();
    await admin.waitForURL(/\/ui\/backends(\?|$)/);
    await dashboard.locator('[data-backend="ollama-box"].state-up').waitFor({ timeout: 10_000 });
    assert.match(await dashboard.locator('[data-backend="ollama-box"]').innerText(), /llama3\.2:3b/);
    await shoot(dashboard, 'journey-dashboard-new-backend');

    // an alias onto the new backend, then a real call through it
    await admin.goto(`${gw.url}/ui/aliases/new`);
    await admin.getByLabel('Name', { exact: true }).fill('tiny');
    await admin.getByLabel('One model id, any backend serving it').check();
    await admin.locator('#single').fill('llama3.2:3b');
    await admin.getByRole('button', { name: 'Save alias', exact: true }).last().click();
    await admin.waitForURL(/\/ui\/aliases(\?|$)/);
    assert.match(await admin.locator('main').innerText(), /tiny/);
    const routed = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(routed.status, 200);
    assert.equal(routed.headers.get('x-gateway-backend'), 'ollama-box');

    // a server setting, applied live
    await admin.goto(`${gw.url}/ui/server`);
    await admin.locator('#v-max_parked').fill('7');
    await admin.getByRole('button', { name: 'Save max_parked' }).click();
    await admin.waitForURL(/\/ui\/server/);
    assert.equal(gw.gateway.config().max_parked, 7);
    assert.match(await admin.locator('#s-max_parked').innerText(), /store/);

    // log out: the console refuses the same browser until it logs in again
    await admin.getByRole('button', { name: 'Log out' }).click();
    await admin.waitForURL(/\/ui\/login\?bye=1/);
    await admin.goto(`${gw.url}/ui/backends`);
    assert.match(admin.url(), /\/ui\/login\?next=/);
    assert.deepEqual(cspErrors, [], 'no page broke the content security policy');
  });

  test('every tab, light and dark, desktop and phone: screenshots for review', async () => {
    await submitText(gw, 'sd15');
    for (const viewport of ['desktop', 'phone'] as const) {
      for (const scheme of ['light', 'dark'] as const) {
        const p = await page({ viewport, scheme });
        await logIn(p, gw.url, KEY);
        for (const tab of TABS) {
          const res = await p.goto(`${gw.url}${tab.path}`);
          assert.equal(res?.status(), 200, tab.path);
          await p.waitForLoadState('networkidle').catch(() => {});
          const box = await p.evaluate(() => {
            const g = globalThis as any;
            return { scroll: g.document.documentElement.scrollWidth as number, width: g.innerWidth as number };
          });
          assert.ok(
            box.scroll <= box.width + 1,
            `${tab.id} at ${viewport} scrolls sideways (${box.scroll} > ${box.width})`,
          );
          await shoot(p, `tab-${tab.id}-${viewport}-${scheme}`);
        }
        await p.context().close();
      }
    }
    assert.deepEqual(cspErrors, []);
  });
});
