import { randomBytes } from 'node:crypto';
import type { Page, TestInfo } from '@playwright/test';
import { createConnection, postgresConnection } from '../support/connections';
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
 * Saved queries and metrics made in the console against embedded PostgreSQL: "New saved query" with a
 * `{{status}}` placeholder that becomes a typed parameter, run with a value, edited and deleted;
 * "New metric", evaluated on its connection and on another, edited and deleted. Every change is read
 * back through the API (and values against the database). Markup in names and SQL stays text; a member
 * is offered no form it may not use; axe and 390 px on each page.
 */
test.use({ demoData: false });

const suffix = randomBytes(4).toString('hex');
const ORDERS = `sqm_orders_${suffix}`;
const dbs = specTables(
  [ORDERS],
  [
    `CREATE TABLE ${ORDERS} (id int PRIMARY KEY, status text NOT NULL, total_cents int NOT NULL)`,
    `INSERT INTO ${ORDERS} VALUES (1, 'paid', 1000), (2, 'paid', 2500), (3, 'open', 700), (4, 'refunded', 300)`,
  ],
);
let pg: string;
let second: string;

test.beforeAll(async ({ server, postgres }) => {
  pg = await createConnection(server, postgresConnection(postgres, { name: `Shop ${suffix}` }));
  second = await createConnection(server, postgresConnection(postgres, { name: `Replica ${suffix}` }));
  expect((await server.call('POST', `/connections/${pg}/schema`)).status).toBe(200);
});

/** The page does not scroll sideways at 390 px. */
async function expectFits(page: Page, info: TestInfo, where: string) {
  const { scrollWidth, innerWidth } = await page.evaluate(() => ({
    scrollWidth: (globalThis as any).document.documentElement.scrollWidth as number,
    innerWidth: (globalThis as any).innerWidth as number,
  }));
  await page.screenshot({ path: info.outputPath(`${innerWidth}-${where}.png`), fullPage: true });
  expect(scrollWidth, `${where} at ${innerWidth} px: no horizontal page scroll`).toBeLessThanOrEqual(
    innerWidth,
  );
}

const savedQueries = async (s: { call: (m: string, p: string) => Promise<{ body: any }> }) =>
  (await s.call('GET', '/saved-queries?pageSize=100')).body.data as any[];
const metrics = async (s: { call: (m: string, p: string) => Promise<{ body: any }> }) =>
  (await s.call('GET', '/metrics?pageSize=100')).body.data as any[];

