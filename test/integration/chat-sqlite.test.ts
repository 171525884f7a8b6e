import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FIRST_PROMPT_LIMIT } from '../../shared/chat/prompt';
import { MAX_DETAILED_TABLES } from '../../shared/chat/schema-context';
import { parseSse } from '../../shared/chat/sse';
import { setPingInterval } from '../../shared/http/stream';
import { placeSqlite } from '../support/connections';
import { completions, type FakeOpenAI, type RecordedRequest, startFakeOpenAI } from '../support/fake-openai';
import { startTestServer, type TestServer } from '../support/server';

const WORDS = ['audit', 'cache', 'session', 'metric', 'job', 'queue', 'token', 'setting', 'flag', 'webhook'];
const UNPAID_SQL =
  "SELECT c.name, SUM(i.amount) AS unpaid FROM invoices i JOIN customers c ON c.id = i.customer_id WHERE i.status = 'unpaid' GROUP BY c.name ORDER BY c.name";

const tools = (req: RecordedRequest) => req.body.messages.filter((m: any) => m.role === 'tool');
const lastTool = (req: RecordedRequest) => JSON.parse(tools(req).at(-1).content);
const systemText = (req: RecordedRequest) => req.body.messages[0].content as string;

describe('chat on SQLite with a 300-table schema', () => {
  let dir: string;
  let file: string;
  let s: TestServer;
  let fake: FakeOpenAI;
  let connectionId: string;
  let db: DatabaseSync;
  let summaryRequest: RecordedRequest;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'loupe-chat-sqlite-'));
    file = join(dir, 'big.db');
    db = new DatabaseSync(file);
    db.exec(`
      CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, segment TEXT, email TEXT);
      CREATE TABLE invoices (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
        amount REAL NOT NULL, status TEXT NOT NULL, issued_on TEXT NOT NULL);
      INSERT INTO customers VALUES (1, 'Acme', 'enterprise', 'ap@acme.test'), (2, 'Bolt', 'smb', 'hi@bolt.test'),
        (3, 'Crux', 'smb', NULL);
      INSERT INTO invoices VALUES (1, 1, 100.0, 'unpaid', '2026-01-01'), (2, 1, 50.5, 'paid', '2026-01-05'),
        (3, 2, 70.25, 'unpaid', '2026-02-01'), (4, 3, 12.0, 'paid', '2026-02-02'), (5, 2, 9.75, 'unpaid', '2026-03-01');`);
    const cols =
      'id INTEGER PRIMARY KEY, created_at TEXT, updated_at TEXT, payload TEXT, kind TEXT, ref_id INTEGER, note TEXT, version INTEGER';
    for (let i = 0; i < 300; i++)
      db.exec(`CREATE TABLE sys_${WORDS[i % WORDS.length]}_${String(i).padStart(3, '0')} (${cols})`);

    fake = await startFakeOpenAI();
    s = await startTestServer({
      env: { OPENAI_API_KEY: fake.apiKey, OPENAI_BASE_URL: fake.url, LOUPE_MODEL: 'test-model' },
    });
    const c = await s.call('POST', '/connections', {
      body: { name: 'Billing', type: 'SQLITE', database: placeSqlite(s, file) },
    });
    expect(c.status, c.text).toBe(201);
    connectionId = c.body.data.id;
    fake.script({ content: 'Billing database: customers and their invoices, plus system tables.' });
    const t = await s.call('POST', `/connections/${connectionId}/test`);
    expect(t.body.data, t.text).toMatchObject({ success: true, schemaIntrospected: true, tableCount: 302 });
    summaryRequest = completions(fake)[0];
  });
  afterAll(async () => {
    await s?.stop();
    await fake?.stop();
    db?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    expect(fake.pending(), 'every scripted turn of the previous test was used').toBe(0);
    fake.reset();
  });

  it('writes the schema summary with the model, sending it only bounded schema facts and no rows', async () => {
    expect(summaryRequest.body.tools).toBeUndefined();
    expect(summaryRequest.raw.length).toBeLessThan(20_000);
    const facts = summaryRequest.body.messages[1].content as string;
    expect(facts).toContain('Database "Billing" (SQLITE');
    expect(facts).toMatch(/invoices .*customer_id → customers\(id\)/);
    for (const value of ['Acme', 'Bolt', 'unpaid', '100.0']) expect(summaryRequest.raw).not.toContain(value);
    const summary = await s.call('GET', `/connections/${connectionId}/schema`);
    expect(summary.body.data.schemaSummary).toBe(
      'Billing database: customers and their invoices, plus system tables.',
    );
  });

  it('keeps the prompt of a 300-table schema under a fixed size while describing the tables the question needs', async () => {
    fake.script({ toolCalls: [{ name: 'run_query', arguments: { sql: UNPAID_SQL } }] }, (req) => ({
      content: `Unpaid: ${lastTool(req)
        .rows.map((r: any) => `${r.name} ${r.unpaid}`)
        .join(', ')}`,
    }));
    const r = await s.call('POST', '/chat', {
      body: { message: 'What is the total amount of unpaid invoices per customer?', connectionId },
    });
    expect(r.status, r.text).toBe(200);
    const first = completions(fake)[0];
    expect(first.raw.length).toBeLessThan(FIRST_PROMPT_LIMIT);
    const system = systemText(first);
    expect(system).toContain('TABLE invoices');
    expect(system).toContain('TABLE customers');
    expect(system).toMatch(/customer_id INTEGER NOT NULL → customers\.id/);
    expect(system).toMatch(/Schema \(\d+ of 302 tables described/);
    expect(system).toContain('Other tables (');
    const described = system.match(/^TABLE /gm) ?? [];
    expect(described.length).toBeLessThanOrEqual(MAX_DETAILED_TABLES);
    expect(described.length).toBeLessThan(302);
    expect(r.body.data.queryResult.rows).toEqual(
      db
        .prepare(UNPAID_SQL)
        .all()
        .map((row) => ({ ...row })),
    );
    expect(r.body.data.content).toBe('Unpaid: Acme 100, Bolt 80');
  });

  it('looks up tables outside the prompt through search_schema and describe_tables', async () => {
    fake.script(
      { toolCalls: [{ name: 'search_schema', arguments: { query: 'webhook' } }] },
      (req) => {
        const found = lastTool(req).tables as string[];
        expect(found.length).toBeGreaterThan(0);
        expect(found.every((t) => t.startsWith('TABLE sys_webhook_'))).toBe(true);
        return {
          toolCalls: [
            { name: 'describe_tables', arguments: { tables: ['sys_webhook_009', 'no_such_table'] } },
          ],
        };
      },
      (req) => {
        const d = lastTool(req);
        expect(d.definitions).toContain('TABLE sys_webhook_009');
        expect(d.definitions).toContain('payload TEXT');
        expect(d.notFound).toEqual(['no_such_table']);
        return { content: 'The webhook tables hold a payload, a kind and a version.' };
      },
    );
    const r = await s.call('POST', '/chat', {
      body: { message: 'Which tables store webhooks?', connectionId },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.intent).toBe('schema_question');
    expect(r.body.data.steps.map((st: any) => st.action)).toEqual(['search_schema', 'describe_tables']);
    expect(r.body.data.steps[1].detail).toMatch(/sys_webhook_009.*not found: no_such_table/);
  });

  it('sends the model at most 20 rows while the response carries the full result', async () => {
    const fifty =
      'WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 50) SELECT x FROM n';
    let seen: any;
    fake.script({ toolCalls: [{ name: 'run_query', arguments: { sql: fifty } }] }, (req) => {
      seen = lastTool(req);
      return { content: 'The numbers 1 to 50.' };
    });
    const r = await s.call('POST', '/chat', { body: { message: 'Count from 1 to 50', connectionId } });
    expect(r.status, r.text).toBe(200);
    expect(seen).toMatchObject({ ok: true, rowCount: 50, rowsShown: 20 });
    expect(seen.rows).toHaveLength(20);
    expect(seen.rows.at(-1)).toEqual({ x: 20 });
    const raw = completions(fake)[1].raw;
    expect(raw).not.toContain('{\\"x\\":21}');
    expect(r.body.data.queryResult.rows).toHaveLength(50);
    expect(r.body.data.queryResult.rowCount).toBe(50);
  });

  it('writes automatic annotations with the model (feature auto_annotation), never sending personal values', async () => {
    const usageBefore = (await s.call('GET', '/usage')).body.meta.pagination.total;
    let request: RecordedRequest | undefined;
    fake.script((req) => {
      request = req;
      return {
        content:
          '```json\n{"table": "Customers billed by the company.", "columns": {"segment": "Market segment: enterprise or smb.", "nope": "ignored"}}\n```',
      };
    });
    const r = await s.call('POST', `/connections/${connectionId}/annotations/auto`, {
      body: { tables: ['customers'] },
    });
    expect(r.status, r.text).toBe(202);
    let list: any[] = [];
    for (let i = 0; i < 150 && !list.some((a) => a.columnName === 'email'); i++) {
      await new Promise((ok) => setTimeout(ok, 200));
      list = (await s.call('GET', `/connections/${connectionId}/annotations?table=customers`)).body.data;
    }
    const byColumn = new Map(list.map((a) => [a.columnName, a]));
    expect(byColumn.get(null)).toMatchObject({
      source: 'auto',
      annotation: 'Customers billed by the company.',
    });
    expect(byColumn.get('segment')).toMatchObject({
      annotation: 'Market segment: enterprise or smb.',
      dataType: 'TEXT',
    });
    expect(byColumn.get('segment').examples).toMatch(/enterprise/);
    // A column the model did not describe keeps the deterministic text.
    expect(byColumn.get('name').annotation).toMatch(/TEXT, not null\./);
    expect(request!.raw).toContain('segment');
    expect(request!.raw).toContain('enterprise');
    for (const personal of ['ap@acme.test', 'hi@bolt.test']) expect(request!.raw).not.toContain(personal);
    const usage = await s.call('GET', '/usage');
    expect(usage.body.meta.pagination.total).toBe(usageBefore + 1);
    expect(usage.body.data[0].feature).toBe('auto_annotation');
  });

  it('keeps the stream alive with `: ping` comments while the model is slow', async () => {
    setPingInterval(40);
    try {
      fake.script({ content: 'Still here.', delayMs: 400 });
      const r = await s.call('POST', '/chat', {
        body: { message: 'Say something', connectionId, stream: true },
      });
      const { events, comments } = parseSse(r.text);
      expect(comments.filter((c) => c === 'ping').length).toBeGreaterThan(0);
      expect(events.map((e) => e.type)).toEqual(['start', 'delta', 'delta', 'done']);
    } finally {
      setPingInterval(15_000);
    }
  });
});
