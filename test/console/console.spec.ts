import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createConnection, postgresConnection } from '../support/connections';
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
  tabTo,
  test,
} from './fixtures';

/**
 * The web console in Debian's chromium against the real local runtime (demo data on), with embedded
 * PostgreSQL: each page's main path, keyboard use, accessibility (axe), refusals that change nothing, and
 * hostile text from users and databases shown as text. Every page must end without an uncaught error,
 * CSP violation or dialog (the `page` fixture checks). The tests run in order in one worker; after a
 * failure the next ones go on in a new worker, with a new runtime and table.
 */
const suffix = randomBytes(4).toString('hex');
const T = `console_${suffix}`;
/** A column name fits PostgreSQL's 63-byte identifiers. */
const COL = '<img src=x id=pwn-img onerror=alert(1)>';

const dbs = specTables(
  [T],
  [
    `CREATE TABLE ${T} (id int PRIMARY KEY, label text, "${COL}" text)`,
    [`INSERT INTO ${T} VALUES (1, $1, 'x'), (2, 'plain', $1)`, [HOSTILE]],
  ],
);
let pgConn: string;
/** A member who submits writes, and a second admin (nobody reviews their own submission). */
const keys: Record<'analyst' | 'reviewer', string> = { analyst: '', reviewer: '' };

const rows = () =>
  dbs.query<{ id: number; label: string }>('POSTGRES', `SELECT id, label FROM ${T} ORDER BY id`);

test.beforeAll(async ({ server: s, postgres }) => {
  pgConn = await createConnection(
    s,
    postgresConnection(postgres, { name: `pg ${HOSTILE}`, readOnly: false }),
  );
  expect((await s.call('POST', `/connections/${pgConn}/test`)).body.data.success).toBe(true);
  for (const [name, role] of [
    ['analyst', 'member'],
    ['reviewer', 'admin'],
  ] as const) {
    keys[name] = (
      await addMember(s, { email: `${name}-${suffix}@example.com`, name, role, connectionIds: [pgConn] })
    ).key;
  }
});

test('serves the console with a strict CSP and answers the API 404 envelope elsewhere', async ({
  origin,
}) => {
  const res = await fetch(`${origin}/`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-security-policy')).toMatch(/^default-src 'self'/);
  const html = await res.text();
  expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
  expect(html).not.toMatch(/style=|<style/);
  const asset = html.match(/src="(\/assets\/[^"]+\.js)"/)![1];
  const js = await fetch(`${origin}${asset}`);
  expect(js.headers.get('content-type')).toMatch(/javascript/);
  expect((await fetch(`${origin}/assets/..%2f..%2fpackage.json`)).status).toBe(404);
  expect((await fetch(`${origin}/elsewhere`)).status).toBe(404);
});

test('signs in with the keyboard, keeps the key in sessionStorage only, signs out, and returns to sign-in on a 401', async ({
  page,
  server: s,
}) => {
  await expectAccessible(page, 'sign-in');
  await tabTo(page, page.getByLabel('API key'));
  await page.keyboard.type('lp_not_a_real_key');
  await page.keyboard.press('Enter');
  await expect(page.getByRole('alert')).toHaveText(/key/i);
  await page.getByLabel('API key').fill('');
  await signIn(page, s.adminKey);
  const nav = page.getByRole('navigation');
  for (const name of [
    'Connections',
    'Query',
    'Chat',
    'Dashboards',
    'Saved queries',
    'Workflows',
    'Approvals',
    'Settings',
  ])
    await expect(nav.getByRole('link', { name, exact: true })).toHaveCount(1);
  const storage = await page.evaluate(() => {
    const w = globalThis as any;
    return {
      session: Object.values(w.sessionStorage),
      local: w.localStorage.length,
      cookies: w.document.cookie,
    };
  });
  expect(storage).toEqual({ session: [s.adminKey], local: 0, cookies: '' });
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page.getByLabel('API key')).toBeVisible();
  expect(await page.evaluate(() => sessionStorage.length)).toBe(0);

  // A key revoked while signed in: the next call answers 401 and the console returns to sign-in with the reason.
  const k = await s.call('POST', '/keys', { body: { name: 'short-lived' } });
  await signIn(page, k.body.data.key);
  expect((await s.call('DELETE', `/keys/${k.body.data.id}`)).status).toBe(200);
  // The next call the page makes answers 401, and the console returns to sign-in with the API's reason.
  // That call is the one opening another page, unless a background load came first: then the console is
  // at sign-in already (with the reason) and the link is gone. (A reload would lose a reason shown by then.)
  await page
    .getByRole('navigation')
    .getByRole('link', { name: 'Saved queries', exact: true })
    .click({ timeout: 5_000 })
    .catch(() => {});
  await expect(page.getByLabel('API key')).toBeVisible();
  await expect(page.getByRole('alert')).toHaveText('Invalid API key.'); // the API's own 401 message
  expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
});

