import { randomBytes } from 'node:crypto';
import { createConnection, postgresConnection } from '../support/connections';
import { addMember, demoConnection, expect, expectAccessible, go, specTables, test } from './fixtures';

/**
 * Writes from the console happen once, whatever the user does twice: Ctrl+Enter pressed repeatedly runs one
 * statement, a double click submits one approval request and approves once. An admin's own submission is
 * marked as waiting for another reviewer; a read-only connection says so instead of offering approval.
 * Every count is read back through the API and the database.
 */
const suffix = randomBytes(4).toString('hex');
const T = `submits_${suffix}`;

const dbs = specTables(
  [T],
  [`CREATE TABLE ${T} (id int PRIMARY KEY, label text)`, `INSERT INTO ${T} VALUES (1, 'one'), (2, 'two')`],
);
let pgConn: string;
let analystKey: string;

test.beforeAll(async ({ server: s, postgres }) => {
  pgConn = await createConnection(s, postgresConnection(postgres, { name: `pg ${suffix}`, readOnly: false }));
  analystKey = (
    await addMember(s, {
      email: `analyst-${suffix}@example.com`,
      name: `analyst ${suffix}`,
      connectionIds: [pgConn],
    })
  ).key;
});

const table = () =>
  dbs.query<{ id: number; label: string }>('POSTGRES', `SELECT id, label FROM ${T} ORDER BY id`);

test('Query: Ctrl+Enter pressed three times runs the statement once; a double click submits one approval request, with its context', async ({
  adminPage: page,
  server: s,
}) => {
  const slow = `SELECT count(*) AS n FROM generate_series(1, 2000000) g -- ${suffix}`;
  const runsOf = async (sql: string) =>
    (
      (await s.call('GET', `/connections/${pgConn}/queries?pageSize=100`)).body.data as { sql: string }[]
    ).filter((q) => q.sql === sql).length;
  await go(page, 'Query');
  await page.getByLabel('Connection').selectOption(pgConn);
  await page.getByLabel('SQL').fill(slow);
  await page.getByLabel('SQL').press('Control+Enter');
  await page.getByLabel('SQL').press('Control+Enter');
  await page.getByLabel('SQL').press('Control+Enter');
  await expect(page.getByRole('table', { name: 'Query result' })).toBeVisible();
  await expect(page.getByRole('button', { name: 'Run' })).toBeEnabled();
  expect(await runsOf(slow)).toBe(1);

  // A write: refused, then submitted for approval once, with the reason typed in the alert.
  const write = `UPDATE ${T} SET label = 'changed' WHERE id = 1`;
  await page.getByLabel('SQL').fill(write);
  await page.getByRole('button', { name: 'Run' }).click();
  const alert = page.getByRole('alert');
  await expect(alert).toContainText('READ_ONLY_VIOLATION');
  await expect(alert).toContainText('nobody approves their own submission');
  // Editing the statement withdraws the offer (it was about the refused text); restoring it brings it back.
  await page.getByLabel('SQL').fill(`UPDATE ${T} SET label = 'other' WHERE id = 2`);
  await expect(alert.getByRole('button', { name: 'Submit for approval' })).toHaveCount(0);
  await page.getByLabel('SQL').fill(write);
  await alert.getByLabel('Why (shown to the reviewer, optional)').fill(`fix label ${suffix}`);
  await alert.getByRole('button', { name: 'Submit for approval' }).dblclick();
  await expect(page.getByRole('status').getByText(/Submitted for approval/)).toBeVisible();
  const pending = ((await s.call('GET', '/queries/pending')).body.data as any[]).filter(
    (p) => p.query === write,
  );
  expect(pending).toHaveLength(1);
  expect(pending[0].context).toBe(`fix label ${suffix}`);
  expect(await table()).toEqual([
    { id: 1, label: 'one' },
    { id: 2, label: 'two' },
  ]);

  // Approvals: the admin's own submission waits for another reviewer (no Approve/Reject on it).
  await go(page, 'Approvals');
  const own = page.getByRole('article', { name: `Pending query ${pending[0].id}` });
  await expect(own.getByText(/Your submission: it waits for another reviewer/)).toBeVisible();
  expect(await own.getByRole('button', { name: 'Approve' }).count()).toBe(0);
  await expect(own.getByText(`fix label ${suffix}`)).toBeVisible();
  await expectAccessible(page, 'own submission');
  // A member who is not an approver cannot decide it either (the API says 403).
  const r = await s.call('POST', `/queries/${pending[0].id}/reject`, {
    key: analystKey,
    body: { note: 'x' },
  });
  expect(r.status).toBe(403); // a member who is not an approver cannot decide either
});

test('Approvals: a double click on Approve approves once and runs the write once', async ({
  adminPage: page,
  server: s,
}) => {
  const write = `UPDATE ${T} SET label = label || '+' WHERE id = 2`;
  const sub = await s.call('POST', '/queries/submit', {
    key: analystKey,
    body: { connectionId: pgConn, query: write },
  });
  expect(sub.status, sub.text).toBe(202);
  await go(page, 'Approvals');
  const item = page.getByRole('article', { name: `Pending query ${sub.body.data.id}` });
  await item.getByRole('button', { name: 'Approve' }).dblclick();
  const done = page
    .getByRole('region', { name: 'History' })
    .getByRole('article', { name: `Query ${sub.body.data.id}` });
  await expect(done.getByText('APPROVED', { exact: true })).toBeVisible();
  expect(await page.getByRole('alert').count()).toBe(0); // no second call answered 409
  expect((await table()).find((r) => r.id === 2)?.label).toBe('two+'); // ran once
  expect((await s.call('GET', `/queries/${sub.body.data.id}/status`)).body.data.status).toBe('APPROVED');
});

test('Query on a read-only connection: the refusal says the connection is read-only and offers no approval; nothing changes', async ({
  adminPage: page,
  server: s,
}) => {
  const demo = await demoConnection(s);
  const count = async () =>
    (
      await s.call('POST', `/connections/${demo.id}/query`, {
        body: { sql: 'SELECT count(*) AS n FROM plans' },
      })
    ).body.data.rows[0].n;
  const before = await count();
  await go(page, 'Query');
  await page.getByLabel('Connection').selectOption(demo.id);
  await page.getByLabel('SQL').fill('DELETE FROM plans');
  await page.getByRole('button', { name: 'Run' }).click();
  const alert = page.getByRole('alert');
  await expect(alert).toContainText('READ_ONLY_VIOLATION');
  await expect(alert).toContainText('Demo SaaS (SQLite) is read-only');
  expect(await alert.getByRole('button', { name: 'Submit for approval' }).count()).toBe(0);
  expect(await count()).toBe(before);
  expect(
    ((await s.call('GET', '/queries/pending')).body.data as { query: string }[]).some(
      (p) => p.query === 'DELETE FROM plans',
    ),
  ).toBe(false);
});
