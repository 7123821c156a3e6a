/**
 * Headless Chromium for the console's browser tests: Debian's chromium driven by
 * playwright-core. Without it the browser tests skip loudly; under CI=true a missing browser
 * is a failure (.ci/run installs it).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const present = existsSync(CHROMIUM);
if (!present && process.env.CI === 'true')
  throw new Error(`chromium not found at ${CHROMIUM}: the console's browser tests cannot run`);
if (!present)
  console.warn(
    `\n!!! chromium not found at ${CHROMIUM}: SKIPPING the console's browser tests (apt-get install -y chromium) !!!\n`,
  );

export const skipWithoutChromium: string | false = present ? false : `no chromium at ${CHROMIUM}`;

/** Screenshots for reviewers (git-ignored). */
export const SHOTS_DIR = resolve(process.cwd(), 'test-artifacts', 'ui');

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

export const VIEWPORTS = {
  desktop: { width: 1280, height: 800 },
  phone: { width: 390, height: 844 },
} as const;

export async function newContext(
  browser: Browser,
  opts: { viewport?: keyof typeof VIEWPORTS; scheme?: 'light' | 'dark' } = {},
): Promise<BrowserContext> {
  return browser.newContext({ viewport: VIEWPORTS[opts.viewport ?? 'desktop'], colorScheme: opts.scheme ?? 'light' });
}

export async function shoot(page: Page, name: string): Promise<string> {
  mkdirSync(SHOTS_DIR, { recursive: true });
  const path = join(SHOTS_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** Logs in through the form. */
export async function logIn(page: Page, base: string, key: string): Promise<void> {
  await page.goto(`${base}/ui/login`);
  await page.getByLabel('Admin key').fill(key);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(`${base}/ui`);
}