test('Query: runs SQL with the keyboard, shows the result table and history; a write is refused with an alert and changes nothing', async ({
  adminPage: page,
  server: s,
}) => {
  await go(page, 'Query');
  await tabTo(page, page.getByLabel('Connection'));
  await page.getByLabel('Connection').selectOption(pgConn); // a select's keyboard choice, as Playwright does it
  await tabTo(page, page.getByLabel('SQL'));
  await page.keyboard.type(`SELECT * FROM ${T} ORDER BY id`);
  await tabTo(page, page.getByRole('button', { name: 'Run' }));
  await page.keyboard.press('Enter');
  const table = page.getByRole('table', { name: 'Query result' });
  await expect(table).toBeVisible();
  const headers = await table.getByRole('columnheader').allTextContents();
  expect(headers).toEqual(['id', 'label', COL]);
  expect(await table.getByRole('cell', { name: HOSTILE, exact: true }).count()).toBe(2);
  await expect(page.getByText(/2 rows in [\d.]+ ms/)).toHaveCount(1);
  const download = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Download CSV' }).click();
  expect((await download).suggestedFilename()).toBe('result.csv');
  await expectInert(page);
  await expectAccessible(page, 'query');

  const before = await rows();
  await page.getByLabel('SQL').fill(`DELETE FROM ${T}`);
  await page.getByRole('button', { name: 'Run' }).click();
  const alert = page.getByRole('alert');
  await expect(alert).toBeVisible();
  expect(await alert.textContent()).toMatch(/READ_ONLY_VIOLATION/);
  // Writable through approvals: the refusal offers to submit it.
  await alert.getByRole('button', { name: 'Submit for approval' }).click();
  await expect(page.getByRole('status').getByText(/Submitted for approval/)).toBeVisible();
  expect(await rows()).toEqual(before);
  // History: both statements, the refused one as REJECTED.
  const history = page.getByRole('region', { name: 'History' });
  await expect(history.getByText(`DELETE FROM ${T}`).first()).toBeVisible();
  const pending = (await s.call('GET', '/queries/pending')).body.data;
  expect(pending.map((p: { query: string }) => p.query)).toContain(`DELETE FROM ${T}`);
  for (const p of pending)
    expect(
      (await s.call('POST', `/queries/${p.id}/reject`, { key: keys.reviewer, body: { note: 'cleanup' } }))
        .status,
    ).toBe(200);
});

