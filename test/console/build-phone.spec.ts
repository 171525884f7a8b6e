import type { Locator, Page, TestInfo } from '@playwright/test';
import { addMember, demoConnection, expect, expectAccessible, go, test } from './fixtures';

/**
 * The pages that build things, on a 390 px phone: the workflow builder and a workflow with long names,
 * approval rules, the connection form and the annotation editor, the dashboard (no drag handles on a
 * phone), the navigation, the API keys as cards, a wide table's caption; none scrolls the page sideways
 * and axe finds no serious or critical problem. Also: a key issued for a member is listed under API keys
 * at once.
 */
const LONG = (what: string) => `${what}_${'x'.repeat(100)}`;

async function fits(page: Page, info: TestInfo, where: string) {
  await page.waitForLoadState('networkidle');
  const { scrollWidth, innerWidth } = await page.evaluate(() => ({
    scrollWidth: (globalThis as any).document.documentElement.scrollWidth as number,
    innerWidth: (globalThis as any).innerWidth as number,
  }));
  await page.screenshot({ path: info.outputPath(`${innerWidth}-${where}.png`), fullPage: true });
  expect(scrollWidth, `${where} at ${innerWidth} px: no horizontal page scroll`).toBeLessThanOrEqual(
    innerWidth,
  );
  await expectAccessible(page, `${where} at ${innerWidth} px`);
}

/** Inside the window horizontally. */
async function inside(l: Locator, width: number) {
  const b = (await l.boundingBox())!;
  expect(b.x).toBeGreaterThanOrEqual(0);
  expect(b.x + b.width).toBeLessThanOrEqual(width + 0.5);
}

