/**
 * Screenshots of the Playground (Chat streaming, Media with a live job to 100 %, Voice) at
 * desktop and phone width, light and dark, into test-artifacts/ui/playground-*.png, driven in
 * headless Chromium against a real gateway on fakes (vLLM for chat, llama-swap for speech, a
 * fake ComfyUI for media).
 *
 *   npx tsx scripts/ui-shots-playground.ts
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launchChromium } from '../test/helpers/browser.ts';
import { loginPage, PLAYGROUND_KEY, startPlaygroundRig, useKey } from '../test/helpers/playground-rig.ts';

const OUT = join(process.cwd(), 'test-artifacts', 'ui');
const SIZES = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } } as const;
const SCHEMES = ['light', 'dark'] as const;
async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const rig = await startPlaygroundRig();
  const browser = await launchChromium();
  const url = rig.gw.url;
  try {
    for (const scheme of SCHEMES) {
      for (const [size, viewport] of Object.entries(SIZES)) {
        const context = await browser.newContext({ viewport, colorScheme: scheme });
        const page = await context.newPage();
        page.on('pageerror', (err) => console.error('page error:', err.message));
        const shot = async (name: string) => page.evaluate(() => (globalThis as any).scrollTo(0, 0)).then(() => page.screenshot({ path: join(OUT, `playground-${name}-${size}-${scheme}.png`), fullPage: true }));
        await loginPage(page, url, PLAYGROUND_KEY);
        await page.goto(`${url}/ui/playground`);
        await shot('empty');
        await page.click('#pg-chat-send');
        await shot('chat-errors');
        await useKey(page, PLAYGROUND_KEY);
        await page.selectOption('#pg-chat-model', 'gpu-box/acme/Qwen3-8B-Instruct');
        await page.check('input[name="reasoning"][value="on"]');
        await page.fill('#pg-chat-input', 'Say hello to the <b>homelab</b>.');
        await page.click('#pg-chat-send');
        await page.waitForSelector('.pg-msg-assistant.streaming');
        await page.waitForFunction(() => ((globalThis as any).document.querySelector('.pg-msg-assistant .pg-msg-text')?.textContent.length ?? 0) > 10);
        await shot('chat-streaming');
        await page.waitForSelector('.pg-msg-assistant:not(.streaming)');
        await page.waitForFunction(() => !/looking|–/.test((globalThis as any).document.querySelector('[data-meta=cost]').textContent), undefined, { timeout: 10_000 });
        await shot('chat');

        await page.click('#pg-tab-media');
        await page.selectOption('#pg-media-model', 'sd15');
        await page.fill('#pg-media-prompt', 'a lighthouse at dusk, oil painting');
        await page.fill('#pg-media-params', '{"steps": 12}');
        await page.click('#pg-media-run');
        await page.waitForSelector('#pg-media-preview-box:not([hidden])', { timeout: 20_000 });
        await shot('media-running');
        await page.waitForSelector('#pg-media-results img', { timeout: 30_000 });
        await shot('media');
        await page.fill('#pg-media-params', '{"steps": "many"');
        await page.click('#pg-media-run');
        await shot('media-errors');

        await page.click('#pg-tab-voice');
        await page.selectOption('#pg-voice-model', 'tts-box/kokoro');
        await page.fill('#pg-voice-input', 'Good evening. The backups finished at three.');
        await page.click('#pg-voice-run');
        await page.waitForSelector('#pg-voice-out:not([hidden])');
        await shot('voice');
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
