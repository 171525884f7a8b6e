import type { Locator, Page } from '@playwright/test';
import { demoConnection, expect, expectAccessible, expectInert, go, HOSTILE, test } from './fixtures';

/**
 * Workflows built in the console (Debian's chromium, the real local runtime with its demo SQLite
 * database, the local HTTPS receiver): a query step, a webhook action with a credential picked from the
 * list, a schedule with its time zone; saved, published after the warnings, run now (the receiver gets
 * the body and the credential's header), edited into a new version; hostile names and private webhook
 * addresses. Every state is read back through the API.
 */

const builder = (page: Page) => page.locator('form.builder');

async function newWorkflow(page: Page): Promise<Locator> {
  await go(page, 'Workflows');
  await page.getByRole('button', { name: 'New workflow' }).click();
  await expect(page.getByRole('heading', { name: 'New workflow' })).toBeVisible();
  return builder(page);
}

const step = (form: Locator, n: number) => form.getByRole('group', { name: `Step ${n}`, exact: true });
const action = (form: Locator, n: number) => form.getByRole('group', { name: `Action ${n}`, exact: true });

test('Workflows: built with a query step, a webhook action with a credential and a schedule; published, run now (the receiver gets the body), edited into version 2', async ({
  adminPage: page,
  server: s,
  receiver,
}) => {
  const demo = await demoConnection(s);
  const path = `/built/${Date.now().toString(36)}`;
  const plans = (
    await s.call('POST', `/connections/${demo.id}/query`, {
      body: { sql: 'SELECT count(*) AS plan_count FROM plans' },
    })
  ).body.data.rows[0].plan_count;
  const token = `tok-${Date.now().toString(36)}`;
  const credential = await s.call('POST', '/workflow-credentials', {
    body: { name: 'Receiver token', kind: 'BEARER', allowedHosts: [receiver.hostname], config: { token } },
  });
  expect(credential.status, credential.text).toBe(201);

  const form = await newWorkflow(page);
  await form.getByLabel('Name', { exact: true }).fill('Plans to the receiver');
  await step(form, 1).getByLabel('Step name').fill('plans');
  await step(form, 1).getByLabel('Connection').selectOption(demo.id);
  await step(form, 1)
    .getByRole('textbox', { name: 'SQL', exact: true })
    .fill('SELECT count(*) AS plan_count FROM plans LIMIT 1');
  await form.getByRole('button', { name: 'Add action' }).click();
  const hook = action(form, 1);
  await expect(hook.getByLabel('Action type')).toHaveValue('WEBHOOK');
  await hook.getByLabel('URL').fill(`${receiver.url}${path}`);
  await hook.getByLabel('Method').selectOption('POST');
  await hook
    .getByLabel('Body', { exact: true })
    .fill('{"plans": {{query_1.rows}}, "count": {{query_1.row_count}}}');
  await hook
    .getByLabel('Credential')
    .selectOption({ label: `Receiver token (BEARER; ${receiver.hostname})` });
  await form.getByLabel('On a schedule').check();
  await form.getByLabel('Repeat').selectOption('DAILY');
  await form.getByLabel('Time', { exact: true }).fill('09:30');
  await form.getByLabel('Timezone').fill('Europe/Paris');
  await expect(form.getByText('cron(30 9 * * ? *)')).toBeVisible();
  await expectAccessible(page, 'the workflow builder');
  await form.getByRole('button', { name: 'Save' }).click();

  // The page goes to the new workflow, an inactive draft; the API has exactly what was built.
  const detail = page.getByRole('region', { name: 'Plans to the receiver' });
  await expect(detail.getByText('Inactive draft')).toBeVisible();
  const list = (await s.call('GET', '/workflows?pageSize=100')).body.data as { id: string; name: string }[];
  const id = list.find((w) => w.name === 'Plans to the receiver')!.id;
  expect(page.url()).toContain(`#/workflows/${id}`);
  const read = async () => (await s.call('GET', `/workflows/${id}`)).body.data;
  const stored = await read();
  expect(stored).toMatchObject({
    name: 'Plans to the receiver',
    triggerType: 'SCHEDULE',
    isActive: false,
    publishedVersion: null,
    steps: [
      {
        name: 'plans',
        query: 'SELECT count(*) AS plan_count FROM plans LIMIT 1',
        connectionId: demo.id,
        order: 0,
      },
    ],
  });
  expect(JSON.parse(stored.triggerConfig)).toEqual({
    preset: 'DAILY',
    hour: 9,
    minute: 30,
    timezone: 'Europe/Paris',
  });
  expect(JSON.parse(stored.actions[0].config)).toMatchObject({
    version: 2,
    url: `${receiver.url}${path}`,
    method: 'POST',
    bodyMode: 'JSON',
    credentialId: credential.body.data.id,
  });
  await expect(detail.getByText('Every day at 09:30 (Europe/Paris)')).toBeVisible();

  // Publish: the API's warnings, then "Publish anyway".
  await detail.getByRole('button', { name: 'Publish', exact: true }).click();
  const warned = page.getByRole('region', { name: 'Publish warnings' });
  await expect(warned.getByRole('listitem').first()).toBeVisible();
  expect(await read()).toMatchObject({ isActive: false, publishedVersion: null });
  await warned.getByRole('button', { name: 'Publish anyway' }).click();
  await expect(page.getByRole('status').getByText('Published version 1.')).toBeVisible();
  expect(await read()).toMatchObject({ isActive: true, publishedVersion: 1, hasUnpublishedChanges: false });

  // Run now: the receiver gets the rendered body with the credential's bearer token.
  await detail.getByRole('button', { name: 'Run now' }).click();
  const run = page.getByRole('list', { name: 'Runs' }).getByRole('listitem').first();
  await expect(run.getByText('SUCCESS', { exact: true }).first()).toBeVisible();
  const got = receiver.requests.filter((r) => r.url === path);
  expect(got).toHaveLength(1);
  expect(JSON.parse(got[0].body)).toEqual({ plans: [{ plan_count: plans }], count: 1 });
  expect(got[0].headers.authorization).toBe(`Bearer ${token}`);
  await run.locator('summary', { hasText: 'Step results' }).click();
  await expect(run.getByRole('table', { name: 'Rows of step 1' }).getByRole('cell')).toHaveText([
    String(plans),
  ]);
  await run.locator('summary', { hasText: 'Action results' }).click();
  await expect(
    run.getByRole('table', { name: 'Action results' }).getByRole('row').nth(1).getByRole('cell'),
  ).toHaveText(['1. WEBHOOK', 'delivered', `${receiver.url}${path}`, '200', '1', '']);
  await expectAccessible(page, 'a built workflow with its run');

  // Edit the published workflow: a second step and an e-mail action; the draft changes, version 1 runs on.
  await detail.getByRole('button', { name: 'Edit', exact: true }).click();
  const edit = builder(page);
  await expect(edit.getByLabel('Name', { exact: true })).toHaveValue('Plans to the receiver');
  await expect(edit.locator('.sql-editor[data-ready]').first()).toBeVisible();
  await expect(step(edit, 1).getByRole('textbox', { name: 'SQL', exact: true })).toHaveText(
    'SELECT count(*) AS plan_count FROM plans LIMIT 1',
  );
  await expect(edit.getByLabel('Timezone')).toHaveValue('Europe/Paris');
  await edit.getByRole('button', { name: 'Add step' }).click();
  await expect(step(edit, 2).getByLabel('Connection')).toHaveValue(demo.id);
  await step(edit, 2)
    .getByRole('textbox', { name: 'SQL', exact: true })
    .fill('SELECT name FROM plans ORDER BY name LIMIT 3');
  await edit.getByRole('button', { name: 'Add action' }).click();
  await action(edit, 2).getByLabel('Action type').selectOption('EMAIL');
  await action(edit, 2)
    .getByLabel(/^Recipients/)
    .fill('ops@example.com, lead@example.com');
  await action(edit, 2).getByLabel('Subject').fill('Plans {{query_1.row_count}}');
  await expect(action(edit, 2).getByLabel('Attach the rows as CSV')).toBeChecked();
  await edit.getByRole('button', { name: 'Save' }).click();
  await expect(
    page.getByRole('status').getByText(/Saved as draft revision 2: “Publish changes” makes it version 2/),
  ).toBeVisible();
  const draft = await read();
  expect(draft).toMatchObject({
    isActive: true,
    publishedVersion: 1,
    hasUnpublishedChanges: true,
    draftRevision: 2,
  });
  expect(draft.steps).toHaveLength(2);
  expect(JSON.parse(draft.actions[1].config)).toMatchObject({
    to: ['ops@example.com', 'lead@example.com'],
    subject: 'Plans {{query_1.row_count}}',
    attachCsv: true,
  });
  // The webhook action's other settings came back unchanged.
  expect(JSON.parse(draft.actions[0].config)).toEqual(JSON.parse(stored.actions[0].config));
  await detail.getByRole('button', { name: 'Publish changes' }).click();
  await warned.getByRole('button', { name: 'Publish anyway' }).click();
  await expect(page.getByRole('status').getByText('Published version 2.')).toBeVisible();
  expect(await read()).toMatchObject({ isActive: true, publishedVersion: 2, hasUnpublishedChanges: false });
});

