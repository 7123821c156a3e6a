/**
 * Screenshots of the Users tab (the list with quota bars and IP aliases, the new-user form
 * with the chip picker, a refused form, the key shown once, the edit page, the picker without
 * script) at desktop and phone width, light and dark, into test-artifacts/ui/users-*.png.
 * A real gateway on a fake LLM server; users of every shape (admin, quotas near and at their
 * limit, disabled, an XSS-shaped name, long allow-lists) and a few IP aliases.
 *
 *   npx tsx scripts/ui-shots-users.ts
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startFake } from '../test/fakes/index.ts';
import { launchChromium, logIn, SHOTS_DIR as OUT, VIEWPORTS as SIZES } from '../test/helpers/browser.ts';
import { startGateway, type TestGateway } from '../test/helpers/gateway.ts';
import { utcDayNumber } from '../src/stats/period.ts';

const MASTER = 'ui-shots-master-key-0123456789';
const SCHEMES = ['light', 'dark'] as const;

function seed(gw: TestGateway): number {
  const { users, callLog, ipAliases } = gw.gateway;
  const day = utcDayNumber(Date.now());
  const add = (input: Parameters<typeof users.create>[0], requests = 0, cost = 0) => {
    const { user } = users.create(input);
    if (requests || cost) callLog.quotas.count({ user_id: user.id, day, requests, cost });
    return user.id;
  };
  add({ name: 'ops', role: 'admin', note: 'homelab owner' }, 212, 3.4);
  const editId = add({
    name: 'alice-laptop', allow: ['fast', 'box/qwen3-8b', 'coder'], quota_req_day: 500, quota_cost_month: 10,
    share: 2, max_inflight: 3, note: 'Alice, MacBook (Continue.dev)',
  }, 131, 2.35);
  add({
    name: 'ci-runner', allow: ['qwen3-8b'], quota_req_day: 1000, quota_cost_month: 2, share: 0.5, max_inflight: 1,
    note: 'nightly evals',
  }, 870, 1.71);
  add({ name: 'kids-tablet', allow: ['fast', 'sd15'], quota_req_day: 50, note: 'homework helper' }, 50, 0);
  add({ name: 'old-script', enabled: false, allow: ['decommissioned-model'], note: 'disabled after the key leaked' });
  add({ name: '<script>alert(1)</script>', allow: ['<b>x</b>', 'fast', 'coder', 'box', 'qwen3-8b', 'llama-3.1-8b'], quota_cost_month: 0.5, note: '<img src=x onerror=alert(1)>' }, 3, 0.12);
  ipAliases.replace({ '192.168.1.20': 'desk', '192.168.1.42': 'living-room tv', '2001:db8:1:2::/64': 'laptop (v6)' });
  return editId;
}

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const fake = await startFake('vllm', { models: ['qwen3-8b', 'llama-3.1-8b', 'qwen2.5-coder-32b', 'nomic-embed-text'] });
  const gw = await startGateway([{ name: 'box', url: fake.url }], {
    api_key: MASTER, virtual_models: { fast: { box: 'qwen3-8b' }, coder: { box: 'qwen2.5-coder-32b' } },
  });
  const editId = seed(gw);
  const browser = await launchChromium();
  let problems = 0;
  try {
    for (const scheme of SCHEMES) {
      for (const [size, viewport] of Object.entries(SIZES)) {
        const context = await browser.newContext({ viewport, colorScheme: scheme, deviceScaleFactor: 1 });
        const page = await context.newPage();
        page.on('pageerror', (err) => { problems++; console.error('page error:', err.message); });
        // a refused form answers 400 on purpose; anything else failing (an asset, the CSP) is a problem
        page.on('console', (m) => { if (m.type() === 'error' && !/status of 400/.test(m.text()) && !m.location().url.endsWith('/favicon.ico')) { problems++; console.error('console:', m.text(), m.location().url); } });
        page.on('dialog', (d) => void d.accept());
        await logIn(page, gw.url, MASTER);
        const shot = async (name: string) => {
          await page.evaluate('window.scrollTo(0, 0)');
          await page.screenshot({ path: join(OUT, `users-${name}-${size}-${scheme}.png`), fullPage: true });
        };

        await page.goto(`${gw.url}/ui/users`);
        await shot('list');

        await page.goto(`${gw.url}/ui/users/new`);
        await page.fill('#name', 'new-box');
        await page.fill('#allow-add', 'fast');
        await page.press('#allow-add', 'Enter');
        await page.fill('#allow-add', 'box/llama-3.1-8b');
        await page.click('[data-add]');
        await page.fill('#quota_cost_month', '2,50');
        await page.focus('#allow-add');
        await shot('new');

        // a refused form: blank name, a quota that is no number
        await page.fill('#name', '');
        await page.fill('#quota_req_day', 'lots');
        await Promise.all([page.waitForLoadState('load'), page.click('button.primary[type="submit"]')]);
        await shot('refused');

        await page.fill('#name', `made-${size}-${scheme}`);
        await page.fill('#quota_req_day', '100');
        await Promise.all([page.waitForLoadState('load'), page.click('button.primary[type="submit"]')]);
        await shot('key-once');

        await page.goto(`${gw.url}/ui/users/${editId}`);
        await shot('edit');
        await context.close();
      }
    }
    // without script the picker is a multi-select and a text box
    const context = await browser.newContext({ viewport: SIZES.desktop, colorScheme: 'light', javaScriptEnabled: false });
    const page = await context.newPage();
    await logIn(page, gw.url, MASTER);
    await page.goto(`${gw.url}/ui/users/${editId}`);
    await page.screenshot({ path: join(OUT, 'users-edit-noscript-desktop-light.png'), fullPage: true });
    await context.close();
  } finally {
    await browser.close();
    await gw.close();
    await fake.close();
  }
  console.log(`screenshots in ${OUT}${problems ? `; ${problems} page problems (see above)` : ''}`);
  if (problems) process.exitCode = 1;
}

await main();
