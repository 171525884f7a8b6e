import { randomBytes } from 'node:crypto';
import type { Page } from '@playwright/test';
import { createConnection, postgresConnection } from '../support/connections';
import type { TestServer } from '../support/server';
import { expectPainted } from './charts';
import {
  addMember,
  expect,
  expectAccessible,
  expectInert,
  go,
  HOSTILE,
  signIn,
  specTables,
  test,
} from './fixtures';

/**
 * The Query page builds, against embedded PostgreSQL: the Schema panel (tables, columns, types and
 * annotations; search; a click inserts the name), and from a result "Chart", "Save as query" and "Add
 * to dashboard", each read back through the API. Query history names a guard refusal "Refused" and
 * shows a saved query's `{{placeholders}}` as written. A member sees only what it may do: no schema or
 * history of a connection it is not assigned, no dashboard of someone else to add to.
 */
test.use({ demoData: false });

const suffix = randomBytes(4).toString('hex');
const SALES = `qb_sales_${suffix}`;
const REGIONS = `qb_regions_${suffix}`;
specTables(
  [SALES, REGIONS],
  [
    `CREATE TABLE ${SALES} (month text, region text, amount_cents int NOT NULL)`,
    `INSERT INTO ${SALES} VALUES ('2024-01', 'north', 1200), ('2024-02', 'north', 1800), ('2024-03', 'south', 900)`,
    `CREATE TABLE ${REGIONS} (code text PRIMARY KEY, "Display Name" text)`,
  ],
);
let pg: string;
let memberConn: string;

test.beforeAll(async ({ server, postgres }) => {
  pg = await createConnection(server, postgresConnection(postgres, { name: `Sales ${suffix}` }));
  memberConn = await createConnection(server, postgresConnection(postgres, { name: `Members' ${suffix}` }));
  for (const id of [pg, memberConn])
    expect((await server.call('POST', `/connections/${id}/schema`)).status).toBe(200);
  for (const body of [
    { tableName: SALES, annotation: `Monthly sales ${HOSTILE}` },
    { tableName: SALES, columnName: 'amount_cents', annotation: 'in cents, before tax' },
  ])
    expect((await server.call('POST', `/connections/${pg}/annotations`, { body })).status).toBe(201);
});

async function openQuery(page: Page, connection = pg) {
  await go(page, 'Query');
  await page.getByLabel('Connection').selectOption(connection);
  await expect(page.locator('.sql-editor[data-ready]')).toBeVisible();
}

async function runSql(page: Page, sql: string) {
  await page.getByLabel('SQL').fill(sql);
  await page.getByRole('button', { name: 'Run', exact: true }).click();
}

const lastHistory = async (s: TestServer, conn = pg) =>
  (await s.call('GET', `/connections/${conn}/queries?pageSize=1`)).body.data[0];

test('Schema panel: lists tables with columns, types and annotations; search filters; a click inserts the name at the cursor', async ({
  adminPage: page,
  server,
}) => {
  await openQuery(page);
  const panel = page.getByRole('region', { name: 'Schema' });
  await expect(panel.getByRole('button', { name: SALES, exact: true })).toBeVisible();
  await expect(panel.getByRole('button', { name: REGIONS, exact: true })).toBeVisible();
  // The table's annotation, as text.
  await expect(panel.getByText(`Monthly sales ${HOSTILE}`)).toBeVisible();
  await expectInert(page);

  // Search by a table name: only the matching tables stay.
  await panel.getByLabel('Search tables and columns').fill(`qb_sales_${suffix}`);
  await expect(panel.getByRole('button', { name: REGIONS, exact: true })).toHaveCount(0);
  await expect(panel.getByText('1 of')).toBeVisible();
  // Search by a column: its table opens on the matching column, with type and annotation.
  await panel.getByLabel('Search tables and columns').fill('display name');
  await expect(panel.getByRole('button', { name: SALES, exact: true })).toHaveCount(0);
  await expect(panel.getByRole('button', { name: 'Display Name', exact: true })).toBeVisible();
  await panel.getByLabel('Search tables and columns').fill('');
  await panel.getByRole('button', { name: `Columns of ${SALES}` }).click();
  await expect(panel.getByRole('button', { name: `Columns of ${SALES}` })).toHaveAttribute(
    'aria-expanded',
    'true',
  );
  // The column's own item (the innermost of the two list items holding its button).
  const amount = panel
    .getByRole('listitem')
    .filter({ has: page.getByRole('button', { name: 'amount_cents' }) })
    .last();
  await expect(amount).toContainText('integer');
  await expect(amount).toContainText('not null');
  await expect(amount).toContainText('in cents, before tax');
  await expectAccessible(page, 'query with the Schema panel');

  // Click to insert: at the editor's cursor, quoted when the name needs it.
  await page.getByLabel('SQL').click();
  await page.keyboard.type('SELECT ');
  await page.keyboard.press('Escape');
  await panel.getByRole('button', { name: 'amount_cents', exact: true }).click();
  await page.keyboard.type(' FROM ');
  await page.keyboard.press('Escape');
  await panel.getByRole('button', { name: SALES, exact: true }).click();
  await expect(page.getByLabel('SQL')).toHaveText(`SELECT amount_cents FROM ${SALES}`);
  await page.keyboard.press('Control+Enter');
  await expect(page.getByRole('table', { name: 'Query result' }).getByRole('row')).toHaveCount(4);
  expect(await lastHistory(server)).toMatchObject({
    sql: `SELECT amount_cents FROM ${SALES}`,
    status: 'SUCCESS',
  });

  await panel.getByLabel('Search tables and columns').fill('Display');
  await page.getByLabel('SQL').fill('SELECT ');
  await page.keyboard.press('End');
  await panel.getByRole('button', { name: 'Display Name', exact: true }).click();
  await expect(page.getByLabel('SQL')).toHaveText('SELECT "Display Name"');
});

