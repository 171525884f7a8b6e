import type { Page } from '@playwright/test';
import {
  addMember,
  demoConnection,
  expect,
  expectAccessible,
  expectInert,
  go,
  HOSTILE,
  signIn,
  test,
} from './fixtures';

/**
 * Approval rules (Approvals page, admins) and annotations (a connection's schema view) made, edited and
 * deleted in the console; each change read back through the API, the API's validation messages shown
 * by their fields, markup kept as text, and a member shown no rule form (the API would answer 403).
 */

test('Approvals: an admin adds, edits and deletes an approval rule; a member sees no rule form', async ({
  adminPage: page,
  server: s,
  browser,
  origin,
}) => {
  const demo = await demoConnection(s);
  const reviewer = await addMember(s, {
    email: `reviewer-${Date.now()}@example.com`,
    name: `Reviewer ${HOSTILE}`,
    connectionIds: [demo.id],
  });
  const rules = async () => (await s.call('GET', '/approval-rules?pageSize=100')).body.data as any[];
  // The worker's runtime is shared with other spec files: only this test's rule counts.
  const before = new Set((await rules()).map((r) => r.id));

  await go(page, 'Approvals');
  const section = page.getByRole('region', { name: 'Approval rules' });
  await section.locator('summary', { hasText: 'New approval rule' }).click();
  const form = section.locator('details.new form');
  // No approver chosen: the API's message appears by the Approvers group.
  await form.getByLabel('Rule connection').selectOption(demo.id);
  await form.getByRole('button', { name: 'Add rule' }).click();
  const approvers = form.getByRole('group', { name: 'Approvers' });
  await expect(approvers.locator('.field-error')).not.toBeEmpty();
  expect((await rules()).filter((r) => !before.has(r.id))).toEqual([]);

  await form.getByLabel('Needs approval').selectOption('write');
  await approvers.getByRole('checkbox', { name: /^Reviewer/ }).check();
  await form.getByRole('button', { name: 'Add rule' }).click();
  await expect(section.getByRole('status').filter({ hasText: 'Approval rule added.' })).toBeVisible();
  const added = (await rules()).find((r) => !before.has(r.id));
  expect(added).toMatchObject({ scope: 'write', approvers: [reviewer.id], isActive: true });
  // This test's rule: the one its reviewer approves (other rules may exist on the shared runtime).
  const card = section.getByRole('article').filter({ hasText: `Reviewer ${HOSTILE}` });
  await expect(card).toHaveAccessibleName('Approval rule Demo SaaS (SQLite): writes only');
  await expect(card.getByText(`Reviewer ${HOSTILE}`)).toBeVisible();
  await expectInert(page);
  await expectAccessible(page, 'approval rules');

  // Edit: every query, and turned off.
  await card.getByRole('button', { name: 'Edit approval rule Demo SaaS (SQLite): writes only' }).click();
  await card.getByLabel('Needs approval').selectOption('all');
  await card.getByLabel('Active').uncheck();
  await card.getByRole('button', { name: 'Save rule' }).click();
  await expect(section.getByRole('status').filter({ hasText: 'Approval rule saved.' })).toBeVisible();
  expect((await rules()).find((r) => r.id === added.id)).toMatchObject({
    scope: 'all',
    isActive: false,
    approvers: [reviewer.id],
    connectionId: demo.id,
  });

  // A member is not shown the rules (GET /approval-rules is admin-only).
  const other = await browser.newContext();
  const memberPage = await other.newPage();
  await memberPage.goto(`${origin}/`);
  await signIn(memberPage, reviewer.key);
  await go(memberPage, 'Approvals');
  await expect(memberPage.getByRole('heading', { name: 'History' })).toBeVisible();
  await expect(memberPage.getByRole('heading', { name: 'Approval rules' })).toHaveCount(0);
  await expect(memberPage.getByText('New approval rule')).toHaveCount(0);
  await other.close();

  // Delete after a confirmation.
  await expect(card).toHaveAccessibleName('Approval rule Demo SaaS (SQLite): every query');
  await card.getByRole('button', { name: /^Delete approval rule/ }).click();
  await card.getByRole('button', { name: 'Yes, delete rule' }).click();
  await expect(section.getByRole('status').filter({ hasText: 'Approval rule deleted.' })).toBeVisible();
  expect((await rules()).find((r) => r.id === added.id)).toBeUndefined();
});

