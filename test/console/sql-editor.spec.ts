import { randomBytes } from 'node:crypto';
import type { Page } from '@playwright/test';
import { createConnection, postgresConnection } from '../support/connections';
import { expect, expectAccessible, expectInert, go, HOSTILE, specTables, test } from './fixtures';

/**
 * The SQL editor (CodeMirror 6, loaded lazily) on the Query page against embedded PostgreSQL: completion
 * of the connection's tables and columns from the schema cache (typing a prefix, Ctrl+Space, a table's
 * columns with their types), Ctrl+Enter, the textarea that stands in while the editor's chunk loads (or
 * when it cannot), hostile table names and annotations as text, and no CSP violation (the `page` fixture
 * fails the test on one). Each run is read back from the connection's query history through the API.
 */
test.use({ demoData: false });

const suffix = randomBytes(4).toString('hex');
const T = `editor_orders_${suffix}`;
/** A table whose name is markup (PostgreSQL names stop at 63 bytes). */
const MARKUP_TABLE = `<img src=x id=pwn-img ${suffix}>`;
specTables(
  [T, `"${MARKUP_TABLE}"`],
  [
    `CREATE TABLE ${T} (id int PRIMARY KEY, status text NOT NULL, amount_cents bigint)`,
    `INSERT INTO ${T} VALUES (1, 'paid', 1200), (2, 'open', 300)`,
    `CREATE TABLE "${MARKUP_TABLE}" (id int)`,
  ],
);
let pg: string;

test.beforeAll(async ({ server, postgres }) => {
  pg = await createConnection(server, postgresConnection(postgres, { name: `Editor ${suffix}` }));
  const schema = await server.call('POST', `/connections/${pg}/schema`);
  expect(schema.status, schema.text).toBe(200);
  const note = await server.call('POST', `/connections/${pg}/annotations`, {
    body: { tableName: T, columnName: 'status', annotation: `paid or open ${HOSTILE}` },
  });
  expect(note.status, note.text).toBe(201);
});

async function openQuery(page: Page) {
  await go(page, 'Query');
  await page.getByLabel('Connection').selectOption(pg);
  const editor = page.getByRole('textbox', { name: 'SQL' });
  // The editor replaces the textarea once its chunk has loaded.
  await expect(page.locator('.sql-editor[data-ready]')).toBeVisible();
  return editor;
}

async function history(server: { call: (m: string, p: string) => Promise<{ body: any }> }) {
  return (await server.call('GET', `/connections/${pg}/queries?pageSize=5`)).body.data as {
    sql: string;
    status: string;
    rowCount: number | null;
  }[];
}

test('SQL editor: typing a table prefix offers the table, Enter takes it, Ctrl+Enter runs it', async ({
  adminPage: page,
  server,
}) => {
  const editor = await openQuery(page);
  await editor.click();
  // A prefix of this run's table only (other runs' tables may share the rest of the name).
  await page.keyboard.type(`SELECT id, status FROM ${T.slice(0, -4)}`);
  const list = page.getByRole('listbox');
  await expect(list).toBeVisible();
  await expect(list.getByRole('option', { name: new RegExp(T) })).toBeVisible();
  // The list takes Enter only 75 ms after it (re)opened, so that Enter typed on its heels is a new line
  // (CodeMirror's interactionDelay): wait past that from the moment it was seen, however loaded the machine.
  await page.waitForTimeout(150);
  await page.keyboard.press('Enter');
  await expect(list).toBeHidden();
  await expect(editor).toHaveText(`SELECT id, status FROM ${T}`);
  await page.keyboard.type(' ORDER BY id');
  await page.keyboard.press('Escape');
  await page.keyboard.press('Control+Enter');
  const table = page.getByRole('table', { name: 'Query result' });
  await expect(table).toBeVisible();
  expect(await table.getByRole('columnheader').allTextContents()).toEqual(['id', 'status']);
  await expect(table.getByRole('row')).toHaveCount(3);
  const [last] = await history(server);
  expect(last).toMatchObject({
    sql: `SELECT id, status FROM ${T} ORDER BY id`,
    status: 'SUCCESS',
    rowCount: 2,
  });
  await expectAccessible(page, 'query with the SQL editor');
});

