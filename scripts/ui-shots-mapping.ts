/**
 * Screenshots of the Mapping tab at desktop and phone width, light and dark, into
 * test-artifacts/ui/mapping-*.png: the alias list (from config.yaml), a refused UI-format
 * paste, the editor of a workflow read from a .json file with its suggested mapping, a pin
 * picked from a backend's checkpoints (the page's script swapping the field list and the value
 * box), a refused save with its inline problem, the saved alias, and the dry run of the
 * Trellis mesh workflow (diff, pruned and bypassed nodes) and its refusal naming the slot.
 * A real gateway on two fake ComfyUI boxes; the fixture workflows are read in place.
 *
 *   npx tsx scripts/ui-shots-mapping.ts
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { startComfyFake } from '../test/fakes/comfyui-server.ts';
import { fakeObjectInfo } from '../test/fakes/comfyui-nodes.ts';
import { workflow } from '../test/helpers/comfy-workflows.ts';
import { fixturePath } from '../test/helpers/fixtures.ts';
import { startGateway } from '../test/helpers/gateway.ts';
import { editObjectInfo } from '../test/helpers/media-gateway.ts';
import { launchChromium, logIn, SHOTS_DIR, VIEWPORTS } from '../test/helpers/browser.ts';

const MASTER = 'ui-shots-master-key-0123456789';
const OUT = SHOTS_DIR;
const SIZES = VIEWPORTS;
const SCHEMES = ['light', 'dark'] as const;
const FAST = { poll_interval: 0.05, disconnect_grace: 0.5, max_wait: 30 } as const;

const login = (page: Page, url: string) => logIn(page, url, MASTER);

/** The mapping row whose parameter is `param` (its index). */
async function rowOf(page: Page, param: string): Promise<number> {
  const names = await page.$$eval('input[name$="_param"]', (inputs, p) => inputs.filter((i) => (i as unknown as { value: string }).value === p).map((i) => i.getAttribute('name') ?? ''), param);
  return names[0] ? Number(/^m(\d+)_/.exec(names[0])![1]) : -1;
}

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const a = await startComfyFake({ objectInfo: fakeObjectInfo() });
  const b = await startComfyFake({ objectInfo: editObjectInfo(), knobs: { validateCombos: false } });
  const gw = await startGateway([
    { name: 'comfy-a', url: a.url, type: 'comfyui', ...FAST },
    { name: 'comfy-b', url: b.url, type: 'comfyui', ...FAST },
  ], {
    api_key: MASTER,
    image_models: {
      sd15: [{ backend: 'comfy-a', workflow_json: workflow('txt2img_sd15_api.json') }, { backend: 'comfy-b', workflow_json: workflow('txt2img_sd15_api.json') }],
      inpaint: [{ backend: 'comfy-b', workflow_json: workflow('img2img_workflow_flux1_inpaint_api.json'), mapping: { image: { node: '378', field: 'image', on_empty: 'required' }, mask: { node: '377', field: 'image', on_empty: 'required' } } }],
      mesh: [{ backend: 'comfy-b', workflow_json: workflow('img2mesh-trellis2_high_api.json') }],
      wan: [{ backend: 'comfy-a', workflow_json: workflow('img2video_wan_lowram_api.json'), bypass: ['no-such-node'] }],
    },
  });
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
        const shot = async (name: string, at?: string) => {
          if (at) await page.locator(at).scrollIntoViewIfNeeded();
          else await page.evaluate('window.scrollTo(0, 0)');
          await page.screenshot({ path: join(OUT, `mapping-${name}-${size}-${scheme}.png`), fullPage: !at });
        };
        const alias = `sd15-${size}-${scheme}`;

        await page.goto(`${gw.url}/ui/mapping`);
        await shot('list');

        await page.fill('#alias', alias);
        await page.fill('#workflow', JSON.stringify({ last_node_id: 3, nodes: [{ id: 1, type: 'KSampler' }], links: [] }));
        await Promise.all([page.waitForLoadState('load'), page.click('form[action="/ui/mapping/register"] button[type="submit"]')]);
        await shot('register-refused', '#register');

        // the file input is read into the text box by the page's script
        await page.setInputFiles('#workflow-file', fixturePath('comfyui/workflows/txt2img_sd15_api.json'));
        await page.waitForFunction("document.querySelector('#workflow').value.includes('KSampler')");
        await Promise.all([page.waitForLoadState('load'), page.click('form[action="/ui/mapping/register"] button[type="submit"]')]);
        await shot('editor-new');

        // a pin on comfy-b: the field list follows the node, the value box becomes its checkpoints
        await page.click('a[data-tab="backend-1"]');
        await page.selectOption('#b1-p0-node', '312');
        await page.selectOption('#b1-p0-field', 'ckpt_name');
        const tag = await page.$eval('#b1-p0-value', (el) => el.tagName);
        if (tag !== 'SELECT') { problems++; console.error(`the pin value box is a ${tag}, not the backend's choices`); }
        await page.selectOption('#b1-p0-value', 'v1-5-pruned-emaonly.safetensors');
        await page.fill('#b1-bypass', '999');
        await Promise.all([page.waitForLoadState('load'), page.click('button[name="action"][value="save"]')]);
        await shot('editor-refused');

        await page.fill('#b1-bypass', '');
        await Promise.all([page.waitForURL(/\?saved=1$/), page.click('button[name="action"][value="save"]')]);
        await shot('editor-saved');

        await page.goto(`${gw.url}/ui/mapping/mesh`);
        const image = await rowOf(page, 'image');
        await page.selectOption(`#m${image}-mode`, 'disable');
        await page.fill('#b1-bypass', '53, 41');
        await page.check('input[name="s_img"][value="image"]');
        await Promise.all([page.waitForLoadState('load'), page.click('button[name="action"][value="compile"]')]);
        await shot('dryrun');
        await shot('dryrun-result', '#dry-result');

        await page.uncheck('input[name="s_img"][value="image"]');
        await Promise.all([page.waitForLoadState('load'), page.click('button[name="action"][value="compile"]')]);
        await shot('dryrun-refused', '#dry-result');

        await page.goto(`${gw.url}/ui/mapping`);
        await shot('list-saved');
        await context.close();
      }
    }
  } finally {
    await browser.close();
    await gw.close();
    await a.close();
    await b.close();
  }
  console.log(`screenshots in ${OUT}${problems ? `; ${problems} page problems (see above)` : ''}`);
  if (problems) process.exitCode = 1;
}

await main();
