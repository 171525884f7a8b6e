import { randomBytes } from 'node:crypto';
import { createConnection, openTestDatabases, postgresConnection } from '../support/connections';
import { expect, expectAccessible, go, test } from './fixtures';

/**
 * A failing connection in Debian's chromium, against the run's embedded PostgreSQL: "Test connection"
 * shows the API's diagnosis with its fix steps, the list shows it inactive and failing; an admin corrects
 * the password in the edit form (never shown) and the next test brings it back. Read back through the API.
 */
test('Connections: a failed test shows the diagnosis and fix steps; fixing the password in the form brings it back', async ({
  adminPage: page,
  server: s,
  postgres,
}) => {
  const tag = randomBytes(3).toString('hex');
  const name = `pg wrong password ${tag}`;
  const dbs = await openTestDatabases(postgres, null, 'unused.sqlite');
  await dbs.pg.query(`CREATE TABLE conn_${tag}_first (id int PRIMARY KEY)`);
  const id = await createConnection(s, postgresConnection(postgres, { name, password: 'not-the-password' }));
  const read = async () => (await s.call('GET', `/connections/${id}`)).body.data;

  await go(page, 'Connections');
  await page.getByRole('link', { name }).click();
  await expect(page.getByRole('heading', { level: 2, name })).toBeVisible();
  const row = page.getByRole('row', { name: new RegExp(name) });
  await expect(row.getByText('not tested yet')).toBeVisible();
  // Never read: the schema section says so in words, not as an error.
  await expect(page.getByText(/The schema has not been read yet/)).toBeVisible();
  expect(await page.getByRole('alert').count()).toBe(0);
  await page.getByRole('button', { name: 'Test connection' }).click();

  await expect.poll(async () => (await read()).lastErrorDiagnosis).toBeTruthy();
  const stored = await read();
  expect(stored.isActive).toBe(false);
  const diagnosis = page.getByRole('region', { name: 'Diagnosis' });
  await expect(diagnosis.getByRole('heading', { name: stored.lastErrorDiagnosis.title })).toBeVisible();
  await expect(diagnosis.getByRole('listitem')).toHaveText(stored.lastErrorDiagnosis.fixSteps);
  expect(stored.lastErrorDiagnosis.fixSteps.join(' ')).toContain(postgres.user); // the real username
  await expect(page.getByRole('alert').first()).toContainText('CONNECTION_FAILED');
  await expect(row.getByText('inactive', { exact: true })).toBeVisible();
  await expect(row.getByText(`failing: ${stored.lastErrorDiagnosis.title}`)).toBeVisible();
  await expectAccessible(page, 'connection diagnosis');

  // The password field is empty (never shown); typing the right one and saving changes only it.
  await page.locator('summary', { hasText: 'Edit connection' }).click();
  await expect(page.locator('#edit-password')).toHaveValue('');
  // A port that is not a number is refused in the form; nothing is sent.
  await page.locator('#edit-port').fill('abc');
  await page.getByRole('button', { name: 'Save connection' }).click();
  await expect(page.locator('#edit-port-error')).toContainText('whole number');
  expect((await read()).port).toBe(postgres.port);
  await page.locator('#edit-port').fill(String(postgres.port));
  await page.locator('#edit-password').fill(postgres.password);
  await page.getByRole('button', { name: 'Save connection' }).click();
  await expect(page.getByRole('status').getByText('Saved.')).toBeVisible();
  await page.getByRole('button', { name: 'Test connection' }).click();
  await expect(page.getByRole('status').getByText(/^Connected/)).toBeVisible();
  await expect(row.getByText('healthy', { exact: true })).toBeVisible();
  await expect(row.getByText('active', { exact: true })).toBeVisible();
  await expect(diagnosis).toHaveCount(0);
  expect(await read()).toMatchObject({ isActive: true, lastError: null, name });
  expect(JSON.stringify(await read())).not.toContain(postgres.password);

  // The successful test read the schema, and the page shows it without a reload.
  await page.getByLabel('Search tables and columns').fill(`conn_${tag}`);
  await expect(
    page.locator('details.table-schema > summary', { hasText: `conn_${tag}_first` }),
  ).toBeVisible();
  // A table created later appears after "Refresh schema".
  await dbs.pg.query(`CREATE TABLE conn_${tag}_later (id int PRIMARY KEY, note text)`);
  await page.getByRole('button', { name: 'Refresh schema' }).click();
  await expect(
    page.locator('details.table-schema > summary', { hasText: `conn_${tag}_later` }),
  ).toBeVisible();
  await dbs.pg.query(`DROP TABLE conn_${tag}_first`);
  await dbs.close(`conn_${tag}_later`);
});
