import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
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
  env: {
    LOUPE_ADMIN_KEY: key,
    LOUPE_DEMO_DATA: 'true',
    LOUPE_LOG_LEVEL: 'SILENT',
    LOUPE_DEV_ALLOW_LOOPBACK_HTTP: 'true',
  },
  log: () => {},
});
/** The API as `as` (default: the admin), answering the envelope's data. */
async function call(method: string, path: string, body?: unknown, as = key): Promise<any> {
  const res = await fetch(`${app.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${as}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as { data?: unknown; error?: { message: string } };
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${json.error?.message}`);
  return json.data;
}

// Something to show on Approvals, Workflows and Settings: a writable SQLite file, an analyst who submits
// writes (one approved, one waiting), a workflow that ran once, an event webhook.
const sqliteDir = join(dataDir, 'sqlite', app.orgId);
mkdirSync(sqliteDir, { recursive: true });
const shop = new DatabaseSync(join(sqliteDir, 'shop.sqlite'));
shop.exec(
  "CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, price_cents INTEGER); INSERT INTO products VALUES (1, 'Lamp', 2900), (2, 'Desk', 18900)",
);
shop.close();
const shopConn = await call('POST', '/connections', {
  name: 'Shop (SQLite)',
  type: 'SQLITE',
  database: 'shop.sqlite',
  readOnly: false,
});
const analyst = await call('POST', '/members', {
  email: 'priya@example.com',
  name: 'Priya (analyst)',
  role: 'member',
  connectionIds: [shopConn.id],
});
const analystKey = (await call('POST', `/members/${analyst.id}/keys`, { name: 'laptop' })).key;
const submitted = await call(
  'POST',
  '/queries/submit',
  {
    connectionId: shopConn.id,
    query: 'UPDATE products SET price_cents = 3200 WHERE id = 1',
    context: 'New lamp price from March',
  },
  analystKey,
);
await call('POST', `/queries/${submitted.id}/approve`, { note: 'Matches the price list' });
await call(
  'POST',
  '/queries/submit',
  {
    connectionId: shopConn.id,
    query: "INSERT INTO products VALUES (3, 'Chair', 7900)",
    context: 'Chair launches next week',
  },
  analystKey,
);
const demoConn = ((await call('GET', '/connections')) as { id: string; name: string }[]).find(
  (c) => c.name === 'Demo SaaS (SQLite)',
)!;
const workflow = await call('POST', '/workflows', {
  name: 'Weekly plan mix',
  triggerType: 'SCHEDULE',
  triggerConfig: { preset: 'WEEKLY', dayOfWeek: 1, hour: 8, minute: 0, timezone: 'Europe/Berlin' },
  actions: [
    {
      type: 'EMAIL',
      config: { to: ['team@example.com'], subject: 'Plan mix: {{query_1.row_count}} plans', attachCsv: true },
    },
  ],
  connectionId: demoConn.id,
  steps: [
    {
      name: 'accounts by plan',
      query:
        'SELECT p.name AS plan, COUNT(*) AS accounts FROM accounts a JOIN plans p ON p.id = a.plan_id GROUP BY p.name ORDER BY accounts DESC LIMIT 10',
    },
  ],
});
await call('POST', `/workflows/${workflow.id}/run`);
await call('POST', '/webhooks', {
  url: 'http://localhost:8080/loupe-events',
  events: ['query.approval.requested', 'query.approved'],
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
  // The SQL editor (its own chunk) and the Schema panel, loaded.
  await page.locator('.sql-editor[data-ready]').waitFor();
  await page
    .getByRole('region', { name: 'Schema' })
    .getByRole('button', { name: 'accounts', exact: true })
    .waitFor();
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

  await nav('Approvals');
  await page.getByRole('button', { name: 'Approve' }).waitFor();
  await page.getByRole('region', { name: 'History' }).getByRole('article').first().waitFor();
  await page.screenshot({ path: join(out, 'console-approvals.png'), fullPage: true });

  await nav('Workflows');
  await page.getByRole('link', { name: 'Weekly plan mix' }).click();
  const run = page.getByRole('list', { name: 'Runs' }).getByRole('listitem').first();
  await run.locator('summary', { hasText: 'Step results' }).click();
  await run.getByRole('table').first().waitFor();
  await page.screenshot({ path: join(out, 'console-workflows.png'), fullPage: true });
  // The builder: a new workflow with a step, a webhook action and a schedule.
  await page.getByRole('button', { name: 'New workflow' }).click();
  const form = page.locator('form.builder');
  await form.getByLabel('Name', { exact: true }).fill('Churned accounts to the CRM');
  const step = form.getByRole('group', { name: 'Step 1' });
  await step.getByLabel('Step name').fill('churned');
  await step.getByLabel('Connection').selectOption(demoConn.id);
  await step
    .getByRole('textbox', { name: 'SQL' })
    .fill("SELECT id, name, country FROM accounts WHERE status = 'churned' LIMIT 100");
  await step.getByLabel(/Stop here/).check();
  await form.getByRole('button', { name: 'Add action' }).click();
  await form
    .getByRole('group', { name: 'Action 1' })
    .getByLabel('URL')
    .fill('https://crm.example.com/hooks/loupe');
  await form.getByLabel('On a schedule').check();
  await form.getByLabel('Time', { exact: true }).fill('07:30');
  await form.getByLabel('Timezone').fill('Europe/Berlin');
  await form.getByRole('heading', { name: 'Trigger' }).scrollIntoViewIfNeeded();
  await page.getByRole('heading', { name: 'New workflow' }).scrollIntoViewIfNeeded();
  await page.waitForTimeout(300);
  await page.locator('form.builder').screenshot({ path: join(out, 'console-workflow-builder.png') });

  await nav('Settings');
  await page
    .getByRole('region', { name: 'Members' })
    .getByRole('cell', { name: 'Priya (analyst)', exact: true })
    .waitFor();
  await page.screenshot({ path: join(out, 'console-settings.png'), fullPage: true });
} finally {
  await browser.close();
  await app.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
console.log(`Screenshots written to ${out}`);
