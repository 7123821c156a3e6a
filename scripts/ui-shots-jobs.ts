/**
 * Screenshots of the Media jobs tab (list, a finished job with inputs, a running job moving
 * live) at desktop and phone width, light and dark, into test-artifacts/ui/jobs-*.png. A real
 * gateway on fake ComfyUI boxes; jobs of every kind (image, video with a reference image,
 * audio, failed, cancelled, an XSS-shaped prompt) and a refused request. Wait predicates are
 * functions reading `globalThis.document` (no DOM types here; a string one needs eval, which
 * the console's CSP refuses).
 *
 *   npx tsx scripts/ui-shots-jobs.ts
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { call, isTerminal, MASTER, pngA, pollJob, startMediaRig, type MediaRig } from '../test/helpers/media-gateway.ts';
import { launchChromium, logIn, SHOTS_DIR, VIEWPORTS } from '../test/helpers/browser.ts';

const OUT = SHOTS_DIR;
const SIZES = VIEWPORTS;
const SCHEMES = ['light', 'dark'] as const;

async function job(rig: MediaRig, body: Record<string, unknown>): Promise<string> {
  const r = await call(rig.url, 'POST', '/v1/generations', MASTER, { mode: 'async', ...body });
  if (r.status !== 202) throw new Error(`submit: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.id as string;
}

export async function seedJobs(rig: MediaRig): Promise<{ video: string }> {
  const done = await job(rig, { model: 'sd15', prompt: 'a lighthouse at dusk, oil painting <script>alert("x")</script>', params: { steps: 12, seed: 42 } });
  const video = await job(rig, { model: 'wan', prompt: 'the lighthouse beam sweeping over the sea', images: { image: pngA.toString('base64') } });
  const audio = await job(rig, { model: 'audio', prompt: 'church bells, techno' });
  for (const id of [done, video, audio]) await pollJob(rig.url, id, MASTER, isTerminal);
  rig.comfy.setKnobs({ failNode: '124' });
  await pollJob(rig.url, await job(rig, { model: 'sd15', prompt: 'doomed' }), MASTER, isTerminal);
  rig.comfy.setKnobs({ failNode: undefined, stepMs: 200, steps: 60 });
  const cancelled = await job(rig, { model: 'sd15', prompt: 'never mind' });
  await pollJob(rig.url, cancelled, MASTER, (v) => v.status === 'running');
  await call(rig.url, 'POST', `/v1/jobs/${cancelled}/cancel`, MASTER);
  await call(rig.url, 'POST', '/v1/generations', MASTER, { model: 'no-such-<b>model</b>', prompt: 'x' });
  await call(rig.url, 'POST', '/v1/images/generations', 'wrong-key', { model: 'sd15', prompt: 'x' });
  return { video };
}

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const rig = await startMediaRig();
  const browser = await launchChromium();
  try {
    const { video } = await seedJobs(rig);
    for (const scheme of SCHEMES) {
      for (const [size, viewport] of Object.entries(SIZES)) {
        const context = await browser.newContext({ viewport, colorScheme: scheme, deviceScaleFactor: 1 });
        const page = await context.newPage();
        page.on('pageerror', (err) => console.error('page error:', err.message));
        page.on('console', (m) => { if (m.type() === 'error') console.error('console:', m.text()); });
        await logIn(page, rig.url, MASTER);
        const shot = async (name: string) => page.evaluate(() => (globalThis as any).scrollTo(0, 0)).then(() => page.screenshot({ path: join(OUT, `jobs-${name}-${size}-${scheme}.png`), fullPage: true }));

        await page.goto(`${rig.url}/ui/jobs`);
        await page.waitForLoadState('networkidle');
        await shot('list');
        await page.goto(`${rig.url}/ui/jobs/${video}`);
        await shot('detail-video');
        await page.goto(`${rig.url}/ui/jobs?status=bogus&limit=9999`);
        await shot('list-errors');

        rig.comfy.setKnobs({ stepMs: 120, steps: 30, previews: true });
        const running = await job(rig, { model: 'sd15', prompt: 'a slow one, watched live' });
        await page.goto(`${rig.url}/ui/jobs/${running}`);
        await page.waitForFunction(() => Number((globalThis as any).document.querySelector('[data-job-progress]')?.value) >= 40, undefined, { timeout: 20_000 });
        await page.waitForSelector('[data-job-preview-box]:not([hidden])', { timeout: 10_000 }).catch(() => {});
        await shot('detail-running');
        await page.waitForSelector('[data-job-ended="done"]', { timeout: 30_000 });
        await shot('detail-done');
        rig.comfy.setKnobs({ stepMs: 20, steps: 4, previews: false });
        await context.close();
      }
    }
    console.log(`screenshots in ${OUT}`);
  } finally {
    await browser.close();
    await rig.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