async function openTable(page: Page, table: string) {
  await go(page, 'Connections');
  await page.getByRole('link', { name: 'Demo SaaS (SQLite)' }).click();
  const details = page
    .locator('details.table-schema')
    .filter({ has: page.locator('summary', { hasText: new RegExp(`^${table} `) }) });
  if (!(await details.evaluate((d: any) => d.open))) await details.locator('summary').first().click();
  return details;
}

test('Connections: annotations on a table and a column are added, edited and deleted in the schema view', async ({
  adminPage: page,
  server: s,
}) => {
  const demo = await demoConnection(s);
  const notes = async () =>
    (await s.call('GET', `/connections/${demo.id}/annotations?table=accounts&pageSize=100`)).body
      .data as any[];
  const table = await openTable(page, 'accounts');
  await table.locator('summary', { hasText: 'Annotate accounts' }).click();
  const text = table.getByLabel('Annotation for accounts', { exact: true });

  // Empty: the API's message by the field, nothing stored.
  await text.fill('   ');
  await table.getByRole('button', { name: 'Save annotation' }).click();
  await expect(text).toHaveAttribute('aria-invalid', 'true');
  expect(await notes()).toEqual([]);

  await text.fill(`Customer accounts, one per company ${HOSTILE}`);
  await table.getByLabel('Example values (optional)').fill('Acme, Globex');
  await table.getByRole('button', { name: 'Save annotation' }).click();
  await expect(table.getByRole('status').filter({ hasText: 'Annotation on accounts saved.' })).toBeVisible();
  await expect(table.locator('p.note')).toHaveText(`Customer accounts, one per company ${HOSTILE}`);
  const [tableNote] = await notes();
  expect(tableNote).toMatchObject({
    tableName: 'accounts',
    columnName: null,
    annotation: `Customer accounts, one per company ${HOSTILE}`,
    examples: 'Acme, Globex',
  });

  // A column's note, shown in its row.
  await table.getByLabel('Annotate', { exact: true }).selectOption('status');
  const columnText = table.getByLabel('Annotation for accounts.status');
  await expect(columnText).toHaveValue('');
  await columnText.fill('active, trialing or churned');
  await table.getByRole('button', { name: 'Save annotation' }).click();
  await expect(
    table.getByRole('status').filter({ hasText: 'Annotation on accounts.status saved.' }),
  ).toBeVisible();
  await expect(table.getByRole('row', { name: /^status/ })).toContainText('active, trialing or churned');
  expect((await notes()).find((n) => n.columnName === 'status')).toMatchObject({
    annotation: 'active, trialing or churned',
  });

  // Back to the table's note: prefilled, edited in place (same id).
  await table.getByLabel('Annotate', { exact: true }).selectOption('');
  await expect(text).toHaveValue(`Customer accounts, one per company ${HOSTILE}`);
  await text.fill('Customer accounts (one per company)');
  await table.getByRole('button', { name: 'Save annotation' }).click();
  await expect(table.locator('p.note')).toHaveText('Customer accounts (one per company)');
  expect((await notes()).find((n) => n.id === tableNote.id)).toMatchObject({
    annotation: 'Customer accounts (one per company)',
    columnName: null,
  });
  await expectInert(page);
  await expectAccessible(page, 'annotations in the schema view');

  // Deleted after a confirmation.
  await table.getByRole('button', { name: 'Delete annotation' }).click();
  await table.getByRole('button', { name: 'Yes, delete annotation' }).click();
  await expect(
    table.getByRole('status').filter({ hasText: 'Annotation on accounts deleted.' }),
  ).toBeVisible();
  await expect(text).toHaveValue('');
  expect((await notes()).map((n) => n.columnName)).toEqual(['status']);
  await s.call('DELETE', `/connections/${demo.id}/annotations/${(await notes())[0].id}`);
});
