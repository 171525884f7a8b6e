import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { demoConnection, expect, expectAccessible, expectInert, go, HOSTILE, test } from './fixtures';

/**
 * Settings in Debian's chromium against the real local runtime: members (add with field errors from the
 * API, edit role and connections, a member key shown once, remove) and event webhooks (add with the
 * signing secret shown once and checked against a real signed delivery to the HTTPS receiver, the
 * delivery log, pause, rotate, delete). Every change is read back through the API; hostile names stay text.
 */
const suffix = randomBytes(4).toString('hex');

test('Settings → Members: add (API field errors beside the fields), edit role and connections, issue a key shown once, remove', async ({
  adminPage: page,
  server: s,
}) => {
  const demo = await demoConnection(s);
  const email = `ann-${suffix}@example.com`;
  const name = `Ann ${HOSTILE}`;
  const member = async () =>
    ((await s.call('GET', '/members?pageSize=100')).body.data as any[]).find((m) => m.email === email);

  await go(page, 'Settings');
  await page.locator('summary', { hasText: 'Add member' }).click();
  const add = page.getByRole('form', { name: 'Add member' });
  // The browser accepts "ann@localhost"; the API does not: its message appears beside the field.
  await add.getByLabel('Email').fill('ann@localhost');
  await add.getByLabel('Name').fill(name);
  await add.getByRole('button', { name: 'Add member' }).click();
  await expect(add.locator('#member-new-email-error')).toHaveText(/./);
  await expect(add.getByLabel('Email')).toHaveAttribute('aria-invalid', 'true');
  expect(await member()).toBeUndefined();

  await add.getByLabel('Email').fill(email);
  await add.getByRole('checkbox', { name: 'Demo SaaS (SQLite)' }).check();
  await add.getByRole('button', { name: 'Add member' }).click();
  const members = page.getByRole('region', { name: 'Members' });
  await expect(members.getByRole('cell', { name: email, exact: true })).toBeVisible();
  expect(await member()).toMatchObject({ name, role: 'member', connectionIds: [demo.id] });
  await expectInert(page);
  await expectAccessible(page, 'settings: members');

  // Edit: admin role, no connections.
  await members.getByRole('button', { name: `Edit member ${name}` }).click();
  const edit = page.getByRole('form', { name: `Edit member ${name}` });
  await edit.getByLabel('Role').selectOption('admin');
  await edit.getByRole('checkbox', { name: 'Demo SaaS (SQLite)' }).uncheck();
  await edit.getByLabel('Name').fill('Ann Admin');
  await edit.getByRole('button', { name: 'Save member' }).click();
  await expect(members.getByRole('cell', { name: 'Ann Admin', exact: true })).toBeVisible();
  expect(await member()).toMatchObject({ name: 'Ann Admin', role: 'admin', connectionIds: [] });
  // An empty name is refused by the API, shown beside the field, and nothing changes.
  await members.getByRole('button', { name: 'Edit member Ann Admin' }).click();
  const again = page.getByRole('form', { name: 'Edit member Ann Admin' });
  await again.getByLabel('Name').fill('   ');
  await again.getByRole('button', { name: 'Save member' }).click();
  await expect(again.getByRole('alert')).toContainText('VALIDATION_ERROR');
  await expect(again.getByLabel('Name')).toHaveAttribute('aria-invalid', 'true');
  expect((await member()).name).toBe('Ann Admin');
  await again.getByRole('button', { name: 'Cancel' }).click();

  // A key for the member: shown once, and it works as that member.
  await members.getByRole('button', { name: 'New key for Ann Admin' }).click();
  await page.getByLabel('Key name for Ann Admin').fill('ann laptop');
  await page.getByRole('button', { name: 'Create member key' }).click();
  const key = await page.getByLabel('The new API key for Ann Admin.').inputValue();
  expect(key).toMatch(/^lp_/);
  expect((await s.call('GET', '/members', { key })).status).toBe(200); // an admin now
  await page.reload();
  await expect(page.getByRole('heading', { level: 1, name: 'Settings' })).toBeVisible();
  expect(await page.getByLabel('The new API key for Ann Admin.').count()).toBe(0);
  expect(await page.locator(`input[value="${key}"]`).count()).toBe(0);

  // Remove, after an in-page confirmation: the member is gone and the key no longer works.
  await members.getByRole('button', { name: 'Remove member Ann Admin' }).click();
  await page.getByRole('button', { name: 'Cancel' }).click();
  expect(await member()).toBeDefined();
  await members.getByRole('button', { name: 'Remove member Ann Admin' }).click();
  await page.getByRole('button', { name: 'Yes, remove member' }).click();
  await expect(members.getByRole('cell', { name: 'Ann Admin', exact: true })).toHaveCount(0);
  expect(await member()).toBeUndefined();
  expect((await s.call('GET', '/', { key })).status).toBe(401);
});