test('Approvals: approve with the keyboard applies the write; reject asks for a reason; both land in the history', async ({
  adminPage: page,
  server: s,
}) => {
  const submit = async (query: string) => {
    const r = await s.call('POST', '/queries/submit', {
      key: keys.analyst,
      body: { connectionId: pgConn, query, context: `why: ${HOSTILE}` },
    });
    expect(r.status, r.text).toBe(202);
    return r.body.data.id as string;
  };
  const approved = await submit(`UPDATE ${T} SET label = 'approved' WHERE id = 2`);
  await go(page, 'Approvals');
  await expect(page.getByText(`why: ${HOSTILE}`)).toBeVisible();
  await expectInert(page);
  await expectAccessible(page, 'approvals');
  await tabTo(page, page.getByRole('button', { name: 'Approve' }));
  await page.keyboard.press('Enter');
  await expect(page.getByText('Nothing is waiting for approval.')).toBeVisible();
  // The keyboard lands on the announcement of what happened, not on the page body.
  const announced = page.getByRole('status').filter({ hasText: 'Approved and run (1 row affected)' });
  await expect(announced).toBeFocused();
  const history = page.getByRole('region', { name: 'History' });
  const approvedItem = history.getByRole('article', { name: `Query ${approved}` });
  await expect(approvedItem.getByText('APPROVED', { exact: true })).toBeVisible();
  await expect(approvedItem.getByText('1 row affected')).toBeVisible();
  expect((await rows()).find((r) => r.id === 2)?.label).toBe('approved');

  const rejected = await submit(`DELETE FROM ${T} WHERE id = 1`);
  await page.reload();
  await page.getByRole('button', { name: 'Reject' }).click();
  // A reason of spaces only is no reason: refused in the page, nothing rejected.
  await page.getByLabel('Reason').fill('   ');
  await page.getByLabel('Reason').press('Enter');
  await expect(page.getByRole('alert')).toContainText('Give a reason');
  expect((await s.call('GET', `/queries/${rejected}/status`)).body.data.status).toBe('PENDING');
  await page.getByLabel('Reason').fill('not today');
  await page.getByLabel('Reason').press('Enter');
  const rejectedItem = history.getByRole('article', { name: `Query ${rejected}` });
  await expect(rejectedItem.getByText('REJECTED', { exact: true })).toBeVisible();
  await expect(rejectedItem.getByText('not today')).toBeVisible();
  expect((await rows()).map((r) => r.id)).toEqual([1, 2]);
});

