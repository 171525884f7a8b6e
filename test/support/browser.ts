import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { type Browser, chromium, type Locator, type Page } from 'playwright-core';

/**
 * Browser helpers shared by the console's Playwright specs (test/console/fixtures.ts), the console bench
 * and the screenshot script. They import no test runner, so each caller asserts with its own.
 */
const ROOT = join(import.meta.dirname, '..', '..');

/** Debian's chromium (apt-get install chromium; .ci/run does); LOUPE_CHROMIUM names another binary. */
export const CHROMIUM = process.env.LOUPE_CHROMIUM || '/usr/bin/chromium';

/** Chromium's flags for a headless run as root in a container, without background network traffic. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** Builds the console when console/dist is missing (npm test builds it first; this covers direct runs). */
export function ensureConsoleBuilt(): void {
  if (existsSync(join(ROOT, 'console', 'dist', 'index.html'))) return;
  execFileSync('npm', ['run', 'build:console'], { cwd: ROOT, stdio: 'inherit' });
}

/** Launches chromium outside the Playwright runner (the bench, the screenshots). */
export async function launchBrowser(): Promise<Browser> {
  ensureConsoleBuilt();
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

/**
 * Records what must never happen on a console page: uncaught page errors, CSP violations and dialogs
 * (a dialog is dismissed). The returned list fills as the page runs.
 */
export function recordProblems(page: Page): string[] {
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
  return problems;
}

/**
 * Presses Tab (up to 60 times) until `target` has the focus: the element is reachable by keyboard. The
 * locator is resolved again each time (an element may be replaced meanwhile: the SQL editor replaces its
 * textarea when its chunk has loaded), and the focus is looked for inside open shadow roots too.
 */
export async function tabTo(page: Page, target: Locator): Promise<void> {
  for (let i = 0; i < 60; i++) {
    const focused = await target.evaluate((el) => {
      let a = (globalThis as any).document.activeElement;
      while (a?.shadowRoot?.activeElement) a = a.shadowRoot.activeElement;
      return a === el;
    });
    if (focused) return;
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

/** axe-core on the current page: its serious and critical violations, one line each (none is the goal). */
export async function seriousViolations(page: Page): Promise<string[]> {
  const r = await new AxeBuilder({ page }).analyze();
  return r.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}
