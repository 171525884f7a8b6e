import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocal } from '../infra/local/app';
import { generateKey } from '../shared/auth/key-material';
import { launchBrowser, signIn } from '../test/support/browser';

/**
 * `npx tsx console/screenshots.ts`: the documentation's screenshots (docs/images/console-*.png) of the
 * console over a fresh local runtime with the demo data, taken with chromium.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'loupe-shots-'));
const key = generateKey();
const app = await startLocal({
  port: 0,
  dataDir,
  instances: 0,
  env: { LOUPE_ADMIN_KEY: key, LOUPE_DEMO_DATA: 'true', LOUPE_LOG_LEVEL: 'SILENT' },
  log: () => {},
});
const out = join(import.meta.dirname, '..', 'docs', 'images');
mkdirSync(out, { recursive: true });
const browser = await launchBrowser();
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 760 } });
  const origin = app.url.replace(/\/v1$/, '');
  await page.goto(`${origin}/`);
  await page.screenshot({ path: join(out, 'console-sign-in.png') });
  await signIn(page, key);
  const nav = (name: string) => page.getByRole('navigation').getByRole('link', { name, exact: true }).click();

  await nav('Dashboards');
  await page.getByRole('link', { name: 'Demo SaaS metrics' }).click();
  for (const t of ['MRR by plan', 'Signups by month', 'Revenue by month (USD)', 'Accounts by status (churn)'])
    await page.getByRole('region', { name: t }).locator('canvas').waitFor();
  await page.waitForTimeout(500);
  await page.screenshot({ path: join(out, 'console-dashboard.png'), fullPage: true });

  await nav('Query');
  await page.getByLabel('Connection').selectOption({ label: 'Demo SaaS (SQLite) (SQLITE)' });
  await page
    .getByLabel('SQL')
    .fill(
      'SELECT p.name AS plan, COUNT(*) AS accounts, ROUND(AVG(p.monthly_price_cents) / 100.0, 2) AS price_usd\nFROM accounts a JOIN plans p ON p.id = a.plan_id\nGROUP BY p.name ORDER BY accounts DESC',
    );
  await page.getByRole('button', { name: 'Run' }).click();
  await page.getByRole('table', { name: 'Query result' }).waitFor();
  await page.screenshot({ path: join(out, 'console-query.png') });

  await nav('Connections');
  await page.getByRole('link', { name: 'Demo SaaS (SQLite)' }).click();
  await page.getByLabel('Search tables and columns').fill('subscriptions');
  await page.getByText('mrr_cents').first().waitFor();
  await page.screenshot({ path: join(out, 'console-connections.png') });
} finally {
  await browser.close();
  await app.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
console.log(`Screenshots written to ${out}`);
