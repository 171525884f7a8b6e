import { randomBytes } from 'node:crypto';
import type { Page } from '@playwright/test';
import {
  createConnection,
  createPostgresDatabase,
  postgresAdmin,
  postgresConnection,
} from '../support/connections';
import { demoConnection, expect, expectAccessible, go, test } from './fixtures';

/** Opens a connection from the list and waits for its detail. */
async function open(page: Page, name: string) {
  await page.getByRole('link', { name, exact: true }).click();
  await expect(page.getByRole('heading', { level: 2, name })).toBeVisible();
}

/** The page is no wider than the window (nothing sticks out sideways). */
async function fitsWidth(page: Page) {
  const { scroll, inner } = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth,
    inner: window.innerWidth,
  }));
  expect(scroll, 'no sideways scrolling').toBeLessThanOrEqual(inner);
}

/**
 * Issue 43 in Debian's chromium, on the run's embedded PostgreSQL: a connection whose role reaches no
 * escape shows "Open mode"; one whose database has dblink (installed by the admin, EXECUTE for PUBLIC)
 * shows "Strict mode" naming dblink, with its REVOKE statements in a copyable block. Running the copied
 * statements as the admin and "Check again" shows "Open mode" without a restart; a GRANT back shows
 * "Strict mode" again after "Test connection". A check that fails says why in words; an inactive
 * connection says it is inactive. A SQLite connection has no read safety section.
 */
test('Read safety: open mode, strict mode naming dblink with its REVOKE; after the REVOKE, "Check again" shows open mode', async ({
  adminPage: page,
  server: s,
  postgres,
}, testInfo) => {
  const tag = randomBytes(3).toString('hex');
  const OPEN = `rs_open_${tag}`;
  const STRICT = `rs_strict_${tag}`;
  await createPostgresDatabase(postgres, OPEN);
  await createPostgresDatabase(postgres, STRICT);
  await postgresAdmin(postgres, STRICT, 'CREATE EXTENSION dblink');
  const openName = `pg no escape ${tag}`;
  const strictName = `pg with dblink ${tag}`;
  const wrongName = `pg wrong password ${tag}`;
  const ids = [
    await createConnection(s, postgresConnection(postgres, { database: OPEN, name: openName })),
    await createConnection(s, postgresConnection(postgres, { database: STRICT, name: strictName })),
    await createConnection(
      s,
      postgresConnection(postgres, { name: wrongName, password: 'not-the-password' }),
    ),
  ];
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
  try {
    await go(page, 'Connections');
    const safety = page.getByRole('region', { name: 'Read safety' });

    // A role that reaches no escape: open mode, in words, with no list of escapes.
    await open(page, openName);
    await expect(safety.getByText('Open mode', { exact: true })).toBeVisible();
    await expect(safety).toContainText('reaches no escape');
    await expect(safety.getByRole('list')).toHaveCount(0);
    await expect(safety.getByRole('button', { name: 'Check again' })).toBeVisible();

    // dblink installed with EXECUTE for PUBLIC: strict mode, naming it, with its REVOKE statements.
    await open(page, strictName);
    await expect(safety.getByText('Strict mode', { exact: true })).toBeVisible();
    const dblink = safety.getByRole('listitem').filter({ hasText: 'dblink' });
    await expect(dblink).toHaveCount(1);
    await expect(dblink).toContainText('Extension');
    const code = safety.locator('pre');
    await expect(code).toContainText(
      /^REVOKE EXECUTE ON FUNCTION .*dblink_exec\(text,text\).* FROM PUBLIC;$/m,
    );
    expect(await page.getByRole('alert').count()).toBe(0);
    await expectAccessible(page, 'read safety in strict mode');

    // How it reads: wide and on a phone (the statements wrap, nothing sticks out).
    await safety.scrollIntoViewIfNeeded();
    await page.screenshot({ path: testInfo.outputPath('read-safety-1280.png'), fullPage: true });
    await safety.screenshot({ path: testInfo.outputPath('read-safety-section-1280.png') });
    await page.setViewportSize({ width: 390, height: 844 });
    await fitsWidth(page);
    await safety.screenshot({ path: testInfo.outputPath('read-safety-390.png') });
    await page.setViewportSize({ width: 1280, height: 900 });

    // "Copy statements" puts the block on the clipboard; the admin runs it as it is.
    await safety.getByRole('button', { name: 'Copy statements' }).click();
    await expect(safety.getByRole('status')).toHaveText('Copied.');
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    expect(copied).toBe(await code.textContent());
    await postgresAdmin(postgres, STRICT, copied);

    // Found anew: open mode at once, no restart.
    await safety.getByRole('button', { name: 'Check again' }).click();
    await expect(safety.getByText('Open mode', { exact: true })).toBeVisible();
    await expect(safety.getByRole('list')).toHaveCount(0);
    expect((await s.call('GET', `/connections/${ids[1]}/read-safety`)).body.data.mode).toBe('open');
    await safety.screenshot({ path: testInfo.outputPath('read-safety-open-1280.png') });

    // A GRANT reopens the escape; a successful "Test connection" shows the mode it found.
    await postgresAdmin(postgres, STRICT, 'GRANT EXECUTE ON FUNCTION dblink_exec(text, text) TO PUBLIC');
    await page.getByRole('button', { name: 'Test connection' }).click();
    await expect(page.getByRole('status').getByText(/^Connected/)).toBeVisible();
    await expect(safety.getByText('Strict mode', { exact: true })).toBeVisible();
    await expect(safety.getByRole('listitem').filter({ hasText: 'dblink' })).toHaveCount(1);

    // A role that cannot sign in: why the check failed, in words (no code); inactive after a failed test.
    await open(page, wrongName);
    // On opening the page, a note (the connections page shows no alert before a test); asked again, an alert.
    await expect(safety).toContainText('Read safety could not be checked.');
    await expect(safety.getByRole('alert')).toHaveCount(0);
    await safety.getByRole('button', { name: 'Check again' }).click();
    const failed = safety.getByRole('alert');
    await expect(failed).toContainText('Read safety could not be checked.');
    await expect(failed).toContainText('password authentication failed');
    await expect(failed).toContainText('“Test connection” shows what to fix.');
    expect(await failed.textContent()).not.toMatch(/[A-Z]+_[A-Z_]+/);
    await safety.screenshot({ path: testInfo.outputPath('read-safety-failed-1280.png') });
    await page.getByRole('button', { name: 'Test connection' }).click();
    await expect(safety).toContainText('The connection is inactive');
    await expect(safety.getByRole('alert')).toHaveCount(0);

    // Other database types have no read safety section.
    const demo = await demoConnection(s);
    await open(page, demo.name);
    await expect(page.getByRole('heading', { name: 'Schema', level: 3 })).toBeVisible();
    await expect(safety).toHaveCount(0);
  } finally {
    for (const id of ids) await s.call('DELETE', `/connections/${id}`);
    for (const db of [OPEN, STRICT])
      await postgresAdmin(postgres, postgres.database, `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
  }
});
