import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { FIRST_PROMPT_LIMIT } from '../../shared/chat/prompt';
import { addBalance } from '../../shared/usage/balance';
import {
  createConnection,
  createPostgresDatabase,
  postgresAdmin,
  postgresConnection,
} from '../support/connections';
import { completions, type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai';
import { block, systemText } from '../support/schema-prompt';
import { startTestServer, type TestServer } from '../support/server';

const DB = 'chat_linking';
const FILLER = 420;
const WORDS = ['audit', 'cache', 'session', 'metric', 'job', 'queue', 'token', 'setting', 'flag', 'webhook'];

/**
 * Schema linking on real PostgreSQL with rows: a question that names a value (`LAM`, `CZK`,
 * `Marvel Comics`) gets the table holding it described in the first prompt, through automatic
 * annotation's sampled values; and the first request stays within 40 KB on a large schema with a long
 * conversation.
 */
describe('chat schema linking on PostgreSQL', () => {
  const info = inject('postgres');
  let s: TestServer;
  let fake: FakeOpenAI;
  let connectionId: string;

  const firstPromptFor = async (message: string, conversationId?: string) => {
    fake.script({ content: 'Noted.' });
    const r = await s.call('POST', '/chat', { body: { message, connectionId, conversationId } });
    expect(r.status, r.text).toBe(200);
    return { req: completions(fake).at(-1)!, conversationId: r.body.data.conversationId as string };
  };

  beforeAll(async () => {
    await createPostgresDatabase(info, DB);
    const filler = Array.from(
      { length: FILLER },
      (_, i) =>
        `CREATE TABLE ops.sys_${WORDS[i % WORDS.length]}_${String(i).padStart(3, '0')} (id integer PRIMARY KEY, created_at timestamptz, updated_at timestamptz, payload jsonb, kind text, ref_id integer, note text, status text, amount numeric, version integer);`,
    ).join('\n');
    // Decoys: tables whose names and columns share the questions' words but hold none of their values.
    const decoys = Array.from(
      { length: 12 },
      (_, i) =>
        `CREATE TABLE energy.consumption_forecast_${i} (id integer PRIMARY KEY, region text, year integer, consumption numeric, segment_label text, currency_label text);
         INSERT INTO energy.consumption_forecast_${i} SELECT g, 'north', 2012, g * 1.5, 'retail', 'USD' FROM generate_series(1, 60) g;`,
    ).join('\n');
    const segments = ['SME', 'SME', 'KAM', 'SME', 'LAM', 'KAM', 'SME', 'KAM'];
    await postgresAdmin(
      info,
      DB,
      `CREATE SCHEMA ops; CREATE SCHEMA energy; CREATE SCHEMA debit; CREATE SCHEMA heroes;
       ${filler}
       ${decoys}
       CREATE TABLE debit.customers ("CustomerID" integer PRIMARY KEY, "Segment" text, "Currency" text);
       INSERT INTO debit.customers SELECT g, (ARRAY[${segments.map((x) => `'${x}'`).join(',')}])[1 + g % 8],
         CASE WHEN g % 9 = 0 THEN 'EUR' ELSE 'CZK' END FROM generate_series(1, 200) g;
       CREATE TABLE debit.yearmonth ("CustomerID" integer, "Date" text, "Consumption" numeric);
       INSERT INTO debit.yearmonth SELECT 1 + g % 200, '2012' || lpad((1 + g % 12)::text, 2, '0'), g * 3.25
         FROM generate_series(1, 500) g;
       CREATE TABLE debit.gasstations ("GasStationID" integer PRIMARY KEY, "ChainID" integer, "Country" text, "Segment" text);
       INSERT INTO debit.gasstations SELECT g, g % 7, CASE WHEN g % 3 = 0 THEN 'SVK' ELSE 'CZE' END,
         (ARRAY['Premium','Value for money','Other','Discount'])[1 + g % 4] FROM generate_series(1, 120) g;
       CREATE TABLE heroes.publisher (id integer PRIMARY KEY, publisher_name text);
       INSERT INTO heroes.publisher VALUES (1, 'Marvel Comics'), (2, 'DC Comics'), (3, 'Dark Horse Comics'),
         (4, 'Image Comics'), (5, 'NBC - Heroes'), (6, 'Shueisha'), (7, 'Titan Books');
       CREATE TABLE heroes.superhero (id integer PRIMARY KEY, superhero_name text, full_name text,
         publisher_id integer REFERENCES heroes.publisher(id), height_cm integer);
       INSERT INTO heroes.superhero SELECT g, 'Hero ' || g, 'Person ' || g, 1 + g % 7, 150 + g % 60
         FROM generate_series(1, 100) g;
       GRANT USAGE ON SCHEMA ops, energy, debit, heroes TO ${info.user};
       GRANT SELECT ON ALL TABLES IN SCHEMA ops, energy, debit, heroes TO ${info.user};
       ANALYZE;`,
    );
    fake = await startFakeOpenAI();
    s = await startTestServer({
      env: {
        OPENAI_API_KEY: fake.apiKey,
        OPENAI_BASE_URL: fake.url,
        LOUPE_MODEL: 'test-model',
        LOUPE_AI_RATE_LIMIT: '10000',
      },
    });
    await addBalance(s.app.orgId, s.app.adminUserId, 1_000_000);
    connectionId = await createConnection(s, {
      ...postgresConnection(info, { database: DB }),
      name: 'Warehouse',
    });
    fake.script({
      content: 'A warehouse: debit card consumption, energy forecasts, superheroes, system tables.',
    });
    const t = await s.call('POST', `/connections/${connectionId}/test`);
    expect(t.body.data, t.text).toMatchObject({ success: true, tableCount: FILLER + 12 + 5 });
  }, 120_000);
  afterAll(async () => {
    await s?.stop();
    await fake?.stop();
  });
  beforeEach(() => {
    expect(fake.pending(), 'every scripted turn of the previous test was used').toBe(0);
    fake.reset();
  });

  it('finds the table holding a value the question names, from sampled values', async () => {
    // Before any annotation the value index sampled at introspection already knows "LAM".
    const before = systemText((await firstPromptFor('In 2012, who had the least consumption in LAM?')).req);
    expect(before).toContain('[value: "LAM"]');

    const wanted = [
      'debit.customers',
      'debit.yearmonth',
      'debit.gasstations',
      'heroes.publisher',
      'heroes.superhero',
    ];
    // The model rewrites descriptions when configured; an unusable answer keeps the deterministic ones.
    for (const _ of wanted) fake.script({ content: 'not JSON' });
    const r = await s.call('POST', `/connections/${connectionId}/annotations/auto`, {
      body: { tables: wanted },
    });
    expect(r.status, r.text).toBe(202);
    const deadline = Date.now() + 60_000;
    let done = false;
    while (!done && Date.now() < deadline) {
      await new Promise((ok) => setTimeout(ok, 250));
      const list = (
        await s.call('GET', `/connections/${connectionId}/annotations?table=heroes.superhero&pageSize=100`)
      ).body.data as Array<{ columnName: string | null }>;
      done = list.some((a) => a.columnName === 'height_cm');
    }
    expect(done).toBe(true);
    const segment = (
      await s.call('GET', `/connections/${connectionId}/annotations?table=debit.customers&pageSize=100`)
    ).body.data.find((a: any) => a.columnName === 'Segment');
    expect(segment.examples).toBe('SME, KAM, LAM');
    fake.reset();

    const cases: Array<[string, string[], string]> = [
      ['In 2012, who had the least consumption in LAM?', ['debit.customers', 'debit.yearmonth'], 'LAM'],
      [
        'Which year recorded the most consumption of gas paid in CZK?',
        ['debit.customers', 'debit.yearmonth'],
        'CZK',
      ],
      [
        'How many heroes were published by Marvel Comics?',
        ['heroes.publisher', 'heroes.superhero'],
        'Marvel Comics',
      ],
      ['How many stations in SVK are Premium?', ['debit.gasstations'], 'SVK'],
    ];
    for (const [question, tables, value] of cases) {
      const { req } = await firstPromptFor(question);
      const system = systemText(req);
      for (const t of tables) expect(block(system, t), `${question} → ${t}`).toMatch(/\n {2}\S|: \S/);
      // The value itself is in the description of the table that holds it.
      expect(block(system, tables[0]), question).toContain(value);
      expect(Buffer.byteLength(req.raw)).toBeLessThanOrEqual(FIRST_PROMPT_LIMIT);
    }
  }, 120_000);

  it('keeps the first request within 40 KB on a large schema with a long conversation, and keeps its tables', async () => {
    let conversationId: string | undefined;
    const long = (i: number) =>
      `Question ${i} about consumption per customer segment and currency, ${'with a lot of detail '.repeat(60)}`;
    for (let i = 0; i < 4; i++) {
      const sql =
        'SELECT c."Segment", SUM(y."Consumption") FROM debit.yearmonth y JOIN debit.customers c ON c."CustomerID" = y."CustomerID" GROUP BY 1';
      fake.script(
        { toolCalls: [{ name: 'run_query', arguments: { sql } }] },
        { content: `Answer ${i}: ${'the segments differ; '.repeat(80)}` },
      );
      const r = await s.call('POST', '/chat', { body: { message: long(i), connectionId, conversationId } });
      expect(r.status, r.text).toBe(200);
      expect(r.body.data.sqlQuery).toBe(sql);
      conversationId = r.body.data.conversationId;
    }
    for (const req of completions(fake))
      expect(Buffer.byteLength(req.raw)).toBeLessThanOrEqual(FIRST_PROMPT_LIMIT);
    // A follow-up without any table word keeps the tables the conversation's SQL used.
    const { req } = await firstPromptFor('And only for 2013?', conversationId);
    expect(Buffer.byteLength(req.raw)).toBeLessThanOrEqual(FIRST_PROMPT_LIMIT);
    expect(req.body.messages.length).toBeGreaterThan(2);
    const system = systemText(req);
    expect(block(system, 'debit.yearmonth')).toContain('Consumption');
    expect(block(system, 'debit.customers')).toContain('Segment');
  }, 120_000);
});
