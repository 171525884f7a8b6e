import { randomBytes } from 'node:crypto';
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
 * The approval history in Debian's chromium: decisions made elsewhere (through the API, by another admin)
 * are listed from GET /queries with reviewer, note and result, filtered by status and paged; a member sees
 * their own submissions. Listing changes nothing in the database.
 */
const suffix = randomBytes(4).toString('hex');
const T = `approvals_${suffix}`;

const dbs = specTables(
  [T],
  [`CREATE TABLE ${T} (id int PRIMARY KEY, label text)`, `INSERT INTO ${T} VALUES (1, 'one'), (2, 'two')`],
);
let pgConn: string;
const keys: Record<'analyst' | 'reviewer', string> = { analyst: '', reviewer: '' };
const ids: Record<'approved' | 'rejected' | 'pending', string> = { approved: '', rejected: '', pending: '' };

test.beforeAll(async ({ server: s, postgres }) => {
  pgConn = await createConnection(s, postgresConnection(postgres, { name: `pg ${suffix}`, readOnly: false }));
  for (const [name, role] of [
    ['analyst', 'member'],
    ['reviewer', 'admin'],
  ] as const) {
    keys[name] = (
      await addMember(s, {
        email: `${name}-${suffix}@example.com`,
        name: `${name} ${suffix}`,
        role,
        connectionIds: [pgConn],
      })
    ).key;
  }
  const submit = async (query: string) => {
    const r = await s.call('POST', '/queries/submit', {
      key: keys.analyst,
      body: { connectionId: pgConn, query },
    });
    expect(r.status, r.text).toBe(202);
    return r.body.data.id as string;
  };
  ids.approved = await submit(`UPDATE ${T} SET label = 'approved' WHERE id = 2`);
  ids.rejected = await submit(`DELETE FROM ${T} WHERE id = 1`);
  // Nine more pending queries: with the three above, "Everything" is two pages of ten.
  for (let i = 0; i < 9; i++) await submit(`UPDATE ${T} SET label = label WHERE id = ${i + 100}`);
  ids.pending = await submit(`INSERT INTO ${T} VALUES (3, 'three')`);
  const approve = await s.call('POST', `/queries/${ids.approved}/approve`, { key: keys.reviewer, body: {} });
  expect(approve.status, approve.text).toBe(200);
  const reject = await s.call('POST', `/queries/${ids.rejected}/reject`, {
    key: keys.reviewer,
    body: { note: `no: ${HOSTILE}` },
  });
  expect(reject.status, reject.text).toBe(200);
});

const table = () =>
  dbs.query<{ id: number; label: string }>('POSTGRES', `SELECT id, label FROM ${T} ORDER BY id`);

test('Approvals → History: decisions made through the API by another admin, with reviewer, note and result; filtered and paged', async ({
  adminPage: page,
  server: s,
}) => {
  const before = await table();
  expect(before).toEqual([
    { id: 1, label: 'one' },
    { id: 2, label: 'approved' },
  ]);
  await go(page, 'Approvals');
  const history = page.getByRole('region', { name: 'History' });
  const item = (id: string) => history.getByRole('article', { name: `Query ${id}` });

  // Default filter: decided queries only, newest first.
  await expect(history.getByRole('article')).toHaveCount(2);
  const names = await history
    .getByRole('article')
    .evaluateAll((els) => els.map((e) => e.getAttribute('aria-label')));
  expect(names).toEqual([`Query ${ids.rejected}`, `Query ${ids.approved}`]);
  await expect(item(ids.approved).getByText('APPROVED', { exact: true })).toBeVisible();
  await expect(item(ids.approved).getByText(`reviewer ${suffix}`)).toBeVisible(); // the reviewer by name
  await expect(item(ids.approved).getByText(`analyst ${suffix}`)).toBeVisible(); // the submitter by name
  await expect(item(ids.rejected).getByText('REJECTED', { exact: true })).toBeVisible();
  await expect(item(ids.rejected).getByText(`no: ${HOSTILE}`, { exact: true })).toBeVisible();
  await expectInert(page);
  await expectAccessible(page, 'approvals history');

  // The stored result of the approved write, read on demand.
  await item(ids.approved)
    .getByRole('button', { name: `Show the result of query ${ids.approved}` })
    .click();
  await expect(item(ids.approved).getByText('1 row affected')).toBeVisible();

  await page.getByLabel('Show').selectOption({ label: 'Rejected' });
  await expect(history.getByRole('article')).toHaveCount(1);
  await expect(item(ids.rejected)).toBeVisible();

  // Everything: 12 queries, two pages of ten; the oldest (the approved one) is on the second page.
  await page.getByLabel('Show').selectOption({ label: 'Everything' });
  await expect(history.getByText('Page 1 of 2')).toBeVisible();
  await expect(history.getByRole('article')).toHaveCount(10);
  await expect(item(ids.pending).getByText('PENDING', { exact: true })).toBeVisible();
  await history.getByRole('button', { name: 'Older' }).click();
  await expect(history.getByText('Page 2 of 2')).toBeVisible();
  await expect(history.getByRole('article')).toHaveCount(2);
  await expect(item(ids.approved)).toBeVisible();
  await history.getByRole('button', { name: 'Newer' }).click();
  await expect(history.getByText('Page 1 of 2')).toBeVisible();

  // Looking changed nothing: the pending insert was not run, the table is as it was.
  expect((await s.call('GET', `/queries/${ids.pending}/status`)).body.data.status).toBe('PENDING');
  expect(await table()).toEqual(before);
});

test('Approvals as a member: no review list (403 explained, not an error), their own submissions in the history', async ({
  page,
}) => {
  await signIn(page, keys.analyst);
  await go(page, 'Approvals');
  await expect(page.getByText(/Reviewing is for admins/)).toBeVisible();
  expect(await page.getByRole('button', { name: 'Approve' }).count()).toBe(0);
  const history = page.getByRole('region', { name: 'History' });
  await expect(history.getByRole('article', { name: `Query ${ids.approved}` })).toBeVisible();
  // A member cannot list members: their own id reads "you", others' ids are not shown.
  const mine = history.getByRole('article', { name: `Query ${ids.approved}` });
  await expect(mine.getByText(/^you, /)).toBeVisible();
  await expect(mine.getByText('another user')).toBeVisible();
  await expect(history.getByRole('article', { name: `Query ${ids.rejected}` })).toBeVisible();
  expect(await page.getByRole('alert').count()).toBe(0);
  await expectAccessible(page, 'approvals as a member');
});