test('390 px: the builder pages, the navigation, the keys as cards and a wide table’s caption fit without sideways scrolling', async ({
  adminPage: page,
  server: s,
}, info) => {
  // Seven pages with axe on each: more than the default minute on a loaded 2-core machine.
  test.setTimeout(180_000);
  await page.setViewportSize({ width: 390, height: 844 });
  const demo = await demoConnection(s);
  const member = await addMember(s, {
    email: `phone-${Date.now()}@example.com`,
    name: LONG('member'),
    connectionIds: [demo.id],
  });
  const rule = await s.call('POST', '/approval-rules', {
    body: { approvers: [member.id], connectionId: demo.id },
  });
  expect(rule.status, rule.text).toBe(201);
  const wide = `SELECT ${Array.from({ length: 12 }, (_, i) => `'${'v'.repeat(20)}' AS column_number_${i}`).join(', ')}`;
  const wf = await s.call('POST', '/workflows', {
    body: {
      name: LONG('workflow'),
      triggerType: 'MANUAL',
      connectionId: demo.id,
      steps: [{ name: LONG('step'), query: wide }],
    },
  });
  expect(wf.status, wf.text).toBe(201);
  expect((await s.call('POST', `/workflows/${wf.body.data.id}/run`)).status).toBe(201);

  // The navigation: every link inside the window, none on top of another.
  const links = await page.getByRole('navigation').getByRole('link').all();
  const boxes = await Promise.all(links.map((l) => l.boundingBox()));
  for (const b of boxes) {
    expect(b!.x + b!.width).toBeLessThanOrEqual(390);
    expect(b!.height).toBeGreaterThanOrEqual(32);
  }
  for (const [i, a] of boxes.entries())
    for (const b of boxes.slice(i + 1))
      expect(
        a!.x + a!.width <= b!.x ||
          b!.x + b!.width <= a!.x ||
          a!.y + a!.height <= b!.y ||
          b!.y + b!.height <= a!.y,
      ).toBe(true);

  // The workflow builder, with every kind of part open.
  await go(page, 'Workflows');
  await page.getByRole('button', { name: 'New workflow' }).click();
  const form = page.locator('form.builder');
  await form.getByLabel('Name', { exact: true }).fill(LONG('name'));
  await form.getByRole('button', { name: 'Add step' }).click();
  await form.getByRole('button', { name: 'Add action' }).click();
  await form.getByRole('button', { name: 'Add action' }).click();
  await form.getByRole('group', { name: 'Action 2' }).getByLabel('Action type').selectOption('EMAIL');
  await form.getByLabel('On a schedule').check();
  await form.getByLabel('Repeat').selectOption('WEEKLY');
  await fits(page, info, 'workflow-builder');
  await form.getByRole('button', { name: 'Cancel' }).click();

  // A workflow with long names and a run with a wide result: the caption stays in the window.
  await page.getByRole('link', { name: LONG('workflow') }).click();
  await page.locator('summary', { hasText: 'Step results' }).first().click();
  const caption = page.getByRole('table', { name: 'Rows of step 1' }).locator('caption');
  await expect(caption).toBeVisible();
  await inside(caption, 390);
  await fits(page, info, 'workflow');

  // Approval rules with the form open.
  await go(page, 'Approvals');
  await page.locator('summary', { hasText: 'New approval rule' }).click();
  await fits(page, info, 'approval-rules');

  // The connection form and the annotation editor.
  await go(page, 'Connections');
  await page.locator('summary', { hasText: 'New connection' }).click();
  const tls = page.getByLabel('Use TLS (SSL) to connect');
  const readOnly = page.getByLabel(/Read-only \(writes/);
  // One checkbox per line.
  expect((await readOnly.boundingBox())!.y).toBeGreaterThan((await tls.boundingBox())!.y + 10);
  await fits(page, info, 'connection-form');
  await page.getByRole('link', { name: 'Demo SaaS (SQLite)' }).click();
  const accounts = page
    .locator('details.table-schema')
    .filter({ has: page.locator('summary', { hasText: /^accounts / }) });
  await accounts.locator('summary').first().click();
  await accounts.locator('summary', { hasText: 'Annotate accounts' }).click();
  await fits(page, info, 'annotations');

  // The demo dashboard: one widget per row, and no drag handles on a phone.
  await go(page, 'Dashboards');
  await page.getByRole('link', { name: 'Demo SaaS metrics' }).click();
  await expect(page.getByRole('region', { name: 'MRR (USD)' })).toBeVisible();
  await expect(page.getByRole('button', { name: /^Move / })).toHaveCount(0);
  await fits(page, info, 'dashboard');

  // API keys as cards: every value of a row inside the window, still a table with cells.
  await go(page, 'Settings');
  const keys = page.getByRole('region', { name: 'API keys' });
  const row = keys.getByRole('row').filter({ hasText: 'this key' });
  for (const cell of await row.getByRole('cell').all()) await inside(cell, 390);
  await expect(row.getByRole('cell')).toHaveCount(6);
  await fits(page, info, 'settings');

  // "Create member key": the keys table lists the new key without a reload.
  const before = await keys.getByRole('row').count();
  await page.getByRole('button', { name: `New key for ${LONG('member')}` }).click();
  await page.getByLabel(`Key name for ${LONG('member')}`).fill('phone key');
  await page.getByRole('button', { name: 'Create member key' }).click();
  await expect(page.getByRole('textbox', { name: `The new API key for ${LONG('member')}.` })).toBeVisible();
  await expect(keys.getByRole('row')).toHaveCount(before + 1);
  await expect(keys.getByRole('row').filter({ hasText: 'phone key' })).toContainText(LONG('member'));
});

for (const [locale, big, small] of [
  ['en-US', '1,234,567.89', '0.00123'],
  ['de-DE', '1.234.567,89', '0,00123'],
] as const)
  test.describe(`METRIC widgets in ${locale}`, () => {
    test.use({ locale });
    test(`show formatted numbers for ${locale} readers`, async ({ adminPage: page, server: s, origin }) => {
      const demo = await demoConnection(s);
      const d = await s.call('POST', '/dashboards', { body: { title: `Numbers ${locale}` } });
      const metrics: [string, string][] = [
        ['Big', 'SELECT 1234567.891 AS value'],
        ['Small', 'SELECT 0.001234 AS value'],
        ['Huge', "SELECT '12345678901234567890' AS value"],
        ['Label', "SELECT 'n/a' AS value"],
      ];
      for (const [title, query] of metrics) {
        const w = await s.call('POST', `/dashboards/${d.body.data.id}/widgets`, {
          body: { type: 'METRIC', title, query, connectionId: demo.id, width: 3, height: 1 },
        });
        expect(w.status, w.text).toBe(201);
      }
      await page.goto(`${origin}/#/dashboards/${d.body.data.id}`);
      const value = (title: string) => page.getByRole('region', { name: title }).locator('.metric-value');
      await expect(value('Big')).toHaveText(big);
      await expect(value('Small')).toHaveText(small);
      await expect(value('Huge')).toHaveText(
        locale === 'en-US' ? '12,345,678,901,234,567,890' : '12.345.678.901.234.567.890',
      );
      await expect(value('Label')).toHaveText('n/a');
      // The exact value is kept in the title.
      await expect(value('Big')).toHaveAttribute('title', '1234567.891');
    });
  });
