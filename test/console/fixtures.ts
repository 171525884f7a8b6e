import { test as base, expect, type Page } from '@playwright/test';
import { recordProblems, seriousViolations, signIn } from '../support/browser';
import { openTestDatabases, type TestDatabases } from '../support/connections';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai';
import type { DbInfo } from '../support/global-setup';
import { type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver';
import { startTestServer, type TestServer } from '../support/server';
import { POSTGRES_ENV } from './global-setup';

/**
 * Fixtures of the console's browser specs (`test/console/*.spec.ts`, run by `playwright test`). A spec
 * imports `test` and `expect` from here:
 *
 * - `server` (per worker): the real local runtime in the worker's process (test/support/server.ts) with
 *   demo data (`test.use({ demoData: false })` turns it off) and an admin key (`server.adminKey`); its
 *   provider is the test model server `model` when the spec says `test.use({ ai: true })`, and no
 *   provider otherwise (Chat answers 503 AI_NOT_CONFIGURED).
 * - `receiver` (per worker): a real HTTPS receiver on a loopback address (test/support/https-receiver.ts)
 *   that the runtime may deliver to (its hostname is in the runtime's LOUPE_OUTBOUND_TEST_HOSTS).
 * - `postgres` (per worker): how to reach the run's embedded PostgreSQL (test/console/global-setup.ts).
 * - `origin`: the console's URL (`${origin}/#/dashboards/…`).
 * - `page`: a fresh browser context on the console's sign-in page. When the test ends it asserts that no
 *   uncaught page error, CSP violation or dialog happened and that no injected script set the title.
 * - `adminPage`: that page, signed in as the admin with the keyboard.
 * - A test that fails gets the lines the runtime logged (its start announcements, such as a demo data
 *   failure) attached to its report as `runtime.log`.
 *
 * The runtime configures its process like a Lambda instance, so a worker serves one runtime: specs with
 * different options run in different workers.
 */
interface WorkerFixtures {
  demoData: boolean;
  ai: boolean;
  postgres: DbInfo;
  model: FakeOpenAI;
  receiver: HttpsReceiver;
  server: TestServer;
  origin: string;
}

interface TestFixtures {
  adminPage: Page;
  runtimeLogs: undefined;
}

const SETUP = { timeout: 120_000 };

export const test = base.extend<TestFixtures, WorkerFixtures>({
  demoData: [true, { scope: 'worker', option: true }],
  ai: [false, { scope: 'worker', option: true }],
  postgres: [
    // biome-ignore lint/correctness/noEmptyPattern: Playwright reads the fixtures a fixture needs from its first parameter
    async ({}, use) => {
      const json = process.env[POSTGRES_ENV];
      if (!json) throw new Error(`${POSTGRES_ENV} is not set: run the specs with playwright test`);
      await use(JSON.parse(json) as DbInfo);
    },
    { scope: 'worker' },
  ],
  model: [
    // biome-ignore lint/correctness/noEmptyPattern: as above
    async ({}, use) => {
      const model = await startFakeOpenAI();
      await use(model);
      await model.stop();
    },
    { scope: 'worker', ...SETUP },
  ],
  receiver: [
    // biome-ignore lint/correctness/noEmptyPattern: as above
    async ({}, use) => {
      const receiver = await startHttpsReceiver();
      await use(receiver);
      await receiver.close();
    },
    { scope: 'worker', ...SETUP },
  ],
  server: [
    async ({ demoData, ai, model, receiver }, use) => {
      // Said either way: the runtime turns demo data on by default outside vitest.
      const env: Record<string, string> = {
        LOUPE_DEMO_DATA: String(demoData),
        LOUPE_OUTBOUND_TEST_HOSTS: receiver.testHostEntry,
      };
      if (ai)
        Object.assign(env, {
          OPENAI_API_KEY: model.apiKey,
          OPENAI_BASE_URL: model.url,
          LOUPE_MODEL: 'test-model',
        });
      const server = await startTestServer({ env });
      await use(server);
      await server.stop();
    },
    { scope: 'worker', ...SETUP },
  ],
  origin: [async ({ server }, use) => use(server.url.replace(/\/v1$/, '')), { scope: 'worker' }],
  page: async ({ page, origin }, use) => {
    const problems = recordProblems(page);
    await page.goto(`${origin}/`);
    await use(page);
    expect(problems, 'no page errors, CSP violations or dialogs').toEqual([]);
    expect(await page.title(), 'no injected script ran').not.toBe('pwned');
  },
  adminPage: async ({ page, server }, use) => {
    await signIn(page, server.adminKey);
    await use(page);
  },
  runtimeLogs: [
    async ({ server }, use, testInfo) => {
      await use(undefined);
      if (testInfo.status !== testInfo.expectedStatus)
        await testInfo.attach('runtime.log', { body: server.logs.join('\n'), contentType: 'text/plain' });
    },
    { auto: true },
  ],
});

export { signIn, tabTo } from '../support/browser';
export { expect };

/** Markup that would change the page if it were ever parsed as HTML (the CSP would also stop the script). */
export const HOSTILE = `<img src=x id=pwn-img onerror="document.title='pwned'"><script id="pwn-script">document.title='pwned'</script>`;

/** Follows a navigation link and waits for the page's heading. */
export async function go(page: Page, link: string): Promise<void> {
  await page.getByRole('navigation').getByRole('link', { name: link, exact: true }).click();
  await expect(page.getByRole('heading', { level: 1, name: link })).toBeVisible();
}

/** The markup was never turned into elements: no injected img or script in the document. */
export async function expectInert(page: Page): Promise<void> {
  expect(await page.locator('#pwn-img, #pwn-script, img').count()).toBe(0);
}

/** axe-core on the current page finds no serious or critical violation. */
export async function expectAccessible(page: Page, where: string): Promise<void> {
  expect(await seriousViolations(page), `accessibility of ${where}`).toEqual([]);
}

/** The demo organization's SQLite connection ("Demo SaaS (SQLite)", created when demo data is on). */
export async function demoConnection(server: TestServer): Promise<{ id: string; name: string }> {
  const all = (await server.call('GET', '/connections?pageSize=100')).body.data as {
    id: string;
    name: string;
  }[];
  const demo = all.find((c) => c.name === 'Demo SaaS (SQLite)');
  if (!demo) throw new Error('no demo connection: is demo data on?');
  return demo;
}

/** A statement of specTables: its SQL, or its SQL with the values of its `$1`… placeholders. */
type Statement = string | [sql: string, values: unknown[]];

/**
 * A spec's own tables in the run's embedded PostgreSQL. Called at the top of a spec (before its own
 * hooks), it adds two hooks: before the spec's tests the `statements` run in order (CREATE TABLE, INSERT);
 * after them the `tables` are dropped and the session ends. The answer is the open databases (`pg` for the
 * tests' own statements, `query('POSTGRES', …)` to read rows back) from that first hook on.
 */
export function specTables(tables: string[], statements: Statement[]): TestDatabases {
  // Filled in by the hook: the spec holds this object from the start.
  const dbs = {} as TestDatabases;
  test.beforeAll(async ({ postgres }) => {
    Object.assign(dbs, await openTestDatabases(postgres, null, 'unused.sqlite'));
    for (const st of statements) await (typeof st === 'string' ? dbs.pg.query(st) : dbs.pg.query(...st));
  });
  test.afterAll(async () => {
    if (!dbs.pg) return;
    for (const t of tables.slice(1)) await dbs.pg.query(`DROP TABLE IF EXISTS ${t}`);
    await dbs.close(tables[0]);
  });
  return dbs;
}

/** Adds a member through the API (asserting 201) and issues a key that acts as it. */
export async function addMember(
  server: TestServer,
  body: { email: string; name: string; role?: 'admin' | 'member'; connectionIds?: string[] },
): Promise<{ id: string; key: string }> {
  const m = await server.call('POST', '/members', { body });
  expect(m.status, m.text).toBe(201);
  const k = await server.call('POST', `/members/${m.body.data.id}/keys`, { body: { name: body.name } });
  expect(k.status, k.text).toBe(201);
  return { id: m.body.data.id, key: k.body.data.key };
}