test('Saved queries: a new one with a {{status}} placeholder becomes a typed parameter, runs with a value, is edited and deleted', async ({
  adminPage: page,
  server,
}) => {
  const name = `Orders by status ${suffix}`;
  await go(page, 'Saved queries');
  await page.getByRole('button', { name: 'New saved query' }).click();
  const form = page.getByRole('region', { name: 'New saved query' });
  await expect(form.getByLabel('Name')).toBeFocused();
  await form.getByLabel('Name').fill(name);
  await form.getByLabel('Connection').selectOption(pg);
  await form.getByLabel('Description (optional)').fill(`Counts ${HOSTILE}`);
  await expect(form.locator('.sql-editor[data-ready]')).toBeVisible();
  const sql = `SELECT count(*) AS n, sum(total_cents) AS cents FROM ${ORDERS} WHERE status = {{status}} AND total_cents >= {{min_cents}} -- not {{here}}`;
  await form.getByLabel('SQL').fill(sql);
  // One definition per placeholder outside the comment, typed by the user.
  const status = form.getByRole('group', { name: 'Parameter {{status}}' });
  const min = form.getByRole('group', { name: 'Parameter {{min_cents}}' });
  await expect(status).toBeVisible();
  await expect(form.getByRole('group', { name: 'Parameter {{here}}' })).toHaveCount(0);
  await expect(status.getByLabel('Type')).toHaveValue('string');
  await expect(status.getByRole('checkbox', { name: 'Required' })).toBeChecked();
  await min.getByLabel('Type').selectOption('integer');
  await min.getByRole('checkbox', { name: 'Required' }).uncheck();
  await min.getByLabel('Default').fill('0');
  await expectAccessible(page, 'the new saved query form');
  await form.getByRole('button', { name: 'Save', exact: true }).click();
  await expect(page.getByRole('status')).toContainText(`Saved query “${name}” saved.`);

  const stored = (await savedQueries(server)).find((q) => q.name === name);
  expect(stored).toMatchObject({
    query: sql,
    connectionId: pg,
    description: `Counts ${HOSTILE}`,
    isPublic: true,
  });
  expect(JSON.parse(stored.parameters)).toEqual([
    { name: 'status', type: 'string', required: true },
    { name: 'min_cents', type: 'integer', required: false, default: 0 },
  ]);

  // Opening it: an input per parameter, labelled by its name, and Run.
  await page.getByRole('link', { name }).click();
  await expect(page).toHaveURL(new RegExp(`#/saved-queries/${stored.id}$`));
  const card = page.getByRole('article', { name });
  await expect(card.getByText(`Counts ${HOSTILE}`)).toBeVisible();
  await expectInert(page);
  await card.getByRole('textbox', { name: 'status (required)' }).fill('paid');
  await card.getByRole('button', { name: `Run ${name}` }).click();
  await expect(card.getByRole('table').getByRole('cell')).toHaveText(['2', '3500']);
  await card.getByRole('spinbutton', { name: 'min_cents' }).fill('2000');
  await card.getByRole('button', { name: `Run ${name}` }).click();
  await expect(card.getByRole('table').getByRole('cell')).toHaveText(['1', '2500']);
  const history = (await server.call('GET', `/connections/${pg}/queries?pageSize=1`)).body.data[0];
  expect(history).toMatchObject({ source: 'saved_query', sql, status: 'SUCCESS' });
  await expectAccessible(page, 'a saved query');

  // Edit: drop a parameter, the stored definitions follow.
  await card.getByRole('button', { name: `Edit ${name}` }).click();
  await expect(card.getByLabel('Name')).toHaveValue(name);
  await card.getByLabel('SQL').fill(`SELECT count(*) AS n FROM ${ORDERS} WHERE status = {{status}}`);
  await expect(card.getByRole('group', { name: 'Parameter {{min_cents}}' })).toHaveCount(0);
  await card.getByRole('button', { name: 'Save', exact: true }).click();
  await expect(card.getByRole('button', { name: `Edit ${name}` })).toBeFocused();
  const edited = (await server.call('GET', `/saved-queries/${stored.id}`)).body.data;
  expect(JSON.parse(edited.parameters)).toEqual([{ name: 'status', type: 'string', required: true }]);
  await card.getByRole('textbox', { name: 'status (required)' }).fill('open');
  await card.getByRole('button', { name: `Run ${name}` }).click();
  await expect(card.getByRole('table').getByRole('cell')).toHaveText(['1']);

  // A placeholder without a definition is the API's 400 beside the SQL, nothing stored.
  await card.getByRole('button', { name: `Edit ${name}` }).click();
  await card.getByLabel('SQL').fill(`SELECT 1 WHERE 1 = $1`);
  await card.getByRole('button', { name: 'Save', exact: true }).click();
  await expect(card.getByRole('alert')).toContainText('VALIDATION_ERROR');
  expect((await server.call('GET', `/saved-queries/${stored.id}`)).body.data.query).toBe(edited.query);
  await card.getByRole('button', { name: 'Cancel' }).click();

  // Delete, after the in-page confirmation.
  await card.getByRole('button', { name: `Delete ${name}` }).click();
  await card.getByRole('button', { name: 'Delete saved query' }).click();
  await expect(page.getByRole('alert')).toContainText('Saved query not found');
  expect((await server.call('GET', `/saved-queries/${stored.id}`)).status).toBe(404);
});

