import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { placeSqlite } from '../support/connections';
import { expect, expectAccessible, HOSTILE, test } from './fixtures';

/**
 * The console's Chat page against the test model server: the answer is drawn while its SSE events arrive,
 * with its SQL and result table, and markup in the model's answer and in cell values stays text.
 */
test.use({ ai: true, demoData: false });

let dir: string;
let connectionId: string;

test.beforeAll(async ({ server, model }) => {
  dir = mkdtempSync(join(tmpdir(), 'loupe-console-chat-'));
  const file = join(dir, 'shop.db');
  const db = new DatabaseSync(file);
  db.exec('CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL)');
  db.prepare('INSERT INTO products VALUES (1, ?), (2, ?)').run('Lamp', HOSTILE);
  db.close();
  const c = await server.call('POST', '/connections', {
    body: { name: 'Shop', type: 'SQLITE', database: placeSqlite(server, file) },
  });
  expect(c.status, c.text).toBe(201);
  connectionId = c.body.data.id;
  model.script({ content: 'Shop database: products.' });
  expect((await server.call('POST', `/connections/${connectionId}/test`)).body.data.success).toBe(true);
});
test.afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('streams the answer with its SQL and result table; markup in the answer and in cells is text', async ({
  adminPage: page,
  model,
}) => {
  const sql = 'SELECT id, name FROM products ORDER BY id';
  const answer = `Two products: Lamp and ${HOSTILE} — see **the table**.`;
  model.script(
    { toolCalls: [{ name: 'run_query', arguments: { sql } }] },
    { content: answer, chunkDelayMs: 150 },
  );
  await page.getByRole('navigation').getByRole('link', { name: 'Chat', exact: true }).click();
  await page.getByLabel('Connection').selectOption(connectionId);
  await page.getByLabel('Question').fill('Which products are there?');
  await page.getByRole('button', { name: 'Ask' }).click();
  const article = page.getByRole('article', { name: 'Answer' });
  // Part of the answer is on the page while the stream is still open.
  await expect
    .poll(
      async () => {
        const busy = await article.getAttribute('aria-busy');
        const text = (await article.locator('.markdown').textContent()) ?? '';
        return busy === 'true' && text.length > 0 && text.length < answer.length;
      },
      { intervals: [50] },
    )
    .toBe(true);
  await expect(article).toHaveAttribute('aria-busy', 'false');
  expect(await article.locator('.markdown').textContent()).toBe(
    `Two products: Lamp and ${HOSTILE} — see the table.`,
  );
  expect(await article.locator('strong').textContent()).toBe('the table');
  expect(await article.locator('figure pre').textContent()).toBe(sql);
  const table = article.getByRole('table', { name: 'Answer data' });
  expect(await table.getByRole('columnheader').allTextContents()).toEqual(['id', 'name']);
  expect(await table.getByRole('cell', { name: HOSTILE, exact: true }).count()).toBe(1);
  expect(await page.locator('#pwn-img, #pwn-script, img').count()).toBe(0);
  // The conversation is listed and reopens with its turns.
  await page.getByRole('region', { name: 'Conversations' }).getByRole('button').first().waitFor();
  await expectAccessible(page, 'chat');
  // The page fixture then checks the title is not 'pwned' and that nothing went wrong on the page.
});
