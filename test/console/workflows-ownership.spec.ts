import {
  addMember,
  demoConnection,
  expect,
  expectAccessible,
  expectInert,
  HOSTILE,
  signIn,
  test,
} from './fixtures';

/**
 * One ownership rule (issue 45, point 7): a member sees no Edit, Publish, Deactivate or Delete on an
 * admin's workflow (the API would answer 403), only "Run now"; on their own workflow all of them. Every
 * state is read back through the API.
 */
test('Workflows: a member sees no change buttons on an admin’s workflow, and all of them on their own', async ({
  page,
  server: s,
  origin,
}) => {
  const demo = await demoConnection(s);
  const create = async (name: string, key?: string) => {
    const r = await s.call('POST', '/workflows', {
      key,
      body: {
        name,
        triggerType: 'MANUAL',
        connectionId: demo.id,
        steps: [
          { name: 'plans', query: 'SELECT count(*) AS plan_count FROM plans LIMIT 1', stopIfEmpty: true },
        ],
      },
    });
    expect(r.status, r.text).toBe(201);
    return r.body.data.id as string;
  };
  const publish = async (id: string, key?: string) => {
    const first = await s.call('PATCH', `/workflows/${id}`, { key, body: { isActive: true } });
    const r =
      first.status === 422
        ? await s.call('PATCH', `/workflows/${id}`, {
            key,
            body: { isActive: true, acknowledgedWarnings: first.body.error.details.warnings },
          })
        : first;
    expect(r.status, r.text).toBe(200);
  };
  const read = async (id: string) => (await s.call('GET', `/workflows/${id}`)).body.data;

  // An admin's workflow, published (so Deactivate would show) with unpublished changes (so would Publish).
  const adminName = `Admin report ${HOSTILE}`;
  const theirs = await create(adminName);
  await publish(theirs);
  const changed = await s.call('PATCH', `/workflows/${theirs}`, {
    body: { expectedDraftRevision: 1, description: 'changed after publishing' },
  });
  expect(changed.status, changed.text).toBe(200);
  const before = await read(theirs);
  expect(before).toMatchObject({ isActive: true, hasUnpublishedChanges: true });

  const member = await addMember(s, {
    email: `wf-viewer-${Date.now()}@example.com`,
    name: 'Workflow viewer',
    connectionIds: [demo.id],
  });
  const mine = await create('My report', member.key);
  await publish(mine, member.key);
  await signIn(page, member.key);

  await page.goto(`${origin}/#/workflows/${theirs}`);
  const detail = page.getByRole('region', { name: adminName });
  await expect(detail.getByRole('heading', { level: 2 })).toHaveText(adminName);
  await expect(page.getByText('its creator and admins change it')).toBeVisible();
  await expect(detail.getByRole('button', { name: 'Run now' })).toBeVisible();
  for (const name of ['Edit', 'Publish', 'Publish changes', 'Deactivate', 'Delete workflow'])
    await expect(page.getByRole('button', { name, exact: true })).toHaveCount(0);
  await expectInert(page);
  await expectAccessible(page, 'a member viewing an admin’s workflow');
  // The API agrees, and the workflow is as it was.
  const refused = await s.call('PATCH', `/workflows/${theirs}`, {
    key: member.key,
    body: { isActive: false },
  });
  expect(refused.status).toBe(403);
  expect(await read(theirs)).toEqual(before);

  await page.goto(`${origin}/#/workflows/${mine}`);
  const own = page.getByRole('region', { name: 'My report' });
  await expect(own.getByRole('heading', { level: 2 })).toHaveText('My report');
  await expect(page.getByText('its creator and admins change it')).toHaveCount(0);
  for (const name of ['Run now', 'Edit', 'Deactivate', 'Delete workflow'])
    await expect(own.getByRole('button', { name, exact: true })).toBeVisible();
  await own.getByRole('button', { name: 'Deactivate' }).click();
  await expect(own.getByRole('button', { name: 'Publish', exact: true })).toBeVisible();
  await expect.poll(async () => (await read(mine)).isActive).toBe(false);
});
