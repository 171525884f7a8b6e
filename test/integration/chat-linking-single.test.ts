import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { FIRST_PROMPT_LIMIT } from '../../shared/chat/prompt';
import { loadSchema } from '../../shared/connections/schema-store';
import { addBalance } from '../../shared/usage/balance';
import {
  createConnection,
  createPostgresDatabase,
  postgresAdmin,
  postgresConnection,
} from '../support/connections';
import { completions, type FakeOpenAI, type RecordedRequest, startFakeOpenAI } from '../support/fake-openai';
import { block, systemText } from '../support/schema-prompt';
import { startTestServer, type TestServer } from '../support/server';
import { waitFor } from '../support/wait';

const DB = 'chat_linking_single';
const pad = (i: number) => String(i).padStart(3, '0');
const many = (n: number, sql: (i: number) => string) =>
  Array.from({ length: n }, (_, i) => sql(i)).join('\n');

/**
 * Decoys: hundreds of tables in the same schema that share the questions' words, so that a table the
 * question names only indirectly is described only if the ranking finds it (tables no word of the
 * question matches are never described; decoys fill the budget before an unranked table would).
 */
const DECOYS = [
  // "gas" and "station" as separate words everywhere: only the compound gasstations joins them.
  many(
    160,
    (i) =>
      `CREATE TABLE station_log_${pad(i)} (id integer PRIMARY KEY, station_code text, gas_kind text, logged_at timestamptz, chain_note text, operator_name text, shift_code text, pump_count integer, attendant text, opened_at timestamptz, closed_at timestamptz, remarks text);`,
  ),
  // The word "consumption" in names and columns: the meter table says "consumed" only.
  many(
    40,
    (i) =>
      `CREATE TABLE consumption_forecast_${pad(i)} (id integer PRIMARY KEY, region text, year integer, consumption numeric);`,
  ),
  // Sales tables alike in every name and column: only the sampled values tell which holds Czech sales.
  many(
    150,
    (i) =>
      `CREATE TABLE sales_area_${pad(i)} (id integer PRIMARY KEY, market text, amount numeric, year integer);
       INSERT INTO sales_area_${pad(i)} SELECT g, 'Germany', g * 2, 2020 FROM generate_series(1, 20) g;`,
  ),
  // "author" and "paper" in many names: the bridge between the two named tables says neither.
  many(
    60,
    (i) =>
      `CREATE TABLE paper_review_${pad(i)} (id integer PRIMARY KEY, reviewer text, score integer);
       CREATE TABLE author_note_${pad(i)} (id integer PRIMARY KEY, note text, written_on date);`,
  ),
].join('\n');

const TARGETS = `
  CREATE TABLE gasstations ("GasStationID" integer PRIMARY KEY, "ChainID" integer, "Country" text, "Segment" text);
  INSERT INTO gasstations SELECT g, g % 7, CASE WHEN g % 3 = 0 THEN 'SVK' ELSE 'CZE' END, 'Premium'
    FROM generate_series(1, 50) g;
  CREATE TABLE meter_readings (id integer PRIMARY KEY, meter_code text, read_on date, consumed_kwh numeric);
  CREATE TABLE sales_zone_151 (id integer PRIMARY KEY, market text, amount numeric, year integer);
  INSERT INTO sales_zone_151 SELECT g, (ARRAY['Czech Republic','Slovakia','Austria'])[1 + g % 3], g * 3, 2020
    FROM generate_series(1, 60) g;
  CREATE TABLE authors (id integer PRIMARY KEY, full_name text, affiliation text);
  CREATE TABLE papers (id integer PRIMARY KEY, title text, venue text, year integer);
  CREATE TABLE writes (aid integer REFERENCES authors(id), pid integer REFERENCES papers(id), PRIMARY KEY (aid, pid));`;
const TABLES = 160 + 40 + 150 + 120 + 6;

/**
 * Schema linking with several hundred tables in ONE PostgreSQL schema (no schema name to narrow by), on
 * the real chat path: a question that names a table only by a compound split, a derived word form, a
 * value, or through its neighbours on a join path gets it described (name and columns) in the first
 * request; the request stays within 40 KB in a long conversation and uses its room; and the model's
 * second chance, the search_schema tool, answers through the test model server.
 */
