import { demoConnection, expect, expectAccessible, expectInert, go, HOSTILE, test } from './fixtures';

/**
 * Publishing a workflow in Debian's chromium: the API's warnings are shown as they came and nothing is
 * published until they are acknowledged; later draft changes are published as a new version; deactivate.
 * Every state is read back through the API.
 */
test('Workflows: publish shows the warnings, publishes only after "Publish anyway", republishes changes, deactivates', async ({
  adminPage: page,
  server: s,
}) => {
  const demo = await demoConnection(s);
  const created = await s.call('POST', '/workflows', {
    body: {
      name: 'Account list',
      triggerType: 'MANUAL',
      connectionId: demo.id,
      steps: [{ name: `Accounts ${HOSTILE}`, query: 'SELECT id, name FROM accounts' }],
    },
  });
  expect(created.status, created.text).toBe(201);
  const id = created.body.data.id as string;
  const read = async () => (await s.call('GET', `/workflows/${id}`)).body.data;
  // The warnings the API gives for this draft (a refused publish writes nothing).
  const refused = await s.call('PATCH', `/workflows/${id}`, { body: { isActive: true } });
  expect(refused.status).toBe(422);
  const warnings = refused.body.error.details.warnings as string[];
  expect(warnings.length).toBeGreaterThanOrEqual(2);
  expect(await read()).toMatchObject({ isActive: false, publishedVersion: null });

  await go(page, 'Workflows');
  await page.getByRole('link', { name: 'Account list' }).click();
  await page.getByRole('button', { name: 'Publish', exact: true }).click();
  const shown = page.getByRole('region', { name: 'Publish warnings' });
  await expect(shown.getByRole('listitem')).toHaveText(warnings);
  expect(await read()).toMatchObject({ isActive: false, publishedVersion: null });
  await expectInert(page);
  await expectAccessible(page, 'workflow publish warnings');

  await shown.getByRole('button', { name: 'Publish anyway' }).click();
  await expect(page.getByRole('status').getByText('Published version 1.')).toBeVisible();
  await expect(shown).toHaveCount(0);
  expect(await read()).toMatchObject({ isActive: true, publishedVersion: 1, hasUnpublishedChanges: false });
  await expect(
    page.getByRole('row', { name: /Account list/ }).getByRole('cell', { name: 'active', exact: true }),
  ).toBeVisible();

  // A draft change (through the API) is published as version 2 after the warnings again.
  const w = await read();
  const changed = await s.call('PATCH', `/workflows/${id}`, {
    body: { description: 'changed', expectedDraftRevision: w.draftRevision },
  });
  expect(changed.status, changed.text).toBe(200);
  await page.reload();
  await page.getByRole('button', { name: 'Publish changes' }).click();
  await expect(shown.getByRole('listitem')).toHaveText(warnings);
  await shown.getByRole('button', { name: 'Publish anyway' }).click();
  await expect(page.getByRole('status').getByText('Published version 2.')).toBeVisible();
  expect(await read()).toMatchObject({ isActive: true, publishedVersion: 2, hasUnpublishedChanges: false });
  expect(await page.getByRole('button', { name: 'Publish changes' }).count()).toBe(0);

  await page.getByRole('button', { name: 'Deactivate' }).click();
  await expect(page.getByRole('button', { name: 'Publish', exact: true })).toBeVisible();
  expect(await read()).toMatchObject({ isActive: false });
});

test('Workflows: "Run now" runs the draft and shows the run with its step results and the webhook action delivered to the receiver', async ({
  adminPage: page,
  server: s,
  receiver,
}) => {
  const path = `/wf/${Date.now().toString(36)}`;
  const demo = await demoConnection(s);
  const created = await s.call('POST', '/workflows', {
    body: {
      name: 'Plan count to a webhook',
      triggerType: 'MANUAL',
      connectionId: demo.id,
      steps: [{ name: 'plans', query: 'SELECT count(*) AS plan_count FROM plans LIMIT 1' }],
      actions: [
        {
          type: 'WEBHOOK',
          order: 0,
          config: {
            version: 2,
            url: `${receiver.url}${path}`,
            method: 'POST',
            bodyMode: 'JSON',
            bodyTemplate: '{"rows": {{query_1.rows}}}',
            retry: { maxAttempts: 1, baseDelayMs: 100 },
          },
        },
      ],
    },
  });
  expect(created.status, created.text).toBe(201);
  const id = created.body.data.id as string;
  const plans = (
    await s.call('POST', `/connections/${demo.id}/query`, {
      body: { sql: 'SELECT count(*) AS plan_count FROM plans' },
    })
  ).body.data.rows[0].plan_count;

  await go(page, 'Workflows');
  await page.getByRole('link', { name: 'Plan count to a webhook' }).click();
  await page.getByRole('button', { name: 'Run now' }).click();
  const run = page.getByRole('list', { name: 'Runs' }).getByRole('listitem').first();
  await expect(run.getByText('SUCCESS', { exact: true }).first()).toBeVisible();
  await run.locator('summary', { hasText: 'Step results' }).click();
  const stepRows = run.getByRole('table', { name: 'Rows of step 1' });
  await expect(stepRows.getByRole('columnheader')).toHaveText(['plan_count']);
  await expect(stepRows.getByRole('cell')).toHaveText([String(plans)]);
  await run.locator('summary', { hasText: 'Action results' }).click();
  const delivery = run.getByRole('table', { name: 'Action results' }).getByRole('row').nth(1);
  await expect(delivery.getByRole('cell')).toHaveText([
    '1. WEBHOOK',
    'delivered',
    `${receiver.url}${path}`,
    '200',
    '1',
    '',
  ]);
  await expectAccessible(page, 'workflow run');

  // What the receiver got, and the stored run, agree with the page.
  const got = receiver.requests.filter((r) => r.url === path);
  expect(got).toHaveLength(1);
  expect(JSON.parse(got[0].body)).toEqual({ rows: [{ plan_count: plans }] });
  const runs = (await s.call('GET', `/workflows/${id}/runs`)).body.data;
  expect(runs).toHaveLength(1);
  expect(runs[0].status).toBe('SUCCESS');
});
