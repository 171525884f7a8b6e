import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAccessible, launchBrowser, openConsole, signIn } from '../support/browser';
import { placeSqlite } from '../support/connections';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai';
import { startTestServer, type TestServer } from '../support/server';

/**
 * The console's Chat page against the test model server: the answer is drawn while its SSE events arrive,
 * with its SQL and result table, and markup in the model's answer and in cell values stays text.
 */
const HOSTILE = `<img src=x id=pwn-img onerror="document.title='pwned'"><script id="pwn-script">document.title='pwned'</script>`;

const POLL = { timeout: 20_000, interval: 50 };

describe('console chat in chromium', () => {
  let s: TestServer;
  let fake: FakeOpenAI;
  let browser: Browser;
  let dir: string;
  let connectionId: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'loupe-console-chat-'));
    const file = join(dir, 'shop.db');
    const db = new DatabaseSync(file);
    db.exec('CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL)');
    db.prepare('INSERT INTO products VALUES (1, ?), (2, ?)').run('Lamp', HOSTILE);
    db.close();
    fake = await startFakeOpenAI();
    s = await startTestServer({
      env: { OPENAI_API_KEY: fake.apiKey, OPENAI_BASE_URL: fake.url, LOUPE_MODEL: 'test-model' },
    });
    const c = await s.call('POST', '/connections', {
      body: { name: 'Shop', type: 'SQLITE', database: placeSqlite(s, file) },
    });
    expect(c.status, c.text).toBe(201);
    connectionId = c.body.data.id;
    fake.script({ content: 'Shop database: products.' });
    expect((await s.call('POST', `/connections/${connectionId}/test`)).body.data.success).toBe(true);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await s?.stop();
    await fake?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('streams the answer with its SQL and result table; markup in the answer and in cells is text', async () => {
    const sql = 'SELECT id, name FROM products ORDER BY id';
    const answer = `Two products: Lamp and ${HOSTILE} — see **the table**.`;
    fake.script(
      { toolCalls: [{ name: 'run_query', arguments: { sql } }] },
      { content: answer, chunkDelayMs: 150 },
    );
    const { page, problems, close } = await openConsole(browser, s.url.replace(/\/v1$/, ''));
    try {
      await signIn(page, s.adminKey);
      await page.getByRole('navigation').getByRole('link', { name: 'Chat', exact: true }).click();
      await page.getByLabel('Connection').selectOption(connectionId);
      await page.getByLabel('Question').fill('Which products are there?');
      await page.getByRole('button', { name: 'Ask' }).click();
      const article = page.getByRole('article', { name: 'Answer' });
      // Part of the answer is on the page while the stream is still open.
      await expect
        .poll(async () => {
          const busy = await article.getAttribute('aria-busy');
          const text = (await article.locator('.markdown').textContent()) ?? '';
          return busy === 'true' && text.length > 0 && text.length < answer.length;
        }, POLL)
        .toBe(true);
      await expect.poll(() => article.getAttribute('aria-busy'), POLL).toBe('false');
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
      expect(await page.title()).not.toBe('pwned');
      expect(problems).toEqual([]);
    } finally {
      await close();
    }
  });
});