test('Dashboards: the demo dashboard draws each widget as a region named by its title on the 12-column grid', async ({
  adminPage: page,
}) => {
  await go(page, 'Dashboards');
  await page.getByRole('link', { name: 'Demo SaaS metrics' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Demo SaaS metrics' })).toBeVisible();
  for (const title of [
    'MRR by plan',
    'Signups by month',
    'Revenue by month (USD)',
    'Accounts by status (churn)',
  ]) {
    await expectPainted(page.getByRole('region', { name: title }));
  }
  const mrr = page.getByRole('region', { name: 'MRR (USD)' });
  await expect(mrr.locator('.metric-value')).toHaveText(/^\d+/);
  const about = page.getByRole('region', { name: 'About this dashboard' });
  expect(await about.locator('strong').textContent()).toBe('demo SQLite database');
  // MRR by plan is 6 of the 12 columns wide: half the width of the full-width dashboard.
  const grid = (await page.locator('.grid').boundingBox())!;
  const plans = (await page.getByRole('region', { name: 'MRR by plan' }).boundingBox())!;
  expect(plans.width / grid.width).toBeCloseTo(0.5, 1);
  // A reload answers from the widget cache and says so; Refresh runs the query again (dashboards.spec.ts
  // checks that a change in the database shows).
  await page.reload();
  const mrrByPlan = page.getByRole('region', { name: 'MRR by plan' });
  await expect(mrrByPlan.getByText(/^Cached/)).toBeVisible();
  await page.getByRole('button', { name: 'Refresh MRR by plan' }).click();
  await expect(mrrByPlan.getByText(/^Cached/)).toHaveCount(0);
  await expectPainted(mrrByPlan);
  await expectAccessible(page, 'dashboard');
});

test('hostile dashboard and widget titles, column names, cell values, Markdown and annotations are shown as text', async ({
  adminPage: page,
  server: s,
  origin,
}) => {
  const d = await s.call('POST', '/dashboards', { body: { title: `Board ${HOSTILE}` } });
  const id = d.body.data.id;
  const widget = (body: Record<string, unknown>) =>
    s.call('POST', `/dashboards/${id}/widgets`, {
      body: { connectionId: pgConn, width: 6, height: 2, ...body },
    });
  expect(
    (await widget({ type: 'TABLE', title: `Table ${HOSTILE}`, query: `SELECT * FROM ${T}` })).status,
  ).toBe(201);
  expect(
    (
      await widget({
        type: 'BAR',
        title: `Bar ${HOSTILE}`,
        query: `SELECT label AS "${COL}", id FROM ${T}`,
      })
    ).status,
  ).toBe(201);
  expect(
    (
      await widget({
        type: 'TEXT',
        title: 'Notes',
        connectionId: null,
        config: JSON.stringify({
          markdown: `# Heading\n\n${HOSTILE} [link](javascript:alert(1)) **bold**`,
        }),
      })
    ).status,
  ).toBe(201);
  const note = await s.call('POST', `/connections/${pgConn}/annotations`, {
    body: { tableName: T, columnName: 'label', annotation: `Label ${HOSTILE}` },
  });
  expect(note.status, note.text).toBe(201);

  await page.goto(`${origin}/#/dashboards/${id}`);
  await expect(page.getByRole('heading', { level: 1, name: `Board ${HOSTILE}` })).toBeVisible();
  const table = page.getByRole('region', { name: `Table ${HOSTILE}` });
  await expect(table.getByRole('columnheader', { name: COL })).toBeVisible();
  expect(await table.getByRole('cell', { name: HOSTILE, exact: true }).count()).toBe(2);
  await expect(page.getByRole('region', { name: `Bar ${HOSTILE}` }).locator('canvas')).toBeVisible();
  const notes = page.getByRole('region', { name: 'Notes' });
  await expect(notes.getByText(HOSTILE).first()).toBeVisible();
  expect(await notes.locator('a').count()).toBe(0); // the javascript: link is text, not a link
  await expectInert(page);

  await page.goto(`${origin}/#/connections/${pgConn}`);
  await page.getByLabel('Search tables and columns').fill(T);
  await expect(page.getByText(`Label ${HOSTILE}`).first()).toBeVisible();
  await expect(page.getByRole('columnheader', { name: 'Column' }).first()).toBeVisible();
  expect(await page.getByRole('cell', { name: COL, exact: true }).count()).toBe(1);
  await expectInert(page);
  await expectAccessible(page, 'connections');
});

test('Dashboards: edits a widget (title, type), deletes a widget, renames and deletes the dashboard; each read back through the API', async ({
  adminPage: page,
  server: s,
  origin,
}) => {
  const d = await s.call('POST', '/dashboards', { body: { title: 'Editable board' } });
  expect(d.status, d.text).toBe(201);
  const id = d.body.data.id as string;
  const add = async (title: string, type: string) => {
    const r = await s.call('POST', `/dashboards/${id}/widgets`, {
      body: {
        type,
        title,
        connectionId: pgConn,
        query: `SELECT id::text AS k, id FROM ${T} ORDER BY id`,
        width: 6,
        height: 2,
      },
    });
    expect(r.status, r.text).toBe(201);
    return r.body.data.id as string;
  };
  const kept = await add('Labels', 'BAR');
  const doomed = await add('Doomed', 'TABLE');
  const widgets = async () =>
    (await s.call('GET', `/dashboards/${id}/widgets`)).body.data as {
      id: string;
      title: string;
      type: string;
    }[];

  await page.goto(`${origin}/#/dashboards/${id}`);
  await expect(page.getByRole('heading', { level: 1, name: 'Editable board' })).toBeVisible();
  await expect(page.getByRole('region', { name: 'Labels' }).locator('canvas')).toBeVisible();

  // Edit: the add form, prefilled, with its preview; an empty title is refused with a field error.
  await page.getByRole('button', { name: 'Edit widget Labels' }).click();
  const form = page.getByRole('region', { name: 'Edit widget Labels' });
  await expect(form.getByLabel('Widget title')).toHaveValue('Labels');
  await expect(form.getByLabel('Widget type')).toHaveValue('BAR');
  // The connection list loads with the form: the select shows the widget's connection once it has arrived.
  await expect(form.getByLabel('Connection')).toHaveValue(pgConn);
  await form.getByLabel('Widget title').fill('');
  await form.getByRole('button', { name: 'Save widget' }).click();
  await expect(page.locator('#e-title-error')).toBeVisible();
  expect((await widgets()).find((w) => w.id === kept)?.title).toBe('Labels');
  await form.getByLabel('Widget title').fill('Labels by id');
  await form.getByLabel('Widget type').selectOption('LINE');
  await form.getByRole('button', { name: 'Preview' }).click();
  await expect(form.getByRole('region', { name: 'Preview' }).locator('canvas')).toBeVisible();
  await expectAccessible(page, 'dashboard edit widget');
  await form.getByRole('button', { name: 'Save widget' }).click();
  const edited = page.getByRole('region', { name: 'Labels by id' });
  await expect(edited.getByRole('img', { name: /line chart/ })).toBeVisible();
  expect(await page.getByRole('region', { name: 'Labels', exact: true }).count()).toBe(0);
  expect((await widgets()).find((w) => w.id === kept)).toMatchObject({
    title: 'Labels by id',
    type: 'LINE',
  });

  // Delete a widget: asked in the page, then gone from the page and the API.
  await page.getByRole('button', { name: 'Delete widget Doomed' }).click();
  const ask = page.getByRole('group', { name: /Delete widget .Doomed./ });
  await expect(ask).toBeVisible();
  await ask.getByRole('button', { name: 'Yes, delete widget' }).click();
  await expect(page.getByRole('region', { name: 'Doomed' })).toHaveCount(0);
  expect((await widgets()).map((w) => w.id)).toEqual([kept]);
  expect(doomed).not.toBe(kept);

  // Rename the dashboard, then delete it.
  await page.getByText('Edit dashboard', { exact: true }).click();
  await page.getByLabel('Dashboard title').fill('Renamed board');
  await page.getByLabel('Dashboard description').fill('Edited in the console');
  await page.getByRole('button', { name: 'Save dashboard' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Renamed board' })).toBeVisible();
  const got = (await s.call('GET', `/dashboards/${id}`)).body.data;
  expect(got).toMatchObject({ title: 'Renamed board', description: 'Edited in the console' });
  await page.getByRole('button', { name: 'Delete dashboard' }).click();
  const askBoard = page.getByRole('group', { name: /Delete dashboard .Renamed board./ });
  await expect(askBoard).toBeVisible();
  await expectAccessible(page, 'dashboard delete confirmation');
  await askBoard.getByRole('button', { name: 'Yes, delete dashboard' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Dashboards' })).toBeVisible();
  expect((await s.call('GET', `/dashboards/${id}`)).status).toBe(404);
  expect((await s.call('GET', `/dashboards/${id}/widgets`)).status).toBe(404);
});

test('Connections, Saved queries, Workflows, Settings and Chat: main paths', async ({
  adminPage: page,
  server: s,
}) => {
  const sq = await s.call('POST', '/saved-queries', {
    body: {
      name: 'Label by id',
      query: `SELECT * FROM ${T} WHERE id = {{id}}`,
      connectionId: pgConn,
      parameters: [{ name: 'id', type: 'integer', required: true }],
    },
  });
  expect(sq.status, sq.text).toBe(201);
  const wf = await s.call('POST', '/workflows', {
    body: {
      name: 'Count rows',
      triggerType: 'MANUAL',
      connectionId: pgConn,
      steps: [{ query: `SELECT count(*)::int AS n FROM ${T}` }],
    },
  });
  expect(wf.status, wf.text).toBe(201);

  await go(page, 'Connections');
  await page.getByRole('link', { name: 'Demo SaaS (SQLite)' }).click();
  await page.getByRole('button', { name: 'Test connection' }).click();
  await expect(page.getByRole('status').getByText(/^Connected/)).toBeVisible();
  await page.getByLabel('Search tables and columns').fill('plans');
  await expect(page.getByText('monthly_price_cents')).toBeVisible();
  // Field errors from the API's validation details.
  await page.getByText('New connection').click();
  await page.getByRole('button', { name: 'Create connection' }).click();
  await expect(page.locator('#new-name-error')).toBeVisible();
  // An admin edits one: the change is stored (read back through the API), the password never shown.
  await page.getByText('Edit connection').click();
  await page.locator('#edit-name').fill('Demo SaaS (renamed)');
  await page.getByRole('button', { name: 'Save connection' }).click();
  await expect(page.getByRole('link', { name: 'Demo SaaS (renamed)' })).toBeVisible();
  const conns = (await s.call('GET', '/connections')).body.data as { name: string }[];
  expect(conns.map((c) => c.name)).toContain('Demo SaaS (renamed)');
  await page.locator('#edit-name').fill('');
  await page.getByRole('button', { name: 'Save connection' }).click();
  await expect(page.locator('#edit-name-error')).toBeVisible();
  await page.locator('#edit-name').fill('Demo SaaS (SQLite)');
  await page.getByRole('button', { name: 'Save connection' }).click();
  await expect(page.getByRole('link', { name: 'Demo SaaS (SQLite)' })).toBeVisible();

  await go(page, 'Saved queries');
  await page.getByLabel('id (required)').fill('2');
  await page.getByRole('button', { name: 'Run Label by id' }).click();
  await expect(page.getByRole('cell', { name: HOSTILE, exact: true })).toBeVisible();
  await expectAccessible(page, 'saved queries');

  await go(page, 'Workflows');
  await page.getByRole('link', { name: 'Count rows' }).click();
  await page.getByRole('button', { name: 'Run now' }).click();
  const lastRun = page.getByRole('list', { name: 'Runs' }).getByRole('listitem').first();
  await expect(lastRun.locator('p').first().locator('.badge')).toHaveText('SUCCESS');
  expect((await s.call('GET', `/workflows/${wf.body.data.id}/runs`)).body.data[0].status).toBe('SUCCESS');
  await expectAccessible(page, 'workflows');

  await go(page, 'Settings');
  await page.getByLabel('New key name').fill('from the console');
  await page.getByRole('button', { name: 'Create key' }).click();
  const shown = await page.getByLabel('The new API key.').inputValue();
  expect(shown).toMatch(/^lp_/);
  expect((await s.call('GET', '/', { key: shown })).status).toBe(200);
  await page.reload();
  expect(await page.getByLabel('The new API key.').count()).toBe(0); // shown once
  await expect(page.getByRole('cell', { name: 'from the console', exact: true })).toBeVisible();
  await expectAccessible(page, 'settings');

  await go(page, 'Chat');
  await page.getByLabel('Connection').selectOption({ label: 'Demo SaaS (SQLite) (SQLITE)' });
  await page.getByLabel('Question').fill('How many accounts?');
  await page.getByRole('button', { name: 'Ask' }).click();
  const alert = page.getByRole('alert');
  await expect(alert).toBeVisible();
  expect(await alert.textContent()).toMatch(/AI_NOT_CONFIGURED.*OPENAI_API_KEY/s);
  await expectAccessible(page, 'chat');
});

test('Query: the CSV download defuses spreadsheet formulas in cells and column names and keeps numbers; a truncated answer says so', async ({
  adminPage: page,
}) => {
  await go(page, 'Query');
  await page.getByLabel('Connection').selectOption({ label: 'Demo SaaS (SQLite) (SQLITE)' });
  await page
    .getByLabel('SQL')
    .fill(
      `SELECT '=HYPERLINK("http://x.example","y")' AS "=cmd", '-1+2' AS t, -3 AS n, '@SUM(A1)' AS a, '12.5' AS s`,
    );
  await page.getByRole('button', { name: 'Run' }).click();
  await expect(page.getByRole('table', { name: 'Query result' })).toBeVisible();
  const download = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Download CSV' }).click();
  const file = await (await download).path();
  expect(readFileSync(file, 'utf8')).toBe(
    `'=cmd,t,n,a,s\r\n"'=HYPERLINK(""http://x.example"",""y"")",'-1+2,-3,'@SUM(A1),12.5\r\n`,
  );

  // Past the 1,000-row default the answer is truncated, and the page says so.
  await page
    .getByLabel('SQL')
    .fill('WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1500) SELECT i FROM n');
  await page.getByRole('button', { name: 'Run' }).click();
  await expect(page.getByText('Truncated: only the first 1000 rows are shown.')).toBeVisible();
  await expect(page.getByRole('table', { name: 'Query result' }).getByRole('row')).toHaveCount(1001);
});
