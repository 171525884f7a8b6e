import { randomBytes } from 'node:crypto';
import { PAGE_SIZE } from '../../console/src/components/page-size';
import { createConnection, postgresConnection } from '../support/connections';
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
 * Lists and settings in Debian's chromium against the real local runtime: writes that happen once
 * whatever the user clicks twice (Run now, Create key), key revocation behind a confirmation that marks
 * the signed-in key, saved-query parameters (an unchecked required boolean, a date, the API's
 * per-parameter messages), a malformed address, deep links to unknown records, paging past one page,
 * connection activation and deletion, and a pasted key with an invisible character. Every effect is
 * read back through the API.
 */
const suffix = randomBytes(4).toString('hex');

test('Workflows: a double-clicked "Run now" runs once; an unknown workflow id says not found', async ({
  adminPage: page,
  server: s,
}) => {
  const demo = await demoConnection(s);
  const name = `Once ${suffix}`;
  const created = await s.call('POST', '/workflows', {
    body: {
      name,
      triggerType: 'MANUAL',
      connectionId: demo.id,
      steps: [{ name: `plans ${HOSTILE}`, query: 'SELECT count(*) AS n FROM plans' }],
    },
  });
  expect(created.status, created.text).toBe(201);
  const id = created.body.data.id as string;

  await go(page, 'Workflows');
  await page.getByRole('link', { name }).click();
  await page.getByRole('button', { name: 'Run now' }).dblclick();
  const runs = page.getByRole('list', { name: 'Runs' }).getByRole('listitem');
  await expect(runs.first().getByText('SUCCESS', { exact: true }).first()).toBeVisible();
  await expect(page.getByRole('button', { name: 'Run now' })).toBeEnabled();
  const stored = await s.call('GET', `/workflows/${id}/runs`);
  expect(stored.body.data).toHaveLength(1);
  await expect(runs).toHaveCount(1);
  await expectInert(page);

  // A deep link to a workflow beyond the first page of the list (the list is newest first) shows it.
  const fillers: string[] = [];
  for (let i = 0; i < PAGE_SIZE; i++) {
    const r = await s.call('POST', '/workflows', {
      body: {
        name: `filler ${suffix} ${i}`,
        triggerType: 'MANUAL',
        connectionId: demo.id,
        steps: [{ query: 'SELECT 1 AS one' }],
      },
    });
    expect(r.status, r.text).toBe(201);
    fillers.push(r.body.data.id);
  }
  try {
    await page.goto(`${page.url().split('#')[0]}#/workflows`);
    await page.reload();
    await expect(page.getByRole('navigation', { name: 'Workflows pages' })).toContainText('Page 1 of');
    await expect(page.getByRole('link', { name })).toHaveCount(0);
    await page.goto(`${page.url().split('#')[0]}#/workflows/${id}`);
    await expect(page.getByRole('heading', { level: 2, name })).toBeVisible();
    await expect(page.getByRole('list', { name: 'Runs' }).getByRole('listitem')).toHaveCount(1);
  } finally {
    for (const f of fillers) await s.call('DELETE', `/workflows/${f}`);
  }

  await page.goto(`${page.url().split('#')[0]}#/workflows/wf_missing_${suffix}`);
  await expect(page.getByRole('alert')).toContainText('Workflow not found');
  await expectAccessible(page, 'workflow not found');
});

