/**
 * The Server tab's alerts section in headless Chromium: the targets listed masked, and the
 * "send test alert" button (a form POST with the page's CSRF token) answering the page with
 * the outcome beside its target, the sink having received the test alert. Screenshots in
 * test-artifacts/ui/ (light and dark).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { startFake, type FakeBackend } from './fakes/index.ts';
import { bodyOf, startAlertSink, type AlertSink } from './helpers/alert-sink.ts';
import { launchChromium, logIn, newContext, shoot, skipWithoutChromium } from './helpers/browser.ts';
import { startGateway, type TestGateway } from './helpers/gateway.ts';

const MASTER = 'alerts-browser-master-key-0123456789';

describe('alerts on the server tab, in a browser', { skip: skipWithoutChromium }, () => {
  let sink: AlertSink;
  let box: FakeBackend;
  let gw: TestGateway;
  let browser: Browser;
  before(async () => {
    sink = await startAlertSink();
    box = await startFake('vllm', { models: ['m'] });
    gw = await startGateway([{ name: 'box', url: box.url }], {
      api_key: MASTER,
      alerts: [
        { url: `${sink.url}/ntfy-topic-secret`, format: 'ntfy', min_interval_s: 300 },
        {
          url: `${sink.url}/services/T000/B000/secret`,
          format: 'slack',
          min_interval_s: 600,
          events: ['backend_down'],
        },
      ],
    });
    await sink.waitFor(1);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await gw.close();
    await box.close();
    await sink.close();
  });

  test('click "Send test alert": the outcome shows beside the target; the sink got it', async () => {
    for (const scheme of ['light', 'dark'] as const) {
      const context = await newContext(browser, { scheme });
      const page = await context.newPage();
      await logIn(page, gw.url, MASTER);
      await page.goto(`${gw.url}/ui/server#h-alerts`);
      const rows = page.locator('#alerts tbody tr');
      assert.equal(await rows.count(), 2);
      assert.match((await rows.nth(0).locator('th').textContent()) ?? '', /\/ntfy-to…$/);
      const before = sink.received.length;
      await page.getByRole('button', { name: 'Send a test alert to target 2' }).click();
      await page.locator('#alert-1 [role="status"]').waitFor();
      assert.equal(await page.locator('#alert-1 [role="status"]').textContent(), 'Test delivered (HTTP 200)');
      const [r] = (await sink.waitFor(before + 1)).slice(before);
      assert.equal(r.path, '/services/T000/B000/secret');
      assert.match(String(bodyOf(r).text), /^\*Test alert/);
      const html = await page.content();
      for (const part of ['ntfy-topic-secret', 'B000/secret']) assert.ok(!html.includes(part), `${part} on the page`);
      await page.locator('#alerts').scrollIntoViewIfNeeded();
      await page
        .locator('#alerts')
        .screenshot({ path: (await shoot(page, `alerts-server-${scheme}`)).replace('.png', '-section.png') });
      await context.close();
    }
  });
});
