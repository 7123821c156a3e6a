/**
 * The users tab in headless Chromium (Debian's `chromium`, driven by playwright-core): create
 * a user through the chip picker (Enter adds an entry without submitting, × removes one), see
 * its key once, use it against the API, and never see it again; no console or CSP errors.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { launchChromium, logIn, skipWithoutChromium } from './helpers/browser.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

const MASTER = 'ui-users-browser-master-0123456789';

describe('users tab in a browser', { skip: skipWithoutChromium }, () => {
  let gw: TestGateway;
  let fake: FakeBackend;
  let browser: Browser;
  before(async () => {
    fake = await startFake('vllm', { models: ['plain-model', 'other-model'] });
    gw = await startGateway([{ name: 'box', url: fake.url }], {
      api_key: MASTER,
      virtual_models: { fast: { box: 'plain-model' } },
    });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await gw?.close();
    await fake?.close();
  });

  test('create a user with the chip picker and see its key once', async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.location().url.endsWith('/favicon.ico')) problems.push(m.text());
    });
    page.on('dialog', (d) => void d.accept());
    await logIn(page, gw.url, MASTER);

    await page.goto(`${gw.url}/ui/users/new`);
    assert.equal(await page.isVisible('#allow-add'), true, 'the type-ahead replaces the multi-select');
    assert.equal(await page.isVisible('#allow-pick'), false);
    await page.fill('#name', 'browser-user');
    for (const entry of ['fast', 'box/other-model', 'typo-entry']) {
      await page.fill('#allow-add', entry);
      await page.press('#allow-add', 'Enter');
    }
    assert.equal(page.url(), `${gw.url}/ui/users/new`, 'Enter added the entry, it did not submit');
    assert.deepEqual(await page.locator('[data-chips] .chip-text').allTextContents(), [
      'fast',
      'box/other-model',
      'typo-entry',
    ]);
    await page.click('[data-chips] [aria-label="Remove typo-entry"]');
    assert.deepEqual(await page.locator('[data-chips] .chip-text').allTextContents(), ['fast', 'box/other-model']);
    await page.fill('#quota_cost_month', '2,50');
    await Promise.all([page.waitForLoadState('load'), page.click('button.primary[type="submit"]')]);

    assert.match((await page.locator('h1').textContent()) ?? '', /User created/);
    const key = await page.inputValue('#new-key');
    assert.ok(key.startsWith('sk-'));
    const user = gw.gateway.users.list().find((u) => u.name === 'browser-user')!;
    assert.deepEqual(user.allow, ['fast', 'box/other-model']);
    assert.equal(user.quota_cost_month, 2.5);
    const models = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(models.status, 200);

    await page.click('text=Done');
    await page.waitForURL(`${gw.url}/ui/users`);
    assert.ok(await page.isVisible('text=browser-user'));
    assert.equal((await page.content()).includes(key), false, 'the key is not shown again');
    assert.deepEqual(problems, [], 'no script or CSP errors');
    await page.close();
  });
});