test('Settings → API keys: Create key once on a double click; Revoke asks first and warns about the signed-in key; owner and scopes readable', async ({
  adminPage: page,
  server: s,
}) => {
  const keys = async () => (await s.call('GET', '/keys?pageSize=100')).body.data as any[];
  const name = `dbl ${suffix} <b>bold</b>`;
  await go(page, 'Settings');
  const section = page.getByRole('region', { name: 'API keys' });
  await section.getByLabel('New key name').fill(name);
  await section.getByRole('button', { name: 'Create key' }).dblclick();
  await expect(page.getByLabel('The new API key.')).toHaveValue(/^lp_/);
  await expect(section.getByRole('button', { name: 'Create key' })).toBeEnabled();
  expect((await keys()).filter((k) => k.name === name)).toHaveLength(1);
  await expectInert(page);

  // The signed-in key is marked, its owner is "you" and its scopes are a list, not a JSON string.
  const mine = (await keys()).find((k) => s.adminKey.startsWith(k.keyPrefix))!;
  const mineRow = section.getByRole('row').filter({ has: page.getByRole('cell', { name: mine.keyPrefix }) });
  await expect(mineRow).toContainText('this key');
  await expect(mineRow).toContainText('(you)');
  await expect(mineRow).not.toContainText('["');
  await expect(mineRow.getByRole('cell', { name: 'all (*)' })).toBeVisible();

  // Revoking the signed-in key warns first; Cancel keeps it (and the session).
  await mineRow.getByRole('button', { name: `Revoke ${mine.name}` }).click();
  const confirm = page.getByRole('group', { name: /you will be signed out/ });
  await expect(confirm).toBeVisible();
  await expectAccessible(page, 'revoke confirmation');
  await confirm.getByRole('button', { name: 'Cancel' }).click();
  expect((await keys()).some((k) => k.id === mine.id)).toBe(true);

  // Another key: nothing happens until "Revoke key"; then it is gone, and this session stays.
  const made = (await keys()).find((k) => k.name === name)!;
  const row = section.getByRole('row').filter({ has: page.getByRole('cell', { name: made.keyPrefix }) });
  await expect(row).not.toContainText('this key');
  await row.getByRole('button', { name: `Revoke ${name}` }).click();
  const other = page.getByRole('group', { name: /^Revoke/ });
  await expect(other).not.toContainText('signed out');
  expect((await keys()).some((k) => k.id === made.id)).toBe(true);
  await other.getByRole('button', { name: 'Revoke key' }).click();
  await expect(row).toHaveCount(0);
  expect((await keys()).some((k) => k.id === made.id)).toBe(false);
  await expect(page.getByRole('navigation')).toBeVisible();
});

test('Saved queries: an unchecked required boolean is sent as false, a date is sent, the API names a bad parameter beside its field', async ({
  adminPage: page,
  server: s,
}) => {
  const demo = await demoConnection(s);
  const name = `Flags ${suffix}`;
  const sq = await s.call('POST', '/saved-queries', {
    body: {
      name,
      query: 'SELECT {{active}} AS active, {{since}} AS since, {{label}} AS label',
      connectionId: demo.id,
      parameters: [
        { name: 'active', type: 'boolean', required: true },
        { name: 'since', type: 'date', required: true },
        { name: 'label', type: 'string' },
      ],
    },
  });
  expect(sq.status, sq.text).toBe(201);
  await go(page, 'Saved queries');
  const card = page.getByRole('article', { name });
  await card.getByLabel('since (required)').fill('2024-02-29');
  await card.getByRole('button', { name: `Run ${name}` }).click();
  const table = card.getByRole('table');
  await expect(table.getByRole('cell')).toHaveText(['0', '2024-02-29', '']);

  await card.getByLabel('active (required)').check();
  await card.getByRole('button', { name: `Run ${name}` }).click();
  await expect(table.getByRole('cell')).toHaveText(['1', '2024-02-29', '']);

  // Too long for the API (the browser has no limit): its message appears beside that field.
  await card.getByLabel('label').fill('x'.repeat(10_001));
  await card.getByRole('button', { name: `Run ${name}` }).click();
  await expect(card.getByRole('alert')).toContainText('Parameter validation failed.');
  await expect(card.locator(`#sq-${sq.body.data.id}-label-error`)).toContainText('at most 10000 characters');
  await expect(card.getByLabel('label')).toHaveAttribute('aria-invalid', 'true');
  await expect(card.getByRole('table')).toHaveCount(0);
  await expectAccessible(page, 'saved query parameter error');
  await s.call('DELETE', `/saved-queries/${sq.body.data.id}`);
});

