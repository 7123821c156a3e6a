/**
 * Screenshots of the LLM calls tab (the list, a filtered list with a refused call, a
 * validation error, a streamed call's detail with its SSE events, a paid call's JSON bodies, a
 * refused call) at desktop and phone width, light and dark, into
 * test-artifacts/ui/calls-*.png. A real gateway on fake backends with 3,000 seeded calls
 * (XSS-shaped names among them) and real calls through /v1.
 *
 *   npx tsx scripts/ui-shots-calls.ts
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { MASTER_KEY, startCallsRig } from '../test/helpers/calls-rig.ts';
import { launchChromium, logIn, SHOTS_DIR, VIEWPORTS } from '../test/helpers/browser.ts';

export const OUT = SHOTS_DIR;
export const SIZES = VIEWPORTS;
export const SCHEMES = ['light', 'dark'] as const;

/** Every size and scheme: a logged-in page each, handed to `shoot` with a file-name maker. */
export async function everyLook(
  browser: Browser, url: string, tab: string,
  shoot: (page: Page, shot: (name: string) => Promise<void>) => Promise<void>,
): Promise<string[]> {
  mkdirSync(OUT, { recursive: true });
  const problems: string[] = [];
  for (const scheme of SCHEMES) {
    for (const [size, viewport] of Object.entries(SIZES)) {
      const context = await browser.newContext({ viewport, colorScheme: scheme, deviceScaleFactor: 1 });
      const page = await context.newPage();
      page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
      page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`); });
      await logIn(page, url, MASTER_KEY);
      await shoot(page, async (name) => {
        await page.screenshot({ path: join(OUT, `${tab}-${name}-${size}-${scheme}.png`), fullPage: true });
      });
      await context.close();
    }
  }
  return [...new Set(problems)];
}

async function main(): Promise<void> {
  const rig = await startCallsRig({ seed: { count: 3_000, xss: true } });
  const browser = await launchChromium();
  try {
    const problems = await everyLook(browser, rig.url, 'calls', async (page, shot) => {
      await page.goto(`${rig.url}/ui/calls`);
      await shot('list');
      await page.goto(`${rig.url}/ui/calls?status=4xx&source=alice`);
      await shot('filtered');
      await page.goto(`${rig.url}/ui/calls?status=20&since=2026-02-30`);
      await shot('errors');
      await page.goto(`${rig.url}/ui/calls/${rig.ids.streamed}`);
      await shot('detail-stream');
      await page.goto(`${rig.url}/ui/calls/${rig.ids.json}`);
      await shot('detail-json');
      await page.goto(`${rig.url}/ui/calls/${rig.ids.refused}`);
      await shot('detail-refused');
    });
    for (const p of problems) console.error(p);
    console.log(`screenshots in ${OUT}`);
  } finally {
    await browser.close();
    await rig.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