test('From a result: Chart draws it, Save as query stores it, Add to dashboard makes a widget (each read back)', async ({
  adminPage: page,
  server,
}) => {
  const board = await server.call('POST', '/dashboards', { body: { title: `Sales board ${suffix}` } });
  expect(board.status, board.text).toBe(201);
  const sql = `SELECT month, amount_cents FROM ${SALES} ORDER BY month`;
  await openQuery(page);
  await runSql(page, sql);
  await expect(page.getByRole('table', { name: 'Query result' })).toBeVisible();

  // Chart: the type and the columns, drawn by the widgets' chart code with its data table.
  await page.getByRole('button', { name: 'Chart', exact: true }).click();
  const chart = page.getByRole('region', { name: 'Chart of the result' });
  await chart.getByLabel('Chart type').selectOption('LINE');
  await expect(chart.getByLabel('X axis (labels)')).toHaveValue('month');
  await expect(chart.getByRole('checkbox', { name: 'amount_cents' })).toBeChecked();
  const preview = chart.getByRole('region', { name: 'Chart preview' });
  await expectPainted(preview);
  await expect(preview.getByRole('img')).toHaveAccessibleName(/line chart of amount_cents by month/);
  await chart.getByRole('checkbox', { name: 'amount_cents' }).uncheck();
  await expect(chart.getByText('Choose at least one column of values to draw.')).toBeVisible();
  await chart.getByRole('checkbox', { name: 'amount_cents' }).check();
  await expectPainted(preview);
  await expectAccessible(page, 'a charted result');

  // Save as query: the statement that ran, on its connection.
  await page.getByRole('button', { name: 'Save as query' }).click();
  const save = page.getByRole('region', { name: 'Save as query' });
  const name = `Sales by month ${suffix} <img src=x id=pwn-img onerror="document.title='pwned'">`;
  // The editor changes afterwards: what is saved is still what produced the result.
  await page.getByLabel('SQL').fill('SELECT 1');
  await save.getByLabel('Name').fill(name);
  await save.getByRole('button', { name: 'Save' }).click();
  await expect(save.getByRole('status')).toContainText(`Saved as query “${name}”`);
  await expectInert(page);
  const saved = ((await server.call('GET', '/saved-queries?pageSize=100')).body.data as any[]).find(
    (q) => q.name === name,
  );
  expect(saved).toMatchObject({ query: sql, connectionId: pg, parameters: '[]' });
  // The same name again: the API's 409 beside nothing lost.
  await save.getByLabel('Name').fill(name);
  await save.getByRole('button', { name: 'Save' }).click();
  await expect(save.getByRole('alert')).toContainText('ALREADY_EXISTS');

  // Add to dashboard: a LINE widget with the chart's columns, after the last widget.
  await page.getByRole('button', { name: 'Add to dashboard' }).click();
  const add = page.getByRole('region', { name: 'Add to dashboard' });
  await add.getByLabel('Dashboard', { exact: true }).selectOption({ label: `Sales board ${suffix}` });
  await add.getByLabel('Title').fill(`Monthly ${HOSTILE}`);
  await add.getByLabel('Chart type').selectOption('LINE');
  await add.getByRole('button', { name: 'Add', exact: true }).click();
  await expect(add.getByRole('status')).toContainText('Added');
  const widgets = (await server.call('GET', `/dashboards/${board.body.data.id}`)).body.data.widgets as any[];
  expect(widgets).toHaveLength(1);
  expect(widgets[0]).toMatchObject({
    type: 'LINE',
    title: `Monthly ${HOSTILE}`,
    query: sql,
    connectionId: pg,
  });
  expect(JSON.parse(widgets[0].config)).toEqual({ x: 'month', y: ['amount_cents'] });
  await expectAccessible(page, 'result actions');
  await expectInert(page);
  // The link opens the dashboard with the new widget drawn.
  await add.getByRole('link', { name: `Sales board ${suffix}` }).click();
  await expectPainted(page.getByRole('region', { name: `Monthly ${HOSTILE}` }));
  await expectInert(page);
});

