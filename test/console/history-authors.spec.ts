import { randomBytes } from 'node:crypto';
import type { Page } from '@playwright/test';
import { addMember, demoConnection, expect, go, signIn, test } from './fixtures';

/**
 * Issue 45, one ownership rule: the Query page's history shows each entry's source and author; a
 * member's history shows only what they ran (not an admin's ad-hoc query); "Show" keeps widget loads
 * apart from ad-hoc queries. On the demo SQLite connection; each view read back through the API.
 */
const suffix = randomBytes(4).toString('hex');
const ADMIN_SQL = `SELECT 1 AS admin_${suffix}`;
const MEMBER_API_SQL = `SELECT 2 AS member_api_${suffix}`;
const MEMBER_UI_SQL = `SELECT 3 AS member_ui_${suffix}`;
const WIDGET_SQL = `SELECT 4 AS widget_${suffix}`;
const MEMBER_NAME = `Hana History ${suffix}`;
let conn: string;
let member: { id: string; key: string };

test.beforeAll(async ({ server }) => {
  conn = (await demoConnection(server)).id;
  member = await addMember(server, {
    email: `history-${suffix}@example.com`,
    name: MEMBER_NAME,
    connectionIds: [conn],
  });
  const run = (sql: string, key?: string) =>
    server.call('POST', `/connections/${conn}/query`, { body: { sql }, key });
  expect((await run(ADMIN_SQL)).status).toBe(200);
  expect((await run(MEMBER_API_SQL, member.key)).status).toBe(200);
  const dash = await server.call('POST', '/dashboards', { body: { title: `History ${suffix}` } });
  const w = await server.call('POST', `/dashboards/${dash.body.data.id}/widgets`, {
    body: { title: 'Widget', type: 'TABLE', connectionId: conn, query: WIDGET_SQL },
  });
  expect(w.status, w.text).toBe(201);
  const data = await server.call('GET', `/dashboards/${dash.body.data.id}/widgets/${w.body.data.id}/data`);
  expect(data.status, data.text).toBe(200);
});

async function openQuery(page: Page) {
  await go(page, 'Query');
  await page.getByLabel('Connection').selectOption(conn);
  await expect(page.locator('.sql-editor[data-ready]')).toBeVisible();
}

const entry = (page: Page, sql: string) =>
  page.getByRole('region', { name: 'History' }).getByRole('listitem').filter({ hasText: sql });

test("a member's history: their own entries with source and author, not the admin's ad-hoc query", async ({
  page,
  server,
}) => {
  await signIn(page, member.key);
  await openQuery(page);
  await page.getByLabel('SQL').fill(MEMBER_UI_SQL);
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  await expect(entry(page, MEMBER_UI_SQL)).toContainText('Ad hoc · you');
  await expect(entry(page, MEMBER_API_SQL)).toContainText('Ad hoc · you');
  await expect(entry(page, ADMIN_SQL)).toHaveCount(0);
  await expect(page.getByText("You see the queries you ran; admins see everyone's.")).toBeVisible();
  await page.getByLabel('Show').selectOption({ label: 'Everything' });
  await expect(entry(page, MEMBER_API_SQL)).toBeVisible();
  await expect(entry(page, ADMIN_SQL)).toHaveCount(0);
  await expect(entry(page, WIDGET_SQL)).toHaveCount(0);

  const api = await server.call('GET', `/connections/${conn}/queries?pageSize=100`, { key: member.key });
  expect(api.status).toBe(200);
  const sqls = api.body.data.map((e: { sql: string }) => e.sql);
  expect(sqls).toEqual(expect.arrayContaining([MEMBER_UI_SQL, MEMBER_API_SQL]));
  expect(sqls).not.toContain(ADMIN_SQL);
  for (const e of api.body.data) expect(e.author).toMatchObject({ id: member.id, name: MEMBER_NAME });
});

test("an admin's history: everyone's entries with their authors; widget loads shown apart", async ({
  adminPage: page,
  server,
}) => {
  await openQuery(page);
  await expect(entry(page, ADMIN_SQL)).toContainText('Ad hoc · you');
  await expect(entry(page, MEMBER_API_SQL)).toContainText(`Ad hoc · ${MEMBER_NAME}`);
  // By default the history is the queries people ran, without widget loads.
  await expect(entry(page, WIDGET_SQL)).toHaveCount(0);
  await page.getByLabel('Show').selectOption({ label: 'Widget loads' });
  await expect(entry(page, WIDGET_SQL)).toContainText('Widget load · you');
  await expect(entry(page, ADMIN_SQL)).toHaveCount(0);
  await page.getByLabel('Show').selectOption({ label: 'Ad-hoc queries only' });
  await expect(entry(page, ADMIN_SQL)).toBeVisible();
  await expect(entry(page, WIDGET_SQL)).toHaveCount(0);

  const widgets = await server.call('GET', `/connections/${conn}/queries?source=widget&pageSize=100`);
  expect(widgets.body.data.map((e: { sql: string }) => e.sql)).toContain(WIDGET_SQL);
  expect(widgets.body.data.every((e: { source: string }) => e.source === 'widget')).toBe(true);
  const adHoc = await server.call('GET', `/connections/${conn}/queries?source=query&pageSize=100`);
  const bySql = new Map(adHoc.body.data.map((e: { sql: string }) => [e.sql, e]));
  const me = (await server.call('GET', '/')).body.data.userId as string;
  expect(bySql.get(ADMIN_SQL)).toMatchObject({ source: 'query', userId: me, author: { id: me } });
  expect(bySql.get(MEMBER_API_SQL)).toMatchObject({ source: 'query', author: { id: member.id } });
  expect(bySql.has(WIDGET_SQL)).toBe(false);
});
