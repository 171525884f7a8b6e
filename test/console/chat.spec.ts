import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { Page } from '@playwright/test';
import { placeSqlite } from '../support/connections';
import type { TestServer } from '../support/server';
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

test('reopening a conversation shows each turn (question, answer, SQL, result) and restores its connection', async ({
  adminPage: page,
  server,
  model,
}) => {
  const sql = 'SELECT id, name FROM products WHERE id = 1';
  const question = `Which product has id 1? ${Date.now()}`;
  model.script({ toolCalls: [{ name: 'run_query', arguments: { sql } }] }, { content: 'It is **Lamp**.' });
  const first = await server.call('POST', '/chat', { body: { message: question, connectionId } });
  expect(first.status, first.text).toBe(200);
  const conversationId = first.body.data.conversationId as string;
  model.script({ content: 'No SQL needed: there are two products.' });
  const second = await server.call('POST', '/chat', {
    body: { message: 'And how many in all?', conversationId },
  });
  expect(second.status, second.text).toBe(200);

  await page.getByRole('navigation').getByRole('link', { name: 'Chat', exact: true }).click();
  // Another connection choice (none) is selected before reopening (the only connection comes preselected).
  await expect(page.getByLabel('Connection')).not.toHaveValue('');
  await page.getByLabel('Connection').selectOption('');
  await expect(page.getByLabel('Connection')).toHaveValue('');
  await page.getByRole('region', { name: 'Conversations' }).getByRole('button', { name: question }).click();
  const answers = page.getByRole('article', { name: 'Answer' });
  await expect(answers).toHaveCount(2);
  await expect(page.locator('.turns .question')).toHaveText([question, 'And how many in all?']);
  await expect(answers.nth(0).locator('.markdown')).toHaveText('It is Lamp.');
  expect(await answers.nth(0).locator('figure pre').textContent()).toBe(sql);
  await expect(answers.nth(0).getByText(/^Result: 1 row; columns: id, name/)).toBeVisible();
  await expect(answers.nth(1).locator('.markdown')).toHaveText('No SQL needed: there are two products.');
  expect(await answers.nth(1).locator('figure').count()).toBe(0);
  await expect(page.getByLabel('Connection')).toHaveValue(connectionId);
  // The stored turn keeps a summary of its result; its table comes from running the SQL again.
  await answers.nth(0).getByRole('button', { name: 'Run the SQL again' }).click();
  const table = answers.nth(0).getByRole('table', { name: 'Answer data' });
  await expect(table.getByRole('columnheader')).toHaveText(['id', 'name']);
  await expect(table.getByRole('cell', { name: 'Lamp', exact: true })).toBeVisible();

  // A follow-up goes to this conversation on its connection.
  model.script({ content: 'Still two.' });
  await page.getByLabel('Question').fill('Any more?');
  await page.getByRole('button', { name: 'Ask' }).click();
  await expect(answers).toHaveCount(3);
  await expect(answers.nth(2)).toHaveAttribute('aria-busy', 'false');
  const convo = (await server.call('GET', `/conversations/${conversationId}`)).body.data;
  expect(convo.connectionId).toBe(connectionId);
  expect(convo.messages.map((m: { content: string }) => m.content).slice(-2)).toEqual([
    'Any more?',
    'Still two.',
  ]);
  await expectAccessible(page, 'reopened conversation');
});

test('an error event mid-stream shows the alert, ends the turn and keeps the question to ask again', async ({
  adminPage: page,
  model,
}) => {
  model.reset();
  model.script({ error: { status: 400, message: 'context length exceeded' } });
  await page.getByRole('navigation').getByRole('link', { name: 'Chat', exact: true }).click();
  await page.getByLabel('Connection').selectOption(connectionId);
  await page.getByLabel('Question').fill('A question the model fails on');
  await page.getByRole('button', { name: 'Ask' }).click();
  const alert = page.getByRole('alert');
  await expect(alert).toContainText('AI_PROVIDER_ERROR');
  const article = page.getByRole('article', { name: 'Answer' });
  await expect(article).toHaveAttribute('aria-busy', 'false');
  await expect(article.locator('.markdown')).toContainText('No answer:');
  await expect(page.getByLabel('Question')).toHaveValue('A question the model fails on');
  await expect(page.getByRole('button', { name: 'Ask' })).toBeEnabled();
  // Asking again works.
  model.script({ content: 'Answered this time.' });
  await page.getByRole('button', { name: 'Ask' }).click();
  await expect(article.nth(1).locator('.markdown')).toHaveText('Answered this time.');
  await expect(alert).toHaveCount(0);
  await expect(page.getByLabel('Question')).toHaveValue('');
});