test('Metrics: a new metric is evaluated on its connection and on another, edited and deleted', async ({
  adminPage: page,
  server,
}) => {
  const name = `Paid revenue ${suffix} ${HOSTILE}`.slice(0, 120);
  await go(page, 'Metrics');
  await expect(page.getByRole('navigation').getByRole('link', { name: 'Metrics' })).toHaveAttribute(
    'aria-current',
    'page',
  );
  await page.getByRole('button', { name: 'New metric' }).click();
  const form = page.getByRole('region', { name: 'New metric' });
  await form.getByLabel('Name').fill(name);
  await form.getByLabel('Connection').selectOption(pg);
  await expect(form.locator('.sql-editor[data-ready]')).toBeVisible();
  await form
    .getByLabel('Formula')
    .fill(`SELECT sum(total_cents) / 100.0 FROM ${ORDERS} WHERE status = 'paid'`);
  await form.getByLabel('Unit (optional)').fill('USD');
  await expectAccessible(page, 'the new metric form');
  await form.getByRole('button', { name: 'Save', exact: true }).click();
  await expect(page.getByRole('status')).toContainText('saved');
  await expectInert(page);
  const stored = (await metrics(server)).find((m) => m.name === name);
  expect(stored).toMatchObject({
    formula: `SELECT sum(total_cents) / 100.0 FROM ${ORDERS} WHERE status = 'paid'`,
    connectionId: pg,
    unit: 'USD',
  });

  const card = page.getByRole('article', { name });
  await card.getByRole('button', { name: `Evaluate ${name}` }).click();
  const [{ v }] = (
    await dbs.pg.query(`SELECT sum(total_cents) / 100.0 AS v FROM ${ORDERS} WHERE status = 'paid'`)
  ).rows;
  expect(Number(v)).toBe(35);
  await expect(card.getByRole('status')).toContainText('35 USD');
  await expect(card.getByRole('status')).toContainText(`on Shop ${suffix}`);
  // The connection override: the same formula on the other connection (the same database here).
  await card.getByLabel('Evaluate on').selectOption(second);
  await card.getByRole('button', { name: `Evaluate ${name}` }).click();
  await expect(card.getByRole('status')).toContainText(`on Replica ${suffix}`);
  const onSecond = (await server.call('GET', `/connections/${second}/queries?pageSize=1`)).body.data[0];
  expect(onSecond).toMatchObject({ source: 'metric', status: 'SUCCESS' });
  await expectAccessible(page, 'metrics');

  // Edit the formula: the next value follows.
  await card.getByRole('button', { name: `Edit ${name}` }).click();
  await card.getByLabel('Formula').fill(`SELECT count(*) FROM ${ORDERS}`);
  await card.getByLabel('Unit (optional)').fill('');
  await card.getByRole('button', { name: 'Save', exact: true }).click();
  await expect(card.getByRole('button', { name: `Evaluate ${name}` })).toBeVisible();
  expect((await server.call('GET', `/metrics/${stored.id}`)).body.data).toMatchObject({
    formula: `SELECT count(*) FROM ${ORDERS}`,
    unit: null,
  });
  await card.getByRole('button', { name: `Evaluate ${name}` }).click();
  await expect(card.getByRole('status')).toContainText('4');

  // A write as a formula: the API's refusal beside the field, nothing stored.
  await card.getByRole('button', { name: `Edit ${name}` }).click();
  await card.getByLabel('Formula').fill(`DELETE FROM ${ORDERS}`);
  await card.getByRole('button', { name: 'Save', exact: true }).click();
  await expect(card.getByRole('alert')).toContainText('READ_ONLY_VIOLATION');
  expect((await server.call('GET', `/metrics/${stored.id}`)).body.data.formula).toBe(
    `SELECT count(*) FROM ${ORDERS}`,
  );
  await card.getByRole('button', { name: 'Cancel' }).click();

  await card.getByRole('button', { name: `Delete ${name}` }).click();
  await card.getByRole('button', { name: 'Delete metric' }).click();
  await expect(page.getByRole('article', { name })).toHaveCount(0);
  expect((await server.call('GET', `/metrics/${stored.id}`)).status).toBe(404);
  expect((await dbs.pg.query(`SELECT count(*)::int AS n FROM ${ORDERS}`)).rows[0].n).toBe(4);
});