test('History: a guard refusal reads "Refused"; a saved query run shows its {{placeholders}} as written', async ({
  adminPage: page,
  server,
}) => {
  await openQuery(page);
  await runSql(page, `DELETE FROM ${SALES}`);
  await expect(page.getByRole('alert')).toContainText('READ_ONLY_VIOLATION');
  const history = page.getByRole('region', { name: 'History' });
  const refused = history
    .getByRole('listitem')
    .filter({ hasText: `DELETE FROM ${SALES}` })
    .first();
  await expect(refused.getByText('Refused', { exact: true })).toBeVisible();
  expect(await lastHistory(server)).toMatchObject({ status: 'REJECTED' });

  const query = `SELECT count(*) AS n FROM ${SALES} WHERE region = {{region}}`;
  const sq = await server.call('POST', '/saved-queries', {
    body: {
      name: `By region ${suffix}`,
      query,
      connectionId: pg,
      parameters: [{ name: 'region', type: 'string', required: true }],
    },
  });
  expect(sq.status, sq.text).toBe(201);
  const ran = await server.call('POST', `/saved-queries/${sq.body.data.id}/run`, {
    body: { params: { region: 'north' } },
  });
  expect(ran.status, ran.text).toBe(200);
  // The history reloads after the next run on the page.
  await runSql(page, 'SELECT 1 AS one');
  await expect(history.getByText(query)).toBeVisible();
  await expect(history.getByText('$1')).toHaveCount(0);
  // Put back in the editor as written.
  await history.getByRole('button', { name: query }).click();
  await expect(page.getByLabel('SQL')).toHaveText(query);
});

test('A member sees only what it may do: no schema or history of a connection not assigned, no dashboard of others, its own saved query', async ({
  page,
  server,
}) => {
  const board = await server.call('POST', '/dashboards', {
    body: { title: `Admin board ${suffix}`, isPublic: true },
  });
  expect(board.status).toBe(201);
  const member = await addMember(server, {
    email: `qb-${suffix}@example.com`,
    name: 'Query member',
    connectionIds: [memberConn],
  });
  await signIn(page, member.key);
  await go(page, 'Query');
  const select = page.getByLabel('Connection');
  await expect(select.getByRole('option')).toHaveText([
    'Choose a connection',
    `Members' ${suffix} (POSTGRES)`,
  ]);
  // A deep link to the other connection runs nothing and shows no schema or history of it.
  await page.evaluate((id) => {
    (globalThis as any).location.hash = `#/query/${id}`;
  }, pg);
  await expect(page.getByRole('region', { name: 'Schema' })).toHaveCount(0);
  await expect(page.getByRole('region', { name: 'History' }).getByRole('listitem')).toHaveCount(0);
  await page.getByLabel('SQL').fill(`SELECT * FROM ${SALES}`);
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  await expect(page.getByRole('alert')).toContainText('Choose a connection first.');

  await select.selectOption(memberConn);
  await expect(
    page.getByRole('region', { name: 'Schema' }).getByRole('button', { name: SALES, exact: true }),
  ).toBeVisible();
  await runSql(
    page,
    `SELECT region, sum(amount_cents) AS total FROM ${SALES} GROUP BY region ORDER BY region`,
  );
  await expect(page.getByRole('table', { name: 'Query result' })).toBeVisible();
  // No dashboard of the admin's to add to (the API would answer 403).
  await page.getByRole('button', { name: 'Add to dashboard' }).click();
  await expect(page.getByRole('region', { name: 'Add to dashboard' })).toContainText(
    'There is no dashboard you may add to',
  );
  await expect(page.getByLabel('Dashboard', { exact: true })).toHaveCount(0);
  // Saving a query works on its own connection, and it is the member's.
  await page.getByRole('button', { name: 'Save as query' }).click();
  await page.getByLabel('Name').fill(`Member totals ${suffix}`);
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await expect(page.getByRole('status')).toContainText('Saved as query');
  const saved = ((await server.call('GET', '/saved-queries?pageSize=100')).body.data as any[]).find(
    (q) => q.name === `Member totals ${suffix}`,
  );
  expect(saved).toMatchObject({ connectionId: memberConn, createdBy: member.id });
  await expectAccessible(page, 'query as a member');
});