test('Settings → Event webhooks: add (secret shown once, verified on a real signed delivery), test event and delivery log, pause, rotate, delete', async ({
  adminPage: page,
  server: s,
  receiver,
}) => {
  const url = `${receiver.url}/hooks/${suffix}`;
  const stored = async () =>
    ((await s.call('GET', '/webhooks?pageSize=100')).body.data as any[]).find((h) => h.url === url);
  const received = () => receiver.requests.filter((r) => r.url === `/hooks/${suffix}`);

  await go(page, 'Settings');
  const hooks = page.getByRole('region', { name: 'Event webhooks' });
  await hooks.locator('summary', { hasText: 'Add webhook' }).click();
  const add = page.getByRole('form', { name: 'Add webhook' });
  // A private address is refused by the API's destination rule: the message beside the URL, nothing stored.
  const before = (await s.call('GET', '/webhooks?pageSize=100')).body.data.length;
  await add.getByLabel('Endpoint URL (https)').fill('https://10.0.0.1/hook');
  await add.getByRole('checkbox', { name: 'webhook.test' }).check();
  await add.getByRole('button', { name: 'Add webhook' }).click();
  await expect(add.locator('#hook-url-error')).toHaveText(/./);
  expect((await s.call('GET', '/webhooks?pageSize=100')).body.data.length).toBe(before);

  await add.getByLabel('Endpoint URL (https)').fill(url);
  await add.getByRole('button', { name: 'Add webhook' }).click();
  const secret = await page.getByLabel('The webhook’s signing secret.').inputValue();
  expect(secret).toMatch(/^whsec_/);
  expect(await stored()).toMatchObject({ events: ['webhook.test'], isActive: true });
  expect((await stored()).secret).not.toBe(secret); // masked on reads
  await expectAccessible(page, 'settings: webhooks');

  // Shown once: after a reload only the masked form is on the page.
  await page.reload();
  await expect(hooks.getByRole('article', { name: `Webhook ${url}` })).toBeVisible();
  expect(await page.getByLabel('The webhook’s signing secret.').count()).toBe(0);
  expect(await page.content()).not.toContain(secret);

  // The test event reaches the receiver signed with that secret, and the delivery log shows it.
  const item = hooks.getByRole('article', { name: `Webhook ${url}` });
  await item.getByRole('button', { name: `Deliveries of ${url}` }).click();
  await item.getByRole('button', { name: 'Send test event' }).click();
  await expect(item.getByRole('status')).toHaveText('The test event was delivered.');
  const row = item.getByRole('row').filter({ hasText: 'webhook.test' });
  await expect(row.getByRole('cell', { name: 'SUCCESS', exact: true })).toBeVisible();
  await expect(row.getByRole('cell', { name: '200', exact: true })).toBeVisible();
  expect(received()).toHaveLength(1);
  const first = received()[0];
  const payload = new Webhook(secret).verify(first.body, first.headers as Record<string, string>) as any;
  expect(payload.type).toBe('webhook.test');

  // Pause: stored inactive.
  await item.getByRole('button', { name: `Pause ${url}` }).click();
  await expect(item.getByRole('button', { name: `Resume ${url}` })).toBeVisible();
  expect((await stored()).isActive).toBe(false);
  await item.getByRole('button', { name: `Resume ${url}` }).click();
  await expect(item.getByRole('button', { name: `Pause ${url}` })).toBeVisible();
  expect((await stored()).isActive).toBe(true);

  // Rotate: a new secret, shown once, signs the next delivery.
  await item.getByRole('button', { name: `Rotate the secret of ${url}` }).click();
  const rotated = await page.getByLabel(`The new signing secret for ${url}.`).inputValue();
  expect(rotated).toMatch(/^whsec_/);
  expect(rotated).not.toBe(secret);
  // The delivery log is still open: a second test event.
  await item.getByRole('button', { name: 'Send test event' }).click();
  await expect(item.getByRole('row').filter({ hasText: 'webhook.test' })).toHaveCount(2);
  await expect(item.getByRole('status')).toHaveText('The test event was delivered.');
  expect(received()).toHaveLength(2);
  const second = received()[1];
  expect(
    (new Webhook(rotated).verify(second.body, second.headers as Record<string, string>) as any).type,
  ).toBe('webhook.test');

  // Delete, after an in-page confirmation.
  await item.getByRole('button', { name: `Delete webhook ${url}` }).click();
  await page.getByRole('button', { name: 'Yes, delete webhook' }).click();
  await expect(hooks.getByRole('article', { name: `Webhook ${url}` })).toHaveCount(0);
  expect(await stored()).toBeUndefined();
  expect(await page.getByLabel(`The new signing secret for ${url}.`).count()).toBe(0);
});