test('Workflows: markup in names stays text; private and loopback webhook addresses get the API’s message by the URL field', async ({
  adminPage: page,
  server: s,
}) => {
  const demo = await demoConnection(s);
  const form = await newWorkflow(page);
  const name = `Weekly ${HOSTILE}`;
  await form.getByLabel('Name', { exact: true }).fill(name);
  await step(form, 1).getByLabel('Step name').fill(`step ${HOSTILE}`);
  await step(form, 1).getByLabel('Connection').selectOption(demo.id);
  await step(form, 1)
    .getByRole('textbox', { name: 'SQL', exact: true })
    .fill('SELECT id FROM accounts LIMIT 5');
  await form.getByRole('button', { name: 'Add action' }).click();
  const url = action(form, 1).getByLabel('URL');
  for (const bad of [
    'https://127.0.0.1/hook',
    'https://10.1.2.3/hook',
    'https://[::1]/hook',
    'https://localhost/hook',
  ]) {
    await url.fill(bad);
    await form.getByRole('button', { name: 'Save' }).click();
    // The message the API gives for the same body, shown by the field (and the field marked invalid).
    const direct = await s.call('POST', '/workflows', {
      body: {
        name,
        triggerType: 'MANUAL',
        steps: [{ query: 'SELECT id FROM accounts LIMIT 5', connectionId: demo.id }],
        actions: [{ type: 'WEBHOOK', config: { version: 2, url: bad, method: 'POST', bodyMode: 'NONE' } }],
      },
    });
    expect(direct.status, bad).toBe(400);
    const message = (direct.body.error.details.issues as { path: string; message: string }[]).find(
      (i) => i.path === 'body.actions.0.config.url',
    )!.message;
    await expect(url).toHaveAttribute('aria-invalid', 'true');
    await expect(url).toHaveAccessibleDescription(message);
    await expect(url).toBeFocused();
  }
  // Nothing was created by the refused saves.
  const all = (await s.call('GET', '/workflows?pageSize=100')).body.data as { name: string }[];
  expect(all.filter((w) => w.name === name)).toHaveLength(0);
  await form.getByRole('button', { name: 'Remove action 1' }).click();
  await form.getByRole('button', { name: 'Save' }).click();
  const detail = page.getByRole('region', { name });
  await expect(detail.getByRole('heading', { level: 2 })).toHaveText(name);
  await expect(detail.getByText(`step ${HOSTILE}`)).toBeVisible();
  await expectInert(page);
  await expectAccessible(page, 'a workflow with hostile names');

  // A schedule the API refuses names its field: an unknown time zone.
  await detail.getByRole('button', { name: 'Edit', exact: true }).click();
  const edit = builder(page);
  await edit.getByLabel('On a schedule').check();
  await edit.getByLabel('Repeat').selectOption('EVERY_N_MINUTES');
  await edit.getByLabel(/^Minutes between runs/).fill('15');
  await edit.getByLabel('Timezone').fill('Mars/Olympus_Mons');
  await edit.getByRole('button', { name: 'Save' }).click();
  await expect(edit.getByLabel('Timezone')).toHaveAttribute('aria-invalid', 'true');
  await expect(edit.getByLabel('Timezone')).toHaveAccessibleDescription('not an IANA time zone');
  await edit.getByLabel('Timezone').fill('Asia/Tokyo');
  await edit.getByRole('button', { name: 'Save' }).click();
  await expect(detail.getByText('Every 15 minutes (Asia/Tokyo)')).toBeVisible();
  const id = (
    (await s.call('GET', '/workflows?pageSize=100')).body.data as { id: string; name: string }[]
  ).find((w) => w.name === name)!.id;
  const w = (await s.call('GET', `/workflows/${id}`)).body.data;
  expect(JSON.parse(w.triggerConfig)).toEqual({
    preset: 'EVERY_N_MINUTES',
    minutes: 15,
    timezone: 'Asia/Tokyo',
  });

  // Deleted after a confirmation in the page.
  await detail.getByRole('button', { name: 'Delete workflow' }).click();
  await page.getByRole('button', { name: 'Yes, delete workflow' }).click();
  await expect(page.getByRole('region', { name })).toHaveCount(0);
  expect((await s.call('GET', `/workflows/${id}`)).status).toBe(404);
});