test(`Saved queries: more than one page (${PAGE_SIZE} a page) is paged with Previous/Next`, async ({
  adminPage: page,
  server: s,
}) => {
  const demo = await demoConnection(s);
  const ids: string[] = [];
  // Named to sort after every other saved query of the run (the list is ordered by name).
  for (let i = 0; i < PAGE_SIZE + 5; i++) {
    const r = await s.call('POST', '/saved-queries', {
      body: {
        name: `zz paged ${suffix} ${String(i).padStart(2, '0')}`,
        query: 'SELECT 1 AS one',
        connectionId: demo.id,
      },
    });
    expect(r.status, r.text).toBe(201);
    ids.push(r.body.data.id);
  }
  try {
    const total = (await s.call('GET', '/saved-queries?pageSize=1')).body.meta.pagination.total as number;
    const pages = Math.ceil(total / PAGE_SIZE);
    await go(page, 'Saved queries');
    const pager = page.getByRole('navigation', { name: 'Saved queries pages' });
    await expect(pager).toContainText(`Page 1 of ${pages}, ${total} in all`);
    await expect(page.getByRole('article')).toHaveCount(PAGE_SIZE);
    await expect(pager.getByRole('button', { name: 'Previous page' })).toBeDisabled();
    for (let p = 2; p <= pages; p++) {
      await pager.getByRole('button', { name: 'Next page' }).click();
      await expect(pager).toContainText(`Page ${p} of ${pages}`);
    }
    await expect(pager.getByRole('button', { name: 'Next page' })).toBeDisabled();
    // The last page holds the last of ours (the list is ordered by name).
    await expect(page.getByRole('article', { name: `zz paged ${suffix} ${PAGE_SIZE + 4}` })).toBeVisible();
    await expect(page.getByRole('article')).toHaveCount(total - (pages - 1) * PAGE_SIZE);
    await pager.getByRole('button', { name: 'Previous page' }).click();
    await expect(pager).toContainText(`Page ${pages - 1} of ${pages}`);
    await expectAccessible(page, 'paged saved queries');
  } finally {
    for (const id of ids) await s.call('DELETE', `/saved-queries/${id}`);
  }
});

test('A malformed address shows Not found with the navigation and Sign out, never a blank page', async ({
  adminPage: page,
}) => {
  await page.goto(`${page.url().split('#')[0]}#/dashboards/%E0%A4%A`);
  await expect(page.getByRole('heading', { level: 1, name: 'Not found' })).toBeVisible();
  await expect(page.getByRole('navigation', { name: 'Main' })).toBeVisible();
  await expect(page.getByRole('button', { name: 'Sign out' })).toBeVisible();
  await go(page, 'Dashboards');
});

