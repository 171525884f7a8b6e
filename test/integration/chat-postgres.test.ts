import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { type ChatEvent, parseSse } from '../../shared/chat/sse';
import { addBalance } from '../../shared/usage/balance';
import {
  createConnection,
  createPostgresDatabase,
  postgresAdmin,
  postgresConnection,
} from '../support/connections';
import { completions, type FakeOpenAI, type RecordedRequest, startFakeOpenAI } from '../support/fake-openai';
import { startTestServer, type TestServer } from '../support/server';

const DB = 'chat_pg';
const PRICES = JSON.stringify({ 'test-model': { promptPerMillion: 1000, completionPerMillion: 3000 } });

const TOTALS_SQL =
  'SELECT c.name, SUM(o.total) AS spent FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.name ORDER BY spent DESC';

/** The JSON of the latest tool message the service sent to the model. */
const lastTool = (req: RecordedRequest) => {
  const tools = req.body.messages.filter((m: any) => m.role === 'tool');
  return JSON.parse(tools[tools.length - 1].content);
};
const systemText = (req: RecordedRequest) => req.body.messages[0].content as string;

describe('chat on PostgreSQL', () => {
  const info = inject('postgres');
  let s: TestServer;
  let fake: FakeOpenAI;
  let connectionId: string;
  let hiddenId: string;
  let memberKey: string;

  const sql = (text: string) => postgresAdmin(info, DB, text);
  const budget = async (key?: string) =>
    (await s.call('GET', '/usage/budget', { key })).body.data.remaining as number;

  beforeAll(async () => {
    await createPostgresDatabase(info, DB);
    await sql(`
      CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT NOT NULL);
      CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
        total NUMERIC(10,2) NOT NULL, status TEXT NOT NULL, ordered_at DATE NOT NULL);
      INSERT INTO customers VALUES (1, 'Ada', 'UK'), (2, 'Grace', 'US'), (3, 'Linus', 'FI');
      INSERT INTO orders VALUES (1, 1, 10.50, 'paid', '2026-01-03'), (2, 1, 20.00, 'open', '2026-02-01'),
        (3, 2, 5.25, 'paid', '2026-02-11'), (4, 3, 42.00, 'paid', '2026-03-15');
      ALTER TABLE customers OWNER TO ${info.user}; ALTER TABLE orders OWNER TO ${info.user};`);
    fake = await startFakeOpenAI();
    s = await startTestServer({
      env: {
        OPENAI_API_KEY: fake.apiKey,
        OPENAI_BASE_URL: fake.url,
        LOUPE_MODEL: 'test-model',
        LOUPE_MODEL_PRICES: PRICES,
      },
    });
    const body = postgresConnection(info, { database: DB });
    connectionId = await createConnection(s, { ...body, name: 'Shop' });
    fake.script({ content: 'A small shop: customers place orders; orders.total holds the amounts.' });
    const t = await s.call('POST', `/connections/${connectionId}/test`);
    expect(t.body.data, t.text).toMatchObject({ success: true, schemaIntrospected: true });
    hiddenId = await createConnection(s, { ...body, name: 'Hidden' });
    const ann = await s.call('POST', `/connections/${connectionId}/annotations`, {
      body: {
        tableName: 'orders',
        columnName: 'status',
        annotation: 'Payment state of the order',
        examples: 'paid, open',
      },
    });
    expect(ann.status, ann.text).toBe(201);
    const m = await s.call('POST', '/members', {
      body: { email: 'chat-member@example.com', name: 'Member', connectionIds: [connectionId] },
    });
    memberKey = (await s.call('POST', `/members/${m.body.data.id}/keys`, { body: { name: 'k' } })).body.data
      .key;
  });
  afterAll(async () => {
    await s?.stop();
    await fake?.stop();
  });
  beforeEach(() => {
    expect(fake.pending(), 'every scripted turn of the previous test was used').toBe(0);
    fake.reset();
  });

  it('writes the schema summary with the model when one is configured, and accounts for it', async () => {
    const schema = await s.call('GET', `/connections/${connectionId}/schema`);
    expect(schema.body.data.schemaSummary).toBe(
      'A small shop: customers place orders; orders.total holds the amounts.',
    );
    const usage = await s.call('GET', '/usage');
    expect(usage.body.data.map((r: any) => r.feature)).toContain('schema_summary');
  });

  it('answers a question with SQL that runs and a result that matches the database', async () => {
    fake.script(
      { toolCalls: [{ name: 'run_query', arguments: { sql: TOTALS_SQL, purpose: 'Spend per customer' } }] },
      (req) => {
        const r = lastTool(req);
        return { content: `${r.rows[0].name} spent the most (${r.rows[0].spent}).` };
      },
    );
    const r = await s.call('POST', '/chat', {
      body: { message: 'Which customer spent the most?', connectionId },
    });
    expect(r.status, r.text).toBe(200);
    const d = r.body.data;
    const expected = await sql(TOTALS_SQL);
    expect(d.sqlQuery).toBe(TOTALS_SQL);
    expect(d.queryResult.columns).toEqual(['name', 'spent']);
    expect(d.queryResult.rows).toEqual(expected.map((row) => ({ name: row.name, spent: row.spent })));
    expect(d.queryResult.rowCount).toBe(3);
    expect(d.content).toBe('Linus spent the most (42.00).');
    expect(d.intent).toBe('data_question');
    expect(d.steps).toEqual([
      {
        action: 'run_query',
        detail: 'Spend per customer: 3 rows',
        sql: TOTALS_SQL,
        queryResult: { columns: ['name', 'spent'], rowCount: 3, executionTime: expect.any(Number) },
        queryError: null,
      },
    ]);
    expect(d.usage).toEqual({
      model: 'test-model',
      promptTokens: expect.any(Number),
      completionTokens: expect.any(Number),
    });
    expect(d.conversationId).toEqual(expect.any(String));
    expect(d.messageId).toEqual(expect.any(String));

    // What the model was sent: the schema with the annotation, the dialect, the tool definitions.
    const [first, second] = completions(fake);
    expect(first.body.model).toBe('test-model');
    expect(systemText(first)).toContain('POSTGRES');
    expect(systemText(first)).toContain('TABLE orders');
    expect(systemText(first)).toMatch(/customer_id integer NOT NULL → customers\.id/);
    expect(systemText(first)).toContain('Payment state of the order; examples: paid, open');
    expect(systemText(first)).toContain('A small shop'); // the cached summary
    expect(first.body.tools.map((t: any) => t.function.name)).toEqual([
      'run_query',
      'search_schema',
      'describe_tables',
    ]);
    expect(first.body.messages.at(-1)).toEqual({ role: 'user', content: 'Which customer spent the most?' });
    expect(lastTool(second)).toMatchObject({
      ok: true,
      rowCount: 3,
      rowsShown: 3,
      columns: ['name', 'spent'],
    });

    // The conversation keeps both messages; the answer carries SQL, result summary, tokens and model.
    const conv = await s.call('GET', `/conversations/${d.conversationId}`);
    expect(conv.body.data.title).toBe('Which customer spent the most?');
    expect(conv.body.data.connectionId).toBe(connectionId);
    const [q, a] = conv.body.data.messages;
    expect(q).toMatchObject({
      role: 'USER',
      content: 'Which customer spent the most?',
      sqlQuery: null,
      model: null,
    });
    expect(a).toMatchObject({
      id: d.messageId,
      role: 'ASSISTANT',
      content: d.content,
      sqlQuery: TOTALS_SQL,
      promptTokens: d.usage.promptTokens,
      completionTokens: d.usage.completionTokens,
      model: 'test-model',
    });
    expect(a.resultSummary).toMatch(/^3 rows; columns: name, spent; first rows: \{"name":"Linus"/);

    // The query ran through the read-only path and is in the connection's history as a chat query.
    const history = await s.call('GET', `/connections/${connectionId}/queries`);
    expect(history.body.data[0]).toMatchObject({ source: 'chat', sql: TOTALS_SQL, status: 'SUCCESS' });
  });

  it('feeds a failing query’s error back to the model and runs the repaired query', async () => {
    const broken = 'SELECT nme, country FROM customers ORDER BY id';
    const fixed = 'SELECT name, country FROM customers ORDER BY id';
    let errorSeen: any;
    fake.script(
      { toolCalls: [{ name: 'run_query', arguments: { sql: broken } }] },
      (req) => {
        errorSeen = lastTool(req);
        return {
          toolCalls: [{ name: 'run_query', arguments: { sql: fixed, purpose: 'Fixed column name' } }],
        };
      },
      { content: 'Ada, Grace and Linus.' },
    );
    const r = await s.call('POST', '/chat', {
      body: { message: 'List the customers with their country', connectionId },
    });
    expect(r.status, r.text).toBe(200);
    expect(errorSeen).toMatchObject({ ok: false, code: 'QUERY_FAILED', databaseCode: '42703' });
    expect(errorSeen.error).toMatch(/column "nme" does not exist/);
    const d = r.body.data;
    expect(d.steps).toHaveLength(2);
    expect(d.steps[0]).toMatchObject({ action: 'run_query', sql: broken, queryResult: null });
    expect(d.steps[0].queryError).toMatch(/nme/);
    expect(d.steps[1]).toMatchObject({
      action: 'run_query',
      sql: fixed,
      queryError: null,
      queryResult: { rowCount: 3 },
    });
    expect(d.sqlQuery).toBe(fixed);
    expect(d.queryResult.rows).toEqual(await sql(fixed));
  });

  it('stops after 3 repairs and answers without running more queries', async () => {
    const bad = (n: number) => ({
      toolCalls: [{ name: 'run_query', arguments: { sql: `SELECT nope${n} FROM customers` } }],
    });
    let lastRequest: RecordedRequest | undefined;
    fake.script(bad(1), bad(2), bad(3), bad(4), (req) => {
      lastRequest = req;
      return { content: 'The column I need does not exist.' };
    });
    const r = await s.call('POST', '/chat', { body: { message: 'Show the nope column', connectionId } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.steps).toHaveLength(4);
    expect(r.body.data.steps.every((st: any) => st.queryError)).toBe(true);
    expect(r.body.data.sqlQuery).toBeNull();
    expect(r.body.data.queryResult).toBeNull();
    // After the fourth failure run_query is no longer offered.
    expect(lastRequest!.body.tools.map((t: any) => t.function.name)).not.toContain('run_query');
    expect(lastTool(lastRequest!).hint).toMatch(/Do not retry/);
  });

  it('refuses a write proposed by the model, reports it in steps and leaves the database unchanged', async () => {
    const before = await sql('SELECT count(*)::int AS n FROM orders');
    let refusal: any;
    fake.script({ toolCalls: [{ name: 'run_query', arguments: { sql: 'DELETE FROM orders' } }] }, (req) => {
      refusal = lastTool(req);
      return { content: 'I can only read data; deleting orders is not allowed.' };
    });
    const r = await s.call('POST', '/chat', { body: { message: 'Delete all orders', connectionId } });
    expect(r.status, r.text).toBe(200);
    expect(refusal).toMatchObject({ ok: false, code: 'READ_ONLY_VIOLATION' });
    expect(r.body.data.steps).toEqual([
      expect.objectContaining({
        action: 'run_query',
        sql: 'DELETE FROM orders',
        queryResult: null,
        queryError: expect.any(String),
      }),
    ]);
    expect(r.body.data.sqlQuery).toBeNull();
    expect(r.body.data.content).toMatch(/not allowed/);
    expect(await sql('SELECT count(*)::int AS n FROM orders')).toEqual(before);
  });

  it('answers a follow-up with the previous turn’s question and SQL in the prompt', async () => {
    fake.script(
      { toolCalls: [{ name: 'run_query', arguments: { sql: TOTALS_SQL } }] },
      { content: 'Linus spent the most.' },
    );
    const first = await s.call('POST', '/chat', { body: { message: 'Who spent the most?', connectionId } });
    const conversationId = first.body.data.conversationId;
    const paidSql = `SELECT c.name, SUM(o.total) AS spent FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.status = 'paid' GROUP BY c.name ORDER BY spent DESC`;
    fake.reset();
    fake.script(
      { toolCalls: [{ name: 'run_query', arguments: { sql: paidSql } }] },
      { content: 'Counting paid orders only, Linus still leads.' },
    );
    const second = await s.call('POST', '/chat', {
      body: { message: 'And only paid orders?', conversationId },
    });
    expect(second.status, second.text).toBe(200);
    expect(second.body.data.conversationId).toBe(conversationId);
    expect(second.body.data.intent).toBe('follow_up');
    const req = completions(fake)[0];
    const history = req.body.messages.slice(1, -1);
    expect(history[0]).toEqual({ role: 'user', content: 'Who spent the most?' });
    expect(history[1].role).toBe('assistant');
    expect(history[1].content).toContain('Linus spent the most.');
    expect(history[1].content).toContain(TOTALS_SQL);
    expect(history[1].content).toMatch(/Result: 3 rows; columns: name, spent/);
    expect(req.body.messages.at(-1)).toEqual({ role: 'user', content: 'And only paid orders?' });
    const conv = await s.call('GET', `/conversations/${conversationId}/messages`);
    expect(conv.body.meta.pagination.total).toBe(4);
  });

  it('streams start, sql, result, step, delta and done events in order over a chunked response', async () => {
    fake.script(
      { toolCalls: [{ name: 'run_query', arguments: { sql: TOTALS_SQL, purpose: 'Spend' } }] },
      { content: 'Linus spent the most, then Ada.', delayMs: 200 },
    );
    const res = await fetch(`${s.url}/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'Top spender?', connectionId, stream: true }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    expect(res.headers.get('ratelimit-limit')).toBeTruthy();
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const firstChunk = await reader.read();
    text += decoder.decode(firstChunk.value, { stream: true });
    // The start event arrives while the answer is still being produced (the last model turn is unused).
    expect(text).toContain('"type":"start"');
    expect(fake.pending()).toBeGreaterThan(0);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    const { events } = parseSse(text);
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('start');
    expect(types.slice(1, 4)).toEqual(['sql', 'result', 'step']);
    expect(types.at(-1)).toBe('done');
    expect(types.slice(4, -1).every((t) => t === 'delta')).toBe(true);
    expect(types.filter((t) => t === 'delta').length).toBeGreaterThan(1);
    const start = events[0] as Extract<ChatEvent, { type: 'start' }>;
    const result = events[2] as Extract<ChatEvent, { type: 'result' }>;
    const done = events.at(-1) as Extract<ChatEvent, { type: 'done' }>;
    expect(events[1]).toEqual({ type: 'sql', sql: TOTALS_SQL });
    expect(result).toMatchObject({ columns: ['name', 'spent'], rowCount: 3, truncated: false });
    expect(result.rows).toEqual((await sql(TOTALS_SQL)).map((r) => ({ name: r.name, spent: r.spent })));
    expect(events[3]).toMatchObject({ type: 'step', action: 'run_query', sql: TOTALS_SQL, queryError: null });
    const deltas = events.filter((e) => e.type === 'delta').map((e) => (e as { content: string }).content);
    expect(deltas.join('')).toBe('Linus spent the most, then Ada.');
    expect(done).toMatchObject({
      messageId: start.messageId,
      conversationId: start.conversationId,
      content: 'Linus spent the most, then Ada.',
      sqlQuery: TOTALS_SQL,
      intent: 'data_question',
    });
    expect(done.steps).toHaveLength(1);
    expect(done.queryResult?.rowCount).toBe(3);
    // Streaming model calls asked for usage in the final chunk.
    expect(
      completions(fake).every((r) => r.body.stream === true && r.body.stream_options?.include_usage === true),
    ).toBe(true);
    const stored = await s.call('GET', `/conversations/${start.conversationId}`);
    expect(stored.body.data.messages[1]).toMatchObject({
      id: start.messageId,
      content: done.content,
      sqlQuery: TOTALS_SQL,
    });
  });

  it('streams an error event when the model provider fails after the stream started', async () => {
    fake.script({ error: { status: 400, message: 'context length exceeded' } });
    const r = await s.call('POST', '/chat', { body: { message: 'Anything?', connectionId, stream: true } });
    expect(r.status).toBe(200);
    const { events } = parseSse(r.text);
    expect(events.map((e) => e.type)).toEqual(['start', 'error']);
    expect(events[1]).toMatchObject({ type: 'error', code: 'AI_PROVIDER_ERROR' });
    expect((events[1] as { message: string }).message).toMatch(/context length exceeded/);
  });

  it('writes one usage record per model call and lowers the balance by exactly their cost', async () => {
    const before = await budget();
    const beforeCount = (await s.call('GET', '/usage')).body.meta.pagination.total;
    fake.script(
      {
        toolCalls: [{ name: 'run_query', arguments: { sql: 'SELECT count(*) AS n FROM orders' } }],
        usage: { prompt_tokens: 1200, completion_tokens: 40 },
      },
      { content: 'There are 4 orders.', usage: { prompt_tokens: 1500, completion_tokens: 12 } },
    );
    const r = await s.call('POST', '/chat', {
      body: { message: 'How many orders are there?', connectionId },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.usage).toEqual({ model: 'test-model', promptTokens: 2700, completionTokens: 52 });
    const usage = await s.call('GET', '/usage');
    expect(usage.body.meta.pagination.total).toBe(beforeCount + 2);
    const [newest, older] = usage.body.data;
    expect(older).toMatchObject({
      feature: 'chat',
      model: 'test-model',
      promptTokens: 1200,
      completionTokens: 40,
      userId: s.app.adminUserId,
    });
    expect(newest).toMatchObject({
      feature: 'chat',
      model: 'test-model',
      promptTokens: 1500,
      completionTokens: 12,
    });
    expect(older.costCents).toBeCloseTo((1200 * 1000 + 40 * 3000) / 1e6, 9);
    expect(newest.costCents).toBeCloseTo((1500 * 1000 + 12 * 3000) / 1e6, 9);
    expect(before - (await budget())).toBeCloseTo(older.costCents + newest.costCents, 9);
  });

  it('refuses a chat at zero balance with 402 before any model call, streaming or not', async () => {
    const remaining = await budget(memberKey);
    const member = (await s.call('GET', '/members')).body.data.find(
      (m: any) => m.email === 'chat-member@example.com',
    );
    await addBalance(s.app.orgId, member.id, -remaining);
    expect(await budget(memberKey)).toBe(0);
    for (const stream of [false, true]) {
      const r = await s.call('POST', '/chat', {
        key: memberKey,
        body: { message: 'How many orders?', connectionId, stream },
      });
      expect(r.status).toBe(402);
      expect(r.headers.get('content-type')).toMatch(/application\/json/);
      expect(r.body.error.code).toBe('CREDITS_EXHAUSTED');
    }
    expect(fake.requests).toHaveLength(0);
    expect((await s.call('GET', '/conversations', { key: memberKey })).body.meta.pagination.total).toBe(0);
    await addBalance(s.app.orgId, member.id, 100);
  });

  it('lets a member chat only over assigned connections (404 otherwise, before any model call)', async () => {
    const hidden = await s.call('POST', '/chat', {
      key: memberKey,
      body: { message: 'Orders?', connectionId: hiddenId },
    });
    expect(hidden.status).toBe(404);
    expect(hidden.body.error.code).toBe('NOT_FOUND');
    const missing = await s.call('POST', '/chat', { body: { message: 'Orders?', connectionId: 'nope' } });
    expect(missing.status).toBe(404);
    const otherConversation = await s.call('POST', '/chat', {
      key: memberKey,
      body: { message: 'Orders?', conversationId: (await s.call('POST', '/conversations')).body.data.id },
    });
    expect(otherConversation.status).toBe(404);
    expect(fake.requests).toHaveLength(0);
    fake.script({ content: 'Hello!' });
    const ok = await s.call('POST', '/chat', { key: memberKey, body: { message: 'Hello', connectionId } });
    expect(ok.status, ok.text).toBe(200);
  });

  it('without a connection answers without running anything and asks which connection to use', async () => {
    fake.script({ content: 'Which connection should I use: "Shop" or "Hidden"?' });
    const r = await s.call('POST', '/chat', { body: { message: 'How many orders did we get in March?' } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({
      intent: 'clarification',
      sqlQuery: null,
      queryResult: null,
      steps: [],
    });
    const req = completions(fake)[0];
    expect(req.body.tools).toBeUndefined();
    expect(systemText(req)).toContain('No database connection is selected');
    expect(systemText(req)).toContain(`"Shop" (POSTGRES, id ${connectionId})`);
    expect(systemText(req)).not.toContain('TABLE orders');
  });

  it('retries without an optional parameter the model rejects (reasoning models and temperature)', async () => {
    const usageBefore = (await s.call('GET', '/usage')).body.meta.pagination.total;
    fake.script(
      {
        error: {
          status: 400,
          message: "Unsupported parameter: 'temperature' is not supported with this model.",
        },
      },
      { content: 'Hello again.' },
    );
    const r = await s.call('POST', '/chat', { body: { message: 'Hello', connectionId } });
    expect(r.status, r.text).toBe(200);
    const [rejected, retried] = completions(fake);
    expect(rejected.body.temperature).toBe(0);
    expect(retried.body.temperature).toBeUndefined();
    // Only the call that was answered is accounted.
    expect((await s.call('GET', '/usage')).body.meta.pagination.total).toBe(usageBefore + 1);
  });

  it('validates the request: message required, at most 8000 characters, stream boolean', async () => {
    for (const body of [
      {},
      { message: '' },
      { message: 'x'.repeat(8001) },
      { message: 'hi', stream: 'yes' },
    ]) {
      const r = await s.call('POST', '/chat', { body });
      expect(r.status, JSON.stringify(body).slice(0, 50)).toBe(400);
      expect(r.body.error.code).toBe('VALIDATION_ERROR');
    }
    expect(
      (await s.call('POST', '/chat', { rawBody: '{bad', headers: { 'content-type': 'application/json' } }))
        .status,
    ).toBe(400);
    expect(fake.requests).toHaveLength(0);
  });
});
