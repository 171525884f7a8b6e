import { randomBytes } from 'node:crypto';
import { addMember, demoConnection, expect, go, signIn, test } from './fixtures';

/**
 * Choices the console makes for the user (issue 45): a new API key offers its scopes as checkboxes (all
 * checked) and is created with the ones left checked; the only connection a user may use is preselected.
 */
const suffix = randomBytes(4).toString('hex');

test('Settings → API keys: the new key gets exactly the scopes left checked', async ({
  adminPage: page,
  server: s,
}) => {
  const name = `scoped ${suffix}`;
  await go(page, 'Settings');
  const section = page.getByRole('region', { name: 'API keys' });
  const scopes = section.getByRole('group', { name: 'Scopes of the new key' });
  // Every scope the admin key holds is offered, checked.
  await expect(scopes.getByRole('checkbox')).toHaveCount(9);
  for (const box of await scopes.getByRole('checkbox').all()) await expect(box).toBeChecked();
  await section.getByLabel('New key name').fill(name);
  await scopes.getByRole('checkbox', { name: 'Webhooks' }).uncheck();
  await section.getByRole('button', { name: 'Create key' }).click();
  await expect(page.getByLabel('The new API key.')).toHaveValue(/^lp_/);
  const key = ((await s.call('GET', '/keys?pageSize=100')).body.data as any[]).find((k) => k.name === name);
  expect(JSON.parse(key.scopes).sort()).toEqual(
    [
      'query',
      'chat',
      'connections',
      'dashboards',
      'workflows',
      'workflow_credentials',
      'usage',
      'admin',
    ].sort(),
  );
  // The boxes are checked again for the next key.
  await expect(scopes.getByRole('checkbox', { name: 'Webhooks' })).toBeChecked();
});

test('Query: the only connection the user may use is selected on first open', async ({ page, server: s }) => {
  const demo = await demoConnection(s);
  const member = await addMember(s, {
    email: `solo-${suffix}@example.com`,
    name: `Solo ${suffix}`,
    connectionIds: [demo.id],
  });
  await signIn(page, member.key);
  await go(page, 'Query');
  const select = page.getByLabel('Connection');
  await expect(select).toHaveValue(demo.id);
  await expect(select.locator('option:checked')).toHaveText(/Demo SaaS \(SQLite\)/);
});