test('A field the user focuses as the edit form opens keeps the focus (the form does not take it back for its first field)', async ({
  adminPage: page,
  server,
}) => {
  const name = `Focus race ${suffix}`;
  const created = await server.call('POST', '/saved-queries', {
    body: { name, query: 'SELECT 1 AS one', connectionId: pg },
  });
  expect(created.status).toBe(201);
  await go(page, 'Saved queries');
  const card = page.getByRole('article', { name });
  await expect(card.getByRole('button', { name: `Edit ${name}` })).toBeVisible();
  // The moment the form is in the page, the "user" focuses its SQL field; 300 ms later, who has the focus?
  const kept = await card.evaluate(
    (el: any) =>
      new Promise<string>((resolve) => {
        const observer = new (globalThis as any).MutationObserver(() => {
          // The SQL field: its text box until the editor's chunk has loaded, then the editor, which takes
          // the focus over from the text box (the typing goes on there).
          const field = el.querySelector('form .sql-field');
          if (!field) return;
          observer.disconnect();
          (field.querySelector('textarea') ?? field.querySelector('.sql-editor'))?.focus();
          setTimeout(() => {
            const active = (globalThis as any).document.activeElement;
            resolve(field.contains(active) ? 'sql' : `${active?.tagName} ${active?.id}`);
          }, 300);
        });
        observer.observe(el, { childList: true, subtree: true });
        el.querySelector(`button[aria-label^="Edit"]`)?.click();
      }),
  );
  expect(kept).toBe('sql');
  await card.getByRole('button', { name: 'Cancel' }).click();
});

test('A member without the connection sees neither its saved queries nor its metrics, and no New forms; with one, no Edit on an admin’s', async ({
  page,
  server,
}) => {
  const sq = await server.call('POST', '/saved-queries', {
    body: { name: `Admin only ${suffix}`, query: 'SELECT 1', connectionId: pg },
  });
  expect(sq.status).toBe(201);
  const shared = await server.call('POST', '/saved-queries', {
    body: { name: `Shared on replica ${suffix}`, query: 'SELECT 2 AS two', connectionId: second },
  });
  expect(shared.status).toBe(201);
  const m = await server.call('POST', '/metrics', {
    body: { name: `Admin metric ${suffix}`, formula: 'SELECT 1', connectionId: pg },
  });
  expect(m.status).toBe(201);

  const none = await addMember(server, { email: `none-${suffix}@example.com`, name: 'No connections' });
  await signIn(page, none.key);
  await go(page, 'Saved queries');
  await expect(page.getByRole('button', { name: 'New saved query' })).toHaveCount(0);
  await expect(page.getByRole('article', { name: `Admin only ${suffix}` })).toHaveCount(0);
  await expect(page.getByText('SELECT 1', { exact: true })).toHaveCount(0);
  await go(page, 'Metrics');
  await expect(page.getByRole('button', { name: 'New metric' })).toHaveCount(0);
  await expect(page.getByRole('article', { name: `Admin metric ${suffix}` })).toHaveCount(0);
  // A deep link says it is not found, without its SQL.
  await page.evaluate((id) => {
    (globalThis as any).location.hash = `#/metrics/${id}`;
  }, m.body.data.id);
  await expect(page.getByRole('alert')).toContainText('Metric not found');
  await expectAccessible(page, 'metrics as a member without connections');

  await page.getByRole('button', { name: 'Sign out' }).click();
  const withOne = await addMember(server, {
    email: `one-${suffix}@example.com`,
    name: 'Replica member',
    connectionIds: [second],
  });
  await signIn(page, withOne.key);
  await go(page, 'Saved queries');
  const card = page.getByRole('article', { name: `Shared on replica ${suffix}` });
  await card.getByRole('button', { name: `Run Shared on replica ${suffix}` }).click();
  await expect(card.getByRole('table').getByRole('cell')).toHaveText(['2']);
  // The admin's query: run, but no Edit or Delete (the API would answer 403).
  await expect(card.getByRole('button', { name: /^(Edit|Delete) / })).toHaveCount(0);
  await expect(page.getByRole('button', { name: 'New saved query' })).toBeVisible();
  await page.getByRole('button', { name: 'New saved query' }).click();
  await expect(page.getByLabel('Connection').getByRole('option')).toHaveText([
    'Choose a connection',
    `Replica ${suffix} (POSTGRES)`,
  ]);
});

