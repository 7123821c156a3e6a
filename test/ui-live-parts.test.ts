/**
 * The dashboard's live parts in headless Chromium: a part whose markup did not change is never
 * replaced (the first event of a stream repeats the page as rendered), keyboard focus inside a
 * part that is replaced goes back to the same link, and the counts and the media jobs are
 * polite live regions (the table of calls is not). The job is a real one on a fake ComfyUI,
 * slow enough to be watched.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { JobView } from '../src/media/service-types.ts';
import { launchChromium, logIn, newContext, skipWithoutChromium } from './helpers/browser.ts';
import { call, MASTER, startMediaRig, type MediaRig } from './helpers/media-gateway.ts';

/** Runs before the page's scripts: counts every replacement of a `data-part` element's content. */
function recordSwaps(): void {
  const g = globalThis as any;
  g.gwSwaps = [];
  const own = Object.getOwnPropertyDescriptor(g.Element.prototype, 'innerHTML')!;
  Object.defineProperty(g.Element.prototype, 'innerHTML', {
    configurable: true,
    get() {
      return own.get!.call(this);
    },
    set(html: string) {
      if (this.hasAttribute?.('data-part')) g.gwSwaps.push(this.getAttribute('data-part'));
      own.set!.call(this, html);
    },
  });
}

const swaps = (page: Page): Promise<string[]> => page.evaluate(() => (globalThis as any).gwSwaps.slice());

describe('live parts in a browser', { skip: skipWithoutChromium }, () => {
  let rig: MediaRig;
  let browser: Browser;
  before(async () => {
    rig = await startMediaRig({ knobs: { stepMs: 150, steps: 60 } });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await rig?.close();
  });

  test('unchanged parts stay as they are; focus in a replaced part comes back; counts and jobs are live regions', async () => {
    const context = await newContext(browser);
    await context.addInitScript(recordSwaps);
    const page = await context.newPage();
    await logIn(page, rig.url, MASTER);

    assert.equal(await page.getAttribute('[data-part="dashboard-counts"]', 'aria-live'), 'polite');
    assert.equal(await page.getAttribute('[data-part="dashboard-jobs"]', 'aria-live'), 'polite');
    assert.equal(await page.getAttribute('[data-part="dashboard-calls"]', 'aria-live'), null, 'not the table of calls');

    await page.waitForTimeout(2_500); // the stream's first event and a tick or two
    const idle = await swaps(page);
    assert.ok(!idle.includes('dashboard-calls'), `the unchanged calls table is never replaced (${idle.join(', ')})`);
    assert.ok(!idle.includes('dashboard-queue'), 'nor the empty queue');

    const submitted = await call<JobView>(rig.url, 'POST', '/v1/generations', MASTER, {
      mode: 'async',
      model: 'sd15',
      prompt: 'watched slowly',
    });
    assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
    const link = `[data-part="dashboard-jobs"] a[href="/ui/jobs/${submitted.body.id}"]`;
    await page.waitForSelector(link);
    await page.focus(link);
    const before = (await swaps(page)).filter((n) => n === 'dashboard-jobs').length;
    await page.waitForFunction(
      (n) => (globalThis as any).gwSwaps.filter((p: string) => p === 'dashboard-jobs').length >= n + 2,
      before,
      { timeout: 8_000 },
    );
    const focused = await page.evaluate(() => {
      const active = (globalThis as any).document.activeElement;
      return { href: active?.getAttribute('href'), inPart: !!active?.closest('[data-part="dashboard-jobs"]') };
    });
    assert.deepEqual(
      focused,
      { href: `/ui/jobs/${submitted.body.id}`, inPart: true },
      'the keyboard focus is where it was',
    );

    await call(rig.url, 'POST', `/v1/jobs/${submitted.body.id}/cancel`, MASTER);
    await context.close();
  });
});
