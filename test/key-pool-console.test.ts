/**
 * A key pool on the console, in headless Chromium: the dashboard's backend card lists each key
 * masked with its state (one muted by a 429, one ok), the Backends list says how many keys are
 * muted, the edit form shows the pool as hints and keeps it when saved, and no page carries a key
 * in clear. Screenshots in test-artifacts/ui/ (light and dark).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { startKeyedBackend, type KeyedBackend } from './fakes/keyed-backend.ts';
import { launchChromium, logIn, newContext, shoot, skipWithoutChromium } from './helpers/browser.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

const MASTER = 'keypool-browser-master-key-0123456789';
const A = 'sk-pool-aaaaaaaaaaaaaaaa1111';
const B = 'sk-pool-bbbbbbbbbbbbbbbb2222';

describe('key pools on the console, in a browser', { skip: skipWithoutChromium }, () => {
  let fake: KeyedBackend;
  let gw: TestGateway;
  let browser: Browser;
  before(async () => {
    fake = await startKeyedBackend('m', { [A]: { status: 429, retryAfter: '300' }, [B]: 'ok' });
    gw = await startGateway([{ name: 'cloud', url: fake.url, api_keys: [A, B], paid: true }], { api_key: MASTER });
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${MASTER}` },
      body: JSON.stringify({ model: 'cloud/m', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 200, await res.text());
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await gw.close();
    await fake.close();
  });

  test("the backend's card shows each key masked with its state; no page shows a key", async () => {
    for (const scheme of ['light', 'dark'] as const) {
      const context = await newContext(browser, { scheme });
      const page = await context.newPage();
      await logIn(page, gw.url, MASTER);
      const keys = page.locator('li.card.backend[data-backend="cloud"] ul.keys li');
      assert.equal(await keys.count(), 2);
      assert.match(
        (await keys.nth(0).textContent()) ?? '',
        /#1 sk-…1111\s+muted 429 · (29\d|300) s\s+· 1 sent · 1×429/,
      );
      assert.match((await keys.nth(1).textContent()) ?? '', /#2 sk-…2222\s+ok\s+· 1 sent/);
      await shoot(page, `keypool-dashboard-${scheme}`);
      const dashboard = await page.content();
      await page.goto(`${gw.url}/ui/backends`);
      assert.match((await page.locator('[data-part="state:cloud"]').textContent()) ?? '', /2 keys, 1 muted/);
      const list = await page.content();
      await page.goto(`${gw.url}/ui/backends/cloud/edit`);
      assert.equal(await page.locator('#api_key-state').textContent(), 'pool of 2 keys (sk-…1111, sk-…2222)');
      const edit = await page.content();
      for (const html of [dashboard, list, edit])
        for (const key of [A, B]) assert.ok(!html.includes(key), 'no key in clear on the console');
      if (scheme === 'light') {
        // saved from the form with no key typed: the store's entry keeps the pool, encrypted
        await page.getByRole('button', { name: 'Save changes' }).click();
        await page.waitForURL(/\/ui\/backends/);
        assert.deepEqual(gw.gateway.storedBackends.get('cloud')?.api_keys, [A, B]);
      }
      await context.close();
    }
  });
});