test('Connections: admins deactivate, activate and delete (after a confirmation); an old test result goes; unknown ids say not found; members see no such buttons', async ({
  adminPage: page,
  server: s,
  postgres,
}) => {
  const name = `pg admin ${suffix}`;
  const id = await createConnection(s, postgresConnection(postgres, { name }));
  const read = async () => s.call('GET', `/connections/${id}`);
  await go(page, 'Connections');
  await page.getByRole('link', { name }).click();
  const detail = page.getByRole('region', { name });

  await detail.getByRole('button', { name: 'Test connection' }).click();
  await expect(detail.getByRole('status').getByText(/^Connected/)).toBeVisible();
  // A later test that fails: the earlier "Connected" does not stay beside the new outcome.
  expect((await s.call('PATCH', `/connections/${id}`, { body: { password: 'wrong' } })).status).toBe(200);
  await detail.getByRole('button', { name: 'Test connection' }).click();
  await expect(detail.getByText(/^Failed|PASSWORD|password/i).first()).toBeVisible();
  await expect(detail.getByText(/^Connected/)).toHaveCount(0);

  // A failed test may have turned it off: whichever state it is in, the button turns it over and back.
  const first = (await read()).body.data.isActive as boolean;
  const [turn, back] = first ? ['Deactivate', 'Activate'] : ['Activate', 'Deactivate'];
  await detail.getByRole('button', { name: turn, exact: true }).click();
  await expect(detail.getByRole('button', { name: back, exact: true })).toBeVisible();
  expect((await read()).body.data.isActive).toBe(!first);
  await detail.getByRole('button', { name: back, exact: true }).click();
  await expect(detail.getByRole('button', { name: turn, exact: true })).toBeVisible();
  expect((await read()).body.data.isActive).toBe(first);

  await detail.getByRole('button', { name: 'Delete connection' }).click();
  const confirm = page.getByRole('group', { name: /^Delete the connection/ });
  await expectAccessible(page, 'delete connection confirmation');
  await confirm.getByRole('button', { name: 'Cancel' }).click();
  expect((await read()).status).toBe(200);
  await detail.getByRole('button', { name: 'Delete connection' }).click();
  await confirm.getByRole('button', { name: 'Delete', exact: true }).click();
  await expect(page.getByRole('link', { name })).toHaveCount(0);
  expect((await read()).status).toBe(404);

  await page.goto(`${page.url().split('#')[0]}#/connections/${id}`);
  await expect(page.getByRole('alert')).toContainText('Connection not found');

  // A member sees the connection assigned to it, without the admin buttons.
  const demo = await demoConnection(s);
  const { key: memberKey } = await addMember(s, {
    email: `conn-${suffix}@example.com`,
    name: `conn ${suffix}`,
    connectionIds: [demo.id],
  });
  await page.getByRole('button', { name: 'Sign out' }).click();
  await signIn(page, memberKey);
  await page.goto(`${page.url().split('#')[0]}#/connections/${demo.id}`);
  await expect(page.getByRole('button', { name: 'Test connection' })).toBeVisible();
  await expect(page.getByRole('button', { name: /^(Deactivate|Activate|Delete connection)$/ })).toHaveCount(
    0,
  );
});

test('Sign-in: a key pasted with a zero-width space is refused in plain words before it is sent; trimmed spaces are fine', async ({
  page,
  server: s,
}) => {
  await page.getByLabel('API key').fill(`${s.adminKey}\u200b`);
  await page.getByRole('button', { name: 'Sign in' }).click();
  const alert = page.getByRole('alert');
  await expect(alert).toContainText('invisible character (U+200B)');
  await expect(alert).not.toContainText('ISO-8859-1');
  await page.getByLabel('API key').fill(`lp_“quoted”`);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(alert).toContainText('cannot be part of a Loupe key');
  await page.getByLabel('API key').fill(`  ${s.adminKey}  `);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('navigation', { name: 'Main' })).toBeVisible();
});

test('Connections: "Use TLS (SSL)" is sent and shown; clearing the port in the edit form stores the default (null)', async ({
  adminPage: page,
  server: s,
  postgres,
}) => {
  const name = `tls ${suffix}`;
  const id = await createConnection(s, postgresConnection(postgres, { name }));
  const read = async () => (await s.call('GET', `/connections/${id}`)).body.data;
  await go(page, 'Connections');
  await page.getByRole('link', { name }).click();
  await expect(page.getByText(/· no TLS ·/)).toBeVisible();
  await page.locator('summary', { hasText: 'Edit connection' }).click();
  await page.getByRole('checkbox', { name: 'Use TLS (SSL) to connect' }).check();
  await page.locator('#edit-port').fill('');
  await page.getByRole('button', { name: 'Save connection' }).click();
  await expect(page.getByRole('status').getByText('Saved.')).toBeVisible();
  expect(await read()).toMatchObject({ sslEnabled: true, port: null });
  await expect(page.getByText(/· TLS ·/)).toBeVisible();
  expect((await s.call('DELETE', `/connections/${id}`)).status).toBe(200);
});

