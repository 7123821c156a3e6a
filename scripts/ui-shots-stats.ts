/**
 * Screenshots of the Statistics tab (7 d, 24 h per hour, 30 d, a custom range, a refused
 * range, an empty range) at desktop and phone width, light and dark, into
 * test-artifacts/ui/stats-*.png. A real gateway on fake backends with 20,000 seeded calls
 * over 30 days (backends with and without cache reporting, paid and free, XSS-shaped names).
 * Fails when a page logs an error (a CSP refusal included) or a chart is missing.
 *
 *   npx tsx scripts/ui-shots-stats.ts
 */
import { startCallsRig } from '../test/helpers/calls-rig.ts';
import { launchChromium } from '../test/helpers/browser.ts';
import { everyLook, OUT } from './ui-shots-calls.ts';

async function main(): Promise<void> {
  const rig = await startCallsRig({ seed: { count: 20_000, days: 30, xss: true } });
  const browser = await launchChromium();
  const missing: string[] = [];
  try {
    const problems = await everyLook(browser, rig.url, 'stats', async (page, shot) => {
      const charts = async (name: string, want: number) => {
        await page.waitForLoadState('networkidle');
        const drawn = await page.locator('.plot canvas').count();
        if (drawn !== want) missing.push(`${name}: ${drawn} of ${want} charts drawn`);
        await shot(name);
      };
      await page.goto(`${rig.url}/ui/stats`);
      await charts('7d', 6);
      await page.goto(`${rig.url}/ui/stats?range=24h`);
      await charts('24h', 6);
      await page.goto(`${rig.url}/ui/stats?range=30d`);
      await charts('30d', 6);
      const today = new Date().toISOString().slice(0, 10);
      const weekAgo = new Date(Date.now() - 9 * 86_400_000).toISOString().slice(0, 10);
      await page.goto(`${rig.url}/ui/stats?range=custom&since=${weekAgo}&until=${today}`);
      await charts('custom', 6);
      await page.goto(`${rig.url}/ui/stats?range=custom&since=${today}&until=2020-01-01`);
      await shot('errors');
      await page.goto(`${rig.url}/ui/stats?range=custom&since=2020-01-01&until=2020-01-31`);
      await charts('empty', 0);
    });
    for (const p of [...problems, ...missing]) console.error(p);
    console.log(`screenshots in ${OUT}`);
    if (missing.length) process.exitCode = 1;
  } finally {
    await browser.close();
    await rig.close();
  }
}

await main();