test('SQL editor: Ctrl+Space lists the tables, a table name and a dot lists its columns with their types and notes as text', async ({
  adminPage: page,
}) => {
  const editor = await openQuery(page);
  await editor.click();
  await page.keyboard.type('SELECT * FROM ');
  await page.keyboard.press('Control+Space');
  const list = page.getByRole('listbox');
  await expect(list.getByRole('option', { name: new RegExp(T) })).toBeVisible();
  // The markup table is an option like any other, its name shown as text.
  await page.keyboard.type('<img');
  await expect(list.getByRole('option', { name: new RegExp(`pwn-img ${suffix}`) })).toBeVisible();
  await expectInert(page);
  await page.keyboard.press('Escape');
  await expect(list).toBeHidden();

  await page.getByLabel('SQL').fill(`SELECT ${T}.`);
  await page.keyboard.press('End');
  await page.keyboard.press('Control+Space');
  const status = list.getByRole('option', { name: /status/ });
  await expect(status).toBeVisible();
  await expect(status).toContainText('text');
  await expect(list.getByRole('option', { name: /amount_cents/ })).toContainText('bigint');
  // The annotation shows beside the selected column, as text (arrows move once the list has been open
  // 75 ms, as Enter above).
  await page.waitForTimeout(150);
  for (let i = 0; i < 3 && (await status.getAttribute('aria-selected')) !== 'true'; i++)
    await page.keyboard.press('ArrowDown');
  await expect(status).toHaveAttribute('aria-selected', 'true');
  await expect(page.getByText(`paid or open ${HOSTILE}`)).toBeVisible();
  await expectInert(page);
  await page.keyboard.press('Escape');
  // Markup typed as SQL is text in the editor too.
  await page.getByLabel('SQL').fill(`SELECT 1 AS "${HOSTILE}"`);
  await expect(page.getByLabel('SQL')).toHaveText(`SELECT 1 AS "${HOSTILE}"`);
  await expectInert(page);
  await expectAccessible(page, 'the completion list');
});

test('SQL editor: while its chunk cannot load, the textarea labelled SQL takes the text and Ctrl+Enter runs', async ({
  adminPage: page,
  server,
}) => {
  await page.route(/\/assets\/code-editor-[^/]+\.js$/, (r) => r.abort());
  await go(page, 'Query');
  await page.getByLabel('Connection').selectOption(pg);
  const area = page.getByRole('textbox', { name: 'SQL' });
  await expect(area).toHaveJSProperty('tagName', 'TEXTAREA');
  await area.fill(`SELECT count(*) AS n FROM ${T}`);
  await area.press('Control+Enter');
  await expect(page.getByRole('table', { name: 'Query result' })).toBeVisible();
  const [last] = await history(server);
  expect(last).toMatchObject({ sql: `SELECT count(*) AS n FROM ${T}`, status: 'SUCCESS' });
});

test('SQL editor: a MongoDB connection takes a JSON query, completed with its keys and operators', async ({
  adminPage: page,
  server,
}) => {
  const mongo = await createConnection(server, {
    name: `Mongo ${suffix}`,
    type: 'MONGODB',
    host: 'mongo.example.com',
    port: 27017,
    database: 'shop',
    username: 'reader',
    password: 'not-used-here',
  });
  await go(page, 'Query');
  await page.getByLabel('Connection').selectOption(mongo);
  await expect(page.locator('.sql-editor[data-ready]')).toBeVisible();
  const editor = page.getByRole('textbox', { name: 'SQL' });
  await expect(editor).toHaveAttribute('data-language', 'json');
  await editor.click();
  await page.keyboard.type('{"coll');
  const list = page.getByRole('listbox');
  await expect(list.getByRole('option', { name: 'collection' })).toBeVisible();
  await page.keyboard.press('Escape');
  await page.keyboard.type('ection": "orders", "pipeline": [{"$mat');
  await expect(list.getByRole('option', { name: '$match' })).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(editor).toHaveText('{"collection": "orders", "pipeline": [{"$mat');
});