for (const where of ['Saved queries', 'Metrics', 'Query'] as const)
  test(`${where} fits 390 px with its forms open`, async ({ adminPage: page, server }, info) => {
    await page.setViewportSize({ width: 390, height: 844 });
    const long = `A very long name without any space ${'x'.repeat(60)}`;
    await server.call('POST', '/saved-queries', {
      body: {
        name: `${long} ${suffix}`,
        query: `SELECT '${'y'.repeat(200)}' AS long_value`,
        connectionId: pg,
      },
    });
    await server.call('POST', '/metrics', {
      body: { name: `${long} ${suffix} m`, formula: `SELECT ${'1 + '.repeat(60)}1`, connectionId: pg },
    });
    await go(page, where);
    if (where === 'Saved queries') {
      await page.getByRole('button', { name: 'New saved query' }).click();
      await page.getByLabel('Connection').selectOption(pg);
      await page
        .getByLabel('SQL')
        .fill(`SELECT * FROM ${ORDERS} WHERE status = {{a_rather_long_parameter_name_here}}`);
      await expect(page.getByRole('group', { name: /Parameter/ })).toBeVisible();
    } else if (where === 'Metrics') {
      await page.getByRole('button', { name: 'New metric' }).click();
      await page
        .getByRole('article', { name: `${long} ${suffix} m` })
        .getByRole('button', { name: /^Evaluate/ })
        .click();
      await expect(
        page.getByRole('article', { name: `${long} ${suffix} m` }).getByRole('status'),
      ).toBeVisible();
    } else {
      await page.getByLabel('Connection').selectOption(pg);
      await expect(page.locator('.sql-editor[data-ready]')).toBeVisible();
      await page
        .getByLabel('SQL')
        .fill(`SELECT id, status, total_cents, '${'z'.repeat(150)}' AS wide FROM ${ORDERS}`);
      await page.getByRole('button', { name: 'Run', exact: true }).click();
      await expect(page.getByRole('table', { name: 'Query result' })).toBeVisible();
      await page.getByRole('button', { name: 'Chart', exact: true }).click();
      await expect(page.getByRole('region', { name: 'Chart preview' })).toBeVisible();
      await expect(
        page.getByRole('region', { name: 'Schema' }).getByRole('button', { name: ORDERS, exact: true }),
      ).toBeVisible();
    }
    await expectFits(page, info, where);
    if (where === 'Query') {
      // A result wider than the phone scrolls inside its box; axe on one that fits (a scrolling result
      // table takes no keyboard focus yet: the console-build helper's phone fixes make its box focusable).
      await page.getByLabel('SQL').fill(`SELECT status, total_cents FROM ${ORDERS}`);
      await page.getByRole('button', { name: 'Run', exact: true }).click();
      await expect(page.getByRole('table', { name: 'Query result' })).not.toContainText('zzz');
    }
    await expectAccessible(page, `${where} at 390 px`);
  });
