import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { type Browser, chromium, type Locator, type Page } from 'playwright-core';
import { expect } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

/** Debian's chromium (apt-get install chromium; .ci/run does); LOUPE_CHROMIUM names another binary. */
export const CHROMIUM = process.env.LOUPE_CHROMIUM || '/usr/bin/chromium';

/** Builds the console when console/dist is missing (npm test builds it first; this covers `npx vitest run`). */
export function ensureConsoleBuilt(): void {
  if (existsSync(join(ROOT, 'console', 'dist', 'index.html'))) return;
  execFileSync('npm', ['run', 'build:console'], { cwd: ROOT, stdio: 'inherit' });
}

export async function launchBrowser(): Promise<Browser> {
  ensureConsoleBuilt();
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

/** A page of the console, recording uncaught page errors, CSP violations and dialogs (none may happen). */
export interface ConsolePage {
  page: Page;
  problems: string[];
  close(): Promise<void>;
}

export async function openConsole(browser: Browser, origin: string, width = 1280): Promise<ConsolePage> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy|Refused to/i.test(m.text()))
      problems.push(`CSP: ${m.text()}`);
  });
  page.on('dialog', (d) => {
    problems.push(`dialog: ${d.message()}`);
    void d.dismiss();
  });
  await page.goto(`${origin}/`);
  return { page, problems, close: () => context.close() };
}

/** Presses Tab (up to 60 times) until `target` has the focus: the element is reachable by keyboard. */
export async function tabTo(page: Page, target: Locator): Promise<void> {
  const handle = await target.elementHandle();
  for (let i = 0; i < 60; i++) {
    if (await page.evaluate((el) => (globalThis as any).document.activeElement === el, handle)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error(`Tab never reached ${target}`);
}

/** Signs in with the keyboard only: Tab to "API key", type it, Enter. */
export async function signIn(page: Page, key: string): Promise<void> {
  await tabTo(page, page.getByLabel('API key'));
  await page.keyboard.type(key);
  await page.keyboard.press('Enter');
  await page.getByRole('navigation').waitFor();
}

/** axe-core on the current page: no serious or critical violations. */
export async function expectAccessible(page: Page, where: string): Promise<void> {
  const r = await new AxeBuilder({ page }).analyze();
  const bad = r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(
    bad.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
    `accessibility of ${where}`,
  ).toEqual([]);
}
