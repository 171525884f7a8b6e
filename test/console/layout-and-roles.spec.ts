import { randomBytes } from 'node:crypto';
import type { Page, TestInfo } from '@playwright/test';
import {
  createConnection,
  openTestDatabases,
  postgresConnection,
  type TestDatabases,
} from '../support/connections';
import type { TestServer } from '../support/server';
import { addMember, demoConnection, expect, expectAccessible, go, signIn, test } from './fixtures';

/**
 * Roles and small screens in Debian's chromium against the real local runtime: a member is not offered the
 * admin-only forms (connection create/edit, keys, members, webhooks) the API would refuse; a key without
 * the `connections` scope is told why its connection list is empty; and every page, with 200-character
 * values without spaces in it (connection name, dashboard title, pending SQL, saved query, workflow),
 * fits a 390 px phone and a 1280 px window without scrolling the page sideways.
 */
const suffix = randomBytes(4).toString('hex');
const T = `layout_${suffix}`;
const LONG = (what: string, length = 200) => `${what}_${suffix}_`.padEnd(length, 'x');

let dbs: TestDatabases;

/** A member of the organization (assigned the demo connection) and a key that acts as it. */
async function memberKey(s: TestServer, name: string): Promise<string> {
  const demo = await demoConnection(s);
  return (
    await addMember(s, {
      email: `${name}-${suffix}@example.com`,
      name: `${name} ${suffix}`,
      connectionIds: [demo.id],
    })
  ).key;
}

/** The page has finished asking the API (so an absent form is absent, not merely not loaded yet). */
const settled = (page: Page) => page.waitForLoadState('networkidle');

test('a member sees no admin-only forms: Connections without New/Edit connection, Settings with a note instead of keys, members and webhooks', async ({
  page,
  server: s,
}) => {
  await signIn(page, await memberKey(s, 'mia'));
  await go(page, 'Connections');
  await page.getByRole('link', { name: 'Demo SaaS (SQLite)' }).click();
  await expect(page.getByRole('heading', { level: 2, name: 'Demo SaaS (SQLite)' })).toBeVisible();
  await expect(page.getByRole('button', { name: 'Test connection' })).toBeVisible(); // what a member may do
  await settled(page);
  await expect(page.locator('summary', { hasText: /New connection|Edit connection/ })).toHaveCount(0);
  await expect(page.getByRole('button', { name: /Create connection|Save connection/ })).toHaveCount(0);
  await expect(page.getByRole('alert')).toHaveCount(0);
  await expectAccessible(page, 'connections as a member');

  await go(page, 'Settings');
  await expect(page.getByText('Settings are managed by admins')).toBeVisible();
  await settled(page);
  await expect(page.getByRole('button', { name: 'Create key' })).toHaveCount(0);
  await expect(page.locator('summary', { hasText: /Add member|Add webhook/ })).toHaveCount(0);
  await expect(page.getByRole('heading', { name: /API keys|Members|Event webhooks/ })).toHaveCount(0);
  await expect(page.getByRole('alert')).toHaveCount(0);
  await expectAccessible(page, 'settings as a member');
});

test('an admin still gets the connection forms and every Settings section', async ({ adminPage: page }) => {
  await go(page, 'Connections');
  await expect(page.locator('summary', { hasText: 'New connection' })).toBeVisible();
  await page.getByRole('link', { name: 'Demo SaaS (SQLite)' }).click();
  await expect(page.locator('summary', { hasText: 'Edit connection' })).toBeVisible();
  await go(page, 'Settings');
  await expect(page.getByRole('button', { name: 'Create key' })).toBeVisible();
  await expect(page.locator('summary', { hasText: 'Add member' })).toBeVisible();
  await expect(page.getByText('Settings are managed by admins')).toHaveCount(0);
});