/**
 * The answer stored for the conversation that `question` started, once there is one. When the page closes
 * the stream, the API stops the model and stores what was said so far; a stream read to its end stores the
 * whole answer.
 */
async function storedAnswer(server: TestServer, question: string): Promise<string> {
  let messages: string[] = [];
  await expect
    .poll(async () => {
      const list = (await server.call('GET', '/conversations?pageSize=50')).body.data as {
        id: string;
        title: string;
      }[];
      const c = list.find((x) => x.title === question);
      if (!c) return 0;
      const convo = (await server.call('GET', `/conversations/${c.id}`)).body.data;
      messages = convo.messages.map((m: { content: string }) => m.content);
      return messages.length;
    })
    .toBe(2);
  expect(messages[0]).toBe(question);
  return messages[1];
}

/** The page closed the stream of SLOW: its stored answer stopped short. */
function expectCutShort(answer: string): void {
  expect(answer.length).toBeLessThan(SLOW.content.trim().length);
}

/** Asks a question whose answer streams slowly, and waits until part of it is on the page. */
async function askSlowly(page: Page, question: string): Promise<void> {
  await page.getByRole('navigation').getByRole('link', { name: 'Chat', exact: true }).click();
  await page.getByLabel('Connection').selectOption(connectionId);
  await page.getByLabel('Question').fill(question);
  await page.getByRole('button', { name: 'Ask' }).click();
  const article = page.getByRole('article', { name: 'Answer' });
  await expect(article).toHaveAttribute('aria-busy', 'true');
  await expect(article.locator('.markdown')).toContainText('A slow answer');
}

const SLOW = { content: 'A slow answer that arrives in many small pieces. '.repeat(6), chunkDelayMs: 100 };

test('"New conversation" while an answer streams closes that stream: none of it reaches the new conversation', async ({
  adminPage: page,
  server,
  model,
}) => {
  model.reset();
  model.script(SLOW, { content: 'A fresh answer.' });
  const first = `Slow question ${Date.now()}`;
  await askSlowly(page, first);
  await page.getByRole('button', { name: 'New conversation' }).click();
  const turns = page.locator('.turns > li');
  await expect(turns).toHaveCount(0);
  // The page closed the streaming request.
  expectCutShort(await storedAnswer(server, first));
  await expect(turns).toHaveCount(0);
  await expect(page.getByRole('button', { name: 'Ask' })).toBeEnabled();

  const second = `Fresh question ${Date.now()}`;
  await page.getByLabel('Question').fill(second);
  await page.getByRole('button', { name: 'Ask' }).click();
  const article = page.getByRole('article', { name: 'Answer' });
  await expect(article).toHaveAttribute('aria-busy', 'false');
  await expect(page.locator('.turns .question')).toHaveText([second]);
  await expect(article.locator('.markdown')).toHaveText('A fresh answer.');
  await expect(page.getByRole('alert')).toHaveCount(0);
  // The second question started its own conversation.
  const list = (await server.call('GET', '/conversations?pageSize=50')).body.data as {
    id: string;
    title: string;
  }[];
  const fresh = list.find((c) => c.title.startsWith('Fresh question'));
  const convo = (await server.call('GET', `/conversations/${fresh!.id}`)).body.data;
  expect(convo.messages.map((m: { content: string }) => m.content)).toEqual([second, 'A fresh answer.']);
});

test('reopening a conversation while an answer streams closes that stream and shows only the reopened turns', async ({
  adminPage: page,
  server,
  model,
}) => {
  model.reset();
  const stored = `Stored question ${Date.now()}`;
  model.script({ content: 'The stored answer.' });
  const made = await server.call('POST', '/chat', { body: { message: stored, connectionId } });
  expect(made.status, made.text).toBe(200);
  model.script(SLOW);
  const slow = `Slow question ${Date.now()}`;
  await askSlowly(page, slow);
  await page.getByRole('region', { name: 'Conversations' }).getByRole('button', { name: stored }).click();
  await expect(page.locator('.turns .question')).toHaveText([stored]);
  expectCutShort(await storedAnswer(server, slow));
  await expect(page.locator('.turns .question')).toHaveText([stored]);
  await expect(page.getByRole('article', { name: 'Answer' }).locator('.markdown')).toHaveText(
    'The stored answer.',
  );
  await expect(page.getByRole('button', { name: stored })).toHaveAttribute('aria-current', 'true');
});