describe('chat schema linking, hundreds of tables in one schema', () => {
  const info = inject('postgres');
  let s: TestServer;
  let fake: FakeOpenAI;
  let connectionId: string;

  const firstRequestFor = async (message: string, conversationId?: string): Promise<RecordedRequest> => {
    fake.script({ content: 'Noted.' });
    const r = await s.call('POST', '/chat', { body: { message, connectionId, conversationId } });
    expect(r.status, r.text).toBe(200);
    return completions(fake).at(-1)!;
  };

  beforeAll(async () => {
    await createPostgresDatabase(info, DB);
    await postgresAdmin(
      info,
      DB,
      `${DECOYS}
       ${TARGETS}
       GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${info.user};
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
    fake.script({ content: 'A warehouse of stations, meters, sales and papers.' });
    const t = await s.call('POST', `/connections/${connectionId}/test`);
    expect(t.body.data, t.text).toMatchObject({ success: true, tableCount: TABLES });
    // The value index read every table with a text column (all but `writes`), refused none and ended by
    // neither of its budgets: the sampling reads are judged together, in 2 catalog lookups for 475
    // tables (shared/databases/read-set.ts), so the time budget is far from reached even under load.
    const values = (await loadSchema(s.app.orgId, connectionId))?.values;
    expect(values?.stats, 'the value index of the introspection').toMatchObject({
      tablesRead: TABLES - 1,
      failures: 0,
      refused: 0,
      stoppedBy: null,
    });
  }, 240_000);
  afterAll(async () => {
    await s?.stop();
    await fake?.stop();
  });
  beforeEach(() => {
    expect(fake.pending(), 'every scripted turn of the previous test was used').toBe(0);
    fake.reset();
  });

  const described = (system: string, table: string, columns: string[]) => {
    const b = block(system, table);
    expect(b, `${table} is described`).not.toBe('');
    for (const c of columns) expect(b, `${table} shows ${c}`).toContain(c);
  };

  it('describes a table the question names only by its compound split into words', async () => {
    const system = systemText(await firstRequestFor('How many gas stations are there in all?'));
    described(system, 'gasstations', ['GasStationID', 'Country', 'ChainID']);
  });

  it('describes a table the question names only by a derived form of a column word', async () => {
    const system = systemText(await firstRequestFor('What was the monthly electricity consumption in 2013?'));
    described(system, 'meter_readings', ['consumed_kwh', 'read_on']);
  });

  it('describes the table holding a value the question names: the value index at introspection, then annotations', async () => {
    const question = 'What were the total sales in the Czech Republic?';
    // The value index sampled at introspection already knows the value: one of 151 sales tables alike
    // in every name and column holds it.
    const before = systemText(await firstRequestFor(question));
    described(before, 'sales_zone_151', ['market', 'amount']);
    expect(block(before, 'sales_zone_151')).toContain('[value: "Czech Republic"]');

    const wanted = ['sales_zone_151', ...Array.from({ length: 10 }, (_, i) => `sales_area_${pad(i)}`)];
    for (const _ of wanted) fake.script({ content: 'not JSON' });
    const r = await s.call('POST', `/connections/${connectionId}/annotations/auto`, {
      body: { tables: wanted },
    });
    expect(r.status, r.text).toBe(202);
    // The job annotates the 11 tables one after another in the background (a read and a model turn
    // each): waited for as long as that work takes on a loaded machine, until every table has its
    // annotations and the model has answered every scripted turn.
    const annotated = async (table: string) =>
      (
        (await s.call('GET', `/connections/${connectionId}/annotations?table=${table}&pageSize=100`)).body
          .data as Array<{ columnName: string | null; examples: string | null }>
      ).find(
        (a) =>
          a.columnName === 'market' && (table !== 'sales_zone_151' || a.examples?.includes('Czech Republic')),
      );
    await waitFor(
      'annotations of sales_zone_151 and the decoys',
      async () => fake.pending() === 0 && (await Promise.all(wanted.map(annotated))).every(Boolean),
      150_000,
    );
    fake.reset();

    const system = systemText(await firstRequestFor(question));
    described(system, 'sales_zone_151', ['market', 'amount']);
    expect(block(system, 'sales_zone_151')).toContain('Czech Republic');
    // It comes before every decoy: the first table described in full.
    expect(system.indexOf('TABLE sales_zone_151')).toBeLessThan(system.indexOf('TABLE sales_area_'));
  }, 180_000);

  it('describes the bridge table on the join path between two named tables', async () => {
    const system = systemText(await firstRequestFor('Which authors have the most papers?'));
    described(system, 'authors', ['full_name']);
    described(system, 'papers', ['title']);
    described(system, 'writes', ['aid integer PK → authors.id', 'pid integer PK → papers.id']);
  });

  it('fills the first request up to 40 KB and stays within it in a long conversation', async () => {
    let conversationId: string | undefined;
    const long = (i: number) =>
      `Question ${i} about gas stations per country and chain, ${'with a lot of detail about stations '.repeat(60)}`;
    const sql = 'SELECT "Country", count(*) FROM gasstations GROUP BY 1';
    for (let i = 0; i < 4; i++) {
      fake.script(
        { toolCalls: [{ name: 'run_query', arguments: { sql } }] },
        { content: `Answer ${i}: ${'the countries differ; '.repeat(80)}` },
      );
      const r = await s.call('POST', '/chat', { body: { message: long(i), connectionId, conversationId } });
      expect(r.status, r.text).toBe(200);
      expect(r.body.data.sqlQuery).toBe(sql);
      conversationId = r.body.data.conversationId;
    }
    const first = completions(fake)[0];
    for (const req of completions(fake))
      expect(Buffer.byteLength(req.raw)).toBeLessThanOrEqual(FIRST_PROMPT_LIMIT);
    // The budget is used: far more than the old 24,000 characters of schema, many tables described.
    expect(Buffer.byteLength(first.raw)).toBeGreaterThan(30_000);
    expect(systemText(first).match(/^TABLE /gm)?.length).toBeGreaterThan(60);
    // Then the next best-ranked tables by name only.
    expect(systemText(first)).toMatch(/Other tables \(\d+, the next best matches first; not described above/);

    const req = await firstRequestFor('And only for Slovakia?', conversationId);
    expect(Buffer.byteLength(req.raw)).toBeLessThanOrEqual(FIRST_PROMPT_LIMIT);
    expect(req.body.messages.length).toBeGreaterThan(2);
    described(systemText(req), 'gasstations', ['Country']);
  }, 120_000);

  it('gives the model a second chance: search_schema ranks the whole schema and returns tables with columns', async () => {
    fake.script(
      (req) => {
        expect(req.body.tools.map((t: any) => t.function.name)).toContain('search_schema');
        return {
          toolCalls: [{ name: 'search_schema', arguments: { query: 'kilowatt hours consumed by meters' } }],
        };
      },
      (req) => {
        const reply = JSON.parse(req.body.messages.at(-1).content);
        expect(reply.ok).toBe(true);
        expect(reply.tables[0]).toMatch(
          /^TABLE meter_readings \(~\d+ rows\): id integer PK, meter_code text/,
        );
        expect(reply.tables[0]).toContain('consumed_kwh numeric');
        expect(JSON.stringify(reply).length).toBeLessThanOrEqual(6_000);
        return { toolCalls: [{ name: 'search_schema', arguments: {} }] };
      },
      (req) => {
        expect(JSON.parse(req.body.messages.at(-1).content)).toMatchObject({ ok: false });
        return { content: 'meter_readings holds the consumption.' };
      },
    );
    const r = await s.call('POST', '/chat', { body: { message: 'Where is energy use kept?', connectionId } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.steps.map((st: any) => st.action)).toEqual(['search_schema', 'search_schema']);
    expect(r.body.data.steps[0].detail).toMatch(
      /^Searched the schema for "kilowatt hours consumed by meters": \d+ matches$/,
    );
    expect(r.body.data.content).toBe('meter_readings holds the consumption.');
  });
});