test('a key without the connections scope is told why the connection list is empty (Query and Chat)', async ({
  page,
  server: s,
}) => {
  const k = await s.call('POST', '/keys', { body: { name: `dash-only-${suffix}`, scopes: ['dashboards'] } });
  expect(k.status, k.text).toBe(201);
  const key = k.body.data.key as string;
  const refused = await s.call('GET', '/connections', { key });
  expect(refused.status).toBe(403);
  const message = refused.body.error.message as string;
  expect(message).toBeTruthy();

  await signIn(page, key);
  for (const where of ['Query', 'Chat']) {
    await go(page, where);
    const alert = page.getByRole('alert').filter({ hasText: message });
    await expect(alert).toBeVisible();
    await expect(alert).toContainText('FORBIDDEN');
    // The select says where its emptiness comes from.
    await expect(page.getByLabel('Connection', { exact: true })).toHaveAccessibleDescription(/FORBIDDEN/);
    await expectAccessible(page, `${where} without the connections scope`);
  }
});

test.describe('long values on a phone and a desktop window', () => {
  const ids = { connection: '', dashboard: '', workflow: '' };

  test.beforeAll(async ({ server: s, postgres }) => {
    dbs = await openTestDatabases(postgres, null, 'unused.sqlite');
    await dbs.pg.query(`CREATE TABLE ${T} (id int PRIMARY KEY, label text)`);
    ids.connection = await createConnection(
      s,
      postgresConnection(postgres, { name: LONG('connection'), readOnly: false }),
    );
    // A pending approval whose SQL is one long line.
    const submitted = await s.call('POST', '/queries/submit', {
      body: {
        connectionId: ids.connection,
        query: `UPDATE ${T} SET label = '${LONG('label')}' WHERE id = 1`,
      },
    });
    expect(submitted.status, submitted.text).toBe(202);

    // A dashboard with a long title holding copies of the demo dashboard's widgets.
    const dashboards = (await s.call('GET', '/dashboards?pageSize=100')).body.data as {
      id: string;
      title: string;
    }[];
    const demo = dashboards.find((d) => d.title === 'Demo SaaS metrics');
    expect(demo, 'the demo dashboard').toBeDefined();
    const widgets = (await s.call('GET', `/dashboards/${demo!.id}`)).body.data.widgets as Record<
      string,
      unknown
    >[];
    expect(widgets.length).toBeGreaterThan(0);
    const d = await s.call('POST', '/dashboards', { body: { title: LONG('dashboard') } });
    expect(d.status, d.text).toBe(201);
    ids.dashboard = d.body.data.id;
    for (const w of widgets) {
      const { type, title, query, connectionId, config, width, height, position } = w;
      const r = await s.call('POST', `/dashboards/${ids.dashboard}/widgets`, {
        body: {
          type,
          title,
          query: query ?? undefined,
          connectionId: connectionId ?? undefined,
          config,
          width,
          height,
          position,
        },
      });
      expect(r.status, r.text).toBe(201);
    }
    const demoConn = await demoConnection(s);
    const longSql = `SELECT '${LONG('value')}' AS ${LONG('column').slice(0, 60)}, count(*) AS n FROM accounts`;
    const sq = await s.call('POST', '/saved-queries', {
      body: { name: LONG('saved', 120), query: longSql, connectionId: demoConn.id },
    });
    expect(sq.status, sq.text).toBe(201);
    const wf = await s.call('POST', '/workflows', {
      body: {
        name: LONG('workflow'),
        triggerType: 'MANUAL',
        connectionId: demoConn.id,
        steps: [{ name: LONG('step'), query: longSql }],
      },
    });
    expect(wf.status, wf.text).toBe(201);
    ids.workflow = wf.body.data.id;
    // A member with a long name and a long email, and a key with a long name (Settings).
    const member = await s.call('POST', '/members', {
      body: {
        email: `${LONG('email', 120)}@example.com`,
        name: LONG('member'),
        connectionIds: [ids.connection],
      },
    });
    expect(member.status, member.text).toBe(201);
    const key = await s.call('POST', `/members/${member.body.data.id}/keys`, {
      body: { name: LONG('key', 100) },
    });
    expect(key.status, key.text).toBe(201);
    const run = await s.call('POST', `/workflows/${ids.workflow}/run`);
    expect(run.status, run.text).toBeLessThan(300);
  });
  test.afterAll(async () => {
    await dbs?.close(T);
  });

  /** The page does not scroll sideways: nothing is wider than the window. */
  async function expectFits(page: Page, info: TestInfo, where: string) {
    await settled(page);
    const { scrollWidth, innerWidth } = await page.evaluate(() => {
      const w = globalThis as any;
      return {
        scrollWidth: w.document.documentElement.scrollWidth as number,
        innerWidth: w.innerWidth as number,
      };
    });
    await page.screenshot({ path: info.outputPath(`${innerWidth}-${where}.png`), fullPage: true });
    expect(scrollWidth, `${where} at ${innerWidth} px: no horizontal page scroll`).toBeLessThanOrEqual(
      innerWidth,
    );
  }
  const open = async (page: Page, hash: string, heading: string | RegExp) => {
    await page.evaluate((h) => {
      (globalThis as any).location.hash = h;
    }, hash);
    await expect(page.getByRole('heading', { level: 1, name: heading })).toBeVisible();
  };

  for (const [width, height] of [
    [390, 844],
    [1280, 900],
  ]) {
    test(`every page fits ${width} px with 200-character values`, async ({ adminPage: page }, info) => {
      await page.setViewportSize({ width, height });

      await open(page, `#/connections/${ids.connection}`, 'Connections');
      const name = LONG('connection');
      await expect(page.getByRole('heading', { level: 2, name })).toBeVisible();
      await expectFits(page, info, 'connections');
      // Still a table to assistive technology, whatever the layout.
      const list = page.getByRole('region', { name: 'Connection list' });
      await expect(list.getByRole('table').getByRole('cell', { name })).toBeVisible();
      await expect(list.getByRole('columnheader', { name: 'Health' })).toBeVisible();
      // The long name stays inside the list's column: it does not run under the detail panel.
      const listBox = (await list.boundingBox())!;
      const link = (await page.getByRole('link', { name }).boundingBox())!;
      expect(link.x + link.width).toBeLessThanOrEqual(listBox.x + listBox.width + 1);

      await open(page, '#/query', 'Query');
      await page.getByLabel('Connection', { exact: true }).selectOption(ids.connection);
      await expectFits(page, info, 'query');

      await open(page, '#/chat', 'Chat');
      await expectFits(page, info, 'chat');

      await open(page, '#/dashboards', 'Dashboards');
      await expect(page.getByRole('link', { name: LONG('dashboard') })).toBeVisible();
      await expectFits(page, info, 'dashboards');

      await open(page, `#/dashboards/${ids.dashboard}`, LONG('dashboard'));
      await expect(page.getByRole('region').first()).toBeVisible();
      await expect(page.locator('[aria-busy="true"]')).toHaveCount(0);
      await expectFits(page, info, 'dashboard');
      // On a phone every widget takes the whole row.
      if (width < 700) {
        const main = (await page.locator('main').boundingBox())!;
        for (const w of await page.locator('.widget').all()) {
          const box = (await w.boundingBox())!;
          expect(box.width).toBeGreaterThan(main.width * 0.8);
        }
      }

      await open(page, '#/saved-queries', 'Saved queries');
      await expect(page.getByRole('heading', { level: 2, name: LONG('saved', 120) })).toBeVisible();
      await page.getByRole('button', { name: `Run ${LONG('saved', 120)}` }).click();
      await expect(page.getByRole('table').last()).toBeVisible();
      await expectFits(page, info, 'saved-queries');

      await open(page, `#/workflows/${ids.workflow}`, 'Workflows');
      await expect(page.getByRole('heading', { level: 2, name: LONG('workflow') })).toBeVisible();
      const steps = page.locator('summary', { hasText: 'Step results' }).first();
      await expect(steps).toBeVisible();
      await steps.click();
      await expectFits(page, info, 'workflows');

      await open(page, '#/approvals', 'Approvals');
      await expect(page.getByText(LONG('label')).first()).toBeVisible();
      await expectFits(page, info, 'approvals');

      await open(page, '#/settings', 'Settings');
      await expect(page.getByRole('button', { name: 'Create key' })).toBeVisible();
      await expectFits(page, info, 'settings');
      await expectAccessible(page, `settings at ${width} px`);
    });
  }
});