test('Query: a new address (#/query/<id>) selects its connection; an unknown id runs nothing; the history pages', async ({
  adminPage: page,
  server: s,
}) => {
  const demo = await demoConnection(s);
  const other = await s.call('POST', '/connections', {
    body: { name: `second demo ${suffix}`, type: 'SQLITE', database: 'demo.sqlite' },
  });
  expect(other.status, other.text).toBe(201);
  // More statements than one page of history on the demo connection.
  for (let i = 0; i < PAGE_SIZE + 2; i++)
    expect(
      (
        await s.call('POST', `/connections/${demo.id}/query`, {
          body: { sql: `SELECT ${i} AS n -- ${suffix}` },
        })
      ).status,
    ).toBe(200);
  await page.evaluate((id) => {
    (globalThis as any).location.hash = `#/query/${id}`;
  }, demo.id);
  await expect(page.getByLabel('Connection')).toHaveValue(demo.id);
  const history = page.getByRole('region', { name: 'History' });
  await expect(history.getByRole('listitem')).toHaveCount(PAGE_SIZE);
  await history.getByRole('button', { name: 'Next page' }).click();
  await expect(history.getByText(/Page 2 of \d+/)).toBeVisible();
  await page.evaluate((id) => {
    (globalThis as any).location.hash = `#/query/${id}`;
  }, other.body.data.id);
  await expect(page.getByLabel('Connection')).toHaveValue(other.body.data.id);
  await expect(history.getByText(/^No queries yet/)).toBeVisible();

  // An id that is no connection: Run asks for a connection and sends nothing.
  await page.evaluate(() => {
    (globalThis as any).location.hash = '#/query/no-such-connection';
  });
  let sent = 0;
  page.on('request', (r) => {
    if (r.url().includes('/connections/no-such-connection/')) sent++;
  });
  await page.getByLabel('SQL').fill('SELECT 1');
  await page.getByRole('button', { name: 'Run' }).click();
  await expect(page.getByRole('alert')).toContainText('Choose a connection first.');
  expect(sent).toBe(0);
  expect((await s.call('DELETE', `/connections/${other.body.data.id}`)).status).toBe(200);
});

test('Workflows: runs past one page are paged', async ({ adminPage: page, server: s }) => {
  const demo = await demoConnection(s);
  const created = await s.call('POST', '/workflows', {
    body: {
      name: `Many runs ${suffix}`,
      triggerType: 'MANUAL',
      connectionId: demo.id,
      steps: [{ query: 'SELECT 1 AS n' }],
    },
  });
  expect(created.status, created.text).toBe(201);
  const id = created.body.data.id as string;
  for (let i = 0; i < PAGE_SIZE + 1; i++)
    expect((await s.call('POST', `/workflows/${id}/run`)).status).toBeLessThan(300);
  await page.evaluate((wid) => {
    (globalThis as any).location.hash = `#/workflows/${wid}`;
  }, id);
  const runs = page.getByRole('list', { name: 'Runs' });
  await expect(runs.getByRole('listitem')).toHaveCount(PAGE_SIZE);
  await page
    .getByRole('navigation', { name: 'Runs pages' })
    .getByRole('button', { name: 'Next page' })
    .click();
  await expect(runs.getByRole('listitem')).toHaveCount(1);
  expect((await s.call('DELETE', `/workflows/${id}`)).status).toBe(200);
});

test('a link followed while the console mounts after sign-in is the page shown (the route reads the hash when it starts listening)', async ({
  page,
  server: s,
}) => {
  const demo = await demoConnection(s);
  // The moment the signed-in shell's navigation is in the document (before its effects run), the hash
  // moves to the demo connection, as a link followed during that first render would.
  await page.evaluate((target) => {
    const seen = new MutationObserver(() => {
      if (!document.querySelector('nav[aria-label="Main"]')) return;
      seen.disconnect();
      location.hash = target;
    });
    seen.observe(document.body, { childList: true, subtree: true });
  }, `#/connections/${demo.id}`);
  await signIn(page, s.adminKey);
  await expect(page).toHaveURL(new RegExp(`#/connections/${demo.id}$`));
  await expect(page.getByRole('button', { name: 'Test connection' })).toBeVisible();
  await expect(page.getByRole('link', { name: 'Connections' })).toHaveAttribute('aria-current', 'page');
});
