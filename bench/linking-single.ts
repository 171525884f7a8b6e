import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { firstSchemaContext } from '../shared/chat/assistant';
import { buildMessages } from '../shared/chat/prompt';
import type { NoteLike } from '../shared/chat/schema-context';
import { schemaSearchReply } from '../shared/chat/schema-search';
import { toolDefinitions } from '../shared/chat/tools';
import { listAnnotationsOf } from '../shared/connections/annotations';
import { runAutoAnnotation } from '../shared/connections/auto-annotate';
import { buildIndex, schemaKey } from '../shared/connections/schema-index';
import { loadSchema } from '../shared/connections/schema-store';
import { type ColumnValues, usableValues } from '../shared/connections/value-index';
import type { TableInfo } from '../shared/databases/drivers/types';
import type { DbServer } from '../test/support/databases';
import type { TestServer } from '../test/support/server';
import {
  CORPUS_DIR,
  loadDump,
  loadSpider,
  questions,
  type SpiderTable,
  spiderSchemas,
  sqlEvalDatabases,
} from './linking-data';
import { loadKaggleSplit } from './linking-dbsplit';

/**
 * The single-schema linking benchmarks: every database's tables side by side in ONE PostgreSQL schema
 * (`public`), as real warehouses keep them, so the schema name no longer tells the ranking where the
 * answer is.
 *  - sql-eval single: the seven sql-eval databases (with rows) plus the Spider schemas of
 *    bench/data/spider-schemas.json.gz as neighbours (no rows);
 *  - Spider dev single: Spider's dev questions (dev.json) over the tables of all its 166 databases
 *    (tables.json; no rows), read from LOUPE_BENCH_SPIDER (default /work/data/spider; not committed:
 *    CC BY-SA 4.0, get `dev.json` and `tables.json` from the Spider release).
 * Names: a table keeps its own name unless an earlier database (in the order of the SHA-256 of the
 * database names) already took it, case-insensitively; then it becomes `name_2`, `name_3`, … (never a
 * database prefix, which would hand the ranking the answer).
 * Split: a question is in the tuning half when the first byte of the SHA-256 of its text is even, else
 * in the held-out half.
 */

export const SPIDER_DIR = process.env.LOUPE_BENCH_SPIDER ?? '/work/data/spider';

export interface SingleQuestion {
  question: string;
  /** Tables of the reference SQL, as named in the single schema. */
  tables: string[];
  half: 'tuning' | 'held-out';
}

export interface SingleBench {
  name: string;
  tables: TableInfo[];
  notes: NoteLike[];
  /** The value index sampled when the warehouse was introspected (usable values). */
  values: ColumnValues[];
  questions: SingleQuestion[];
  /** What was loaded, for the notes. */
  about: string;
}

const sha = (s: string) => createHash('sha256').update(s).digest();
export const halfOf = (question: string): SingleQuestion['half'] =>
  sha(question)[0] % 2 === 0 ? 'tuning' : 'held-out';

/** The collision rule above: `db` → original lowercase table name → name in the single schema. */
export function assignNames(dbs: Array<[string, string[]]>): Map<string, Map<string, string>> {
  const taken = new Set<string>();
  const out = new Map<string, Map<string, string>>();
  const ordered = [...dbs].sort(([a], [b]) => sha(a).compare(sha(b)));
  for (const [db, tables] of ordered) {
    const names = new Map<string, string>();
    for (const t of tables) {
      let name = t;
      for (let n = 2; taken.has(name.toLowerCase()) || name.length > 63; n++) name = `${t.slice(0, 58)}_${n}`;
      taken.add(name.toLowerCase());
      names.set(t.toLowerCase(), name);
    }
    out.set(db, names);
  }
  return out;
}

/** Tables referenced anywhere in a Spider `sql` object (its `["table_unit", index]` pairs). */
export function spiderTableIds(sql: unknown, out = new Set<number>()): Set<number> {
  if (Array.isArray(sql)) {
    if (sql.length === 2 && sql[0] === 'table_unit' && typeof sql[1] === 'number') out.add(sql[1]);
    else for (const x of sql) spiderTableIds(x, out);
  } else if (sql && typeof sql === 'object') for (const x of Object.values(sql)) spiderTableIds(x, out);
  return out;
}

interface SpiderDb {
  db_id: string;
  table_names_original: string[];
  column_names_original: Array<[number, string]>;
  column_types: string[];
  primary_keys: Array<number | number[]>;
  foreign_keys: Array<[number, number]>;
}

/** Spider's tables.json entry as the loader's table list. */
function spiderTables(d: SpiderDb): SpiderTable[] {
  const cols = d.column_names_original;
  return d.table_names_original.map((name, ti) => ({
    name,
    columns: cols.flatMap(([t, c], ci) => (t === ti ? [[c, d.column_types[ci]] as [string, string]] : [])),
    primaryKey: d.primary_keys.flat().flatMap((ci) => (cols[ci]?.[0] === ti ? [cols[ci][1]] : [])),
    foreignKeys: d.foreign_keys.flatMap(([a, b]) =>
      cols[a]?.[0] === ti
        ? [[cols[a][1], d.table_names_original[cols[b][0]], cols[b][1]] as [string, string, string]]
        : [],
    ),
  }));
}

/** Whether Spider's dev set is present (dev.json and tables.json under SPIDER_DIR). */
export const spiderPresent = () =>
  existsSync(join(SPIDER_DIR, 'dev.json')) && existsSync(join(SPIDER_DIR, 'tables.json'));

async function freshDatabase(pgServer: DbServer, name: string): Promise<pg.Client> {
  const settings = {
    host: pgServer.host,
    port: pgServer.port,
    user: pgServer.adminUser,
    password: pgServer.adminPassword,
  };
  const admin = new pg.Client({ ...settings, database: pgServer.database });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const client = new pg.Client({ ...settings, database: name });
  await client.connect();
  return client;
}

/** Loads the sql-eval single-schema warehouse into database `single_sqleval`; its questions. */
async function loadSqlEvalSingle(pgServer: DbServer) {
  const client = await freshDatabase(pgServer, 'single_sqleval');
  try {
    const evalDbs = sqlEvalDatabases();
    const dumpTables = (db: string) =>
      readFileSync(join(CORPUS_DIR, 'schemas', `${db}.sql`), 'utf8')
        .split('\n')
        .flatMap((l) => /^CREATE TABLE public\.(\w+) \($/.exec(l)?.[1] ?? [])
        .map((t) => t.toLowerCase());
    const spider = spiderSchemas();
    const names = assignNames([
      ...evalDbs.map((db) => [db, dumpTables(db)] as [string, string[]]),
      ...spider.map(([db, ts]) => [`spider:${db}`, ts.map((t) => t.name)] as [string, string[]]),
    ]);
    let rows = 0;
    for (const db of evalDbs)
      rows += await loadDump(client, db, join(CORPUS_DIR, 'schemas', `${db}.sql`), {
        schema: 'public',
        tableName: (t) => names.get(db)!.get(t.toLowerCase())!,
      });
    for (const [db, ts] of spider)
      await loadSpider(client, `spider:${db}`, ts, {
        schema: 'public',
        tableName: (t) => names.get(`spider:${db}`)!.get(t.toLowerCase())!,
      });
    await client.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${pgServer.user}`);
    await client.query('ANALYZE');
    const known = new Map(evalDbs.map((db) => [db, new Set(dumpTables(db))]));
    const { questions: qs, skipped } = questions(known);
    const out: SingleQuestion[] = qs.map((q) => ({
      question: q.question,
      tables: q.tables.map((t) => names.get(q.db)!.get(t.slice(q.db.length + 1))!),
      half: halfOf(q.question),
    }));
    return {
      questions: out,
      about: `${evalDbs.length} sql-eval databases (${rows.toLocaleString('en-US')} rows) and ${spider.length} Spider schemas without rows in one schema; ${out.length} questions (${skipped} skipped: reference SQL not parsable)`,
    };
  } finally {
    await client.end();
  }
}

/** Loads the KaggleDBQA warehouse (split by database, bench/linking-dbsplit.ts) into `split_kaggledbqa`. */
async function loadKaggleSingle(pgServer: DbServer) {
  const client = await freshDatabase(pgServer, 'split_kaggledbqa');
  try {
    const loaded = await loadKaggleSplit(client, assignNames);
    await client.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${pgServer.user}`);
    await client.query('ANALYZE');
    return loaded;
  } finally {
    await client.end();
  }
}

/** Loads every Spider database's tables into database `single_spider`; the dev questions. */
async function loadSpiderSingle(pgServer: DbServer) {
  const dbs = JSON.parse(readFileSync(join(SPIDER_DIR, 'tables.json'), 'utf8')) as SpiderDb[];
  const dev = JSON.parse(readFileSync(join(SPIDER_DIR, 'dev.json'), 'utf8')) as Array<{
    db_id: string;
    question: string;
    sql: unknown;
  }>;
  const client = await freshDatabase(pgServer, 'single_spider');
  try {
    const names = assignNames(dbs.map((d) => [d.db_id, d.table_names_original]));
    for (const d of dbs)
      await loadSpider(client, d.db_id, spiderTables(d), {
        schema: 'public',
        tableName: (t) => names.get(d.db_id)!.get(t.toLowerCase())!,
      });
    await client.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${pgServer.user}`);
    const byId = new Map(dbs.map((d) => [d.db_id, d]));
    const out: SingleQuestion[] = dev.map((q) => ({
      question: q.question,
      tables: [...spiderTableIds(q.sql)].map(
        (i) => names.get(q.db_id)!.get(byId.get(q.db_id)!.table_names_original[i].toLowerCase())!,
      ),
      half: halfOf(q.question),
    }));
    const devDbs = new Set(dev.map((q) => q.db_id)).size;
    return {
      questions: out,
      about: `${dbs.length} Spider databases (${devDbs} of them the dev set's), no rows, in one schema; ${out.length} dev questions`,
    };
  } finally {
    await client.end();
  }
}

/**
 * Loads both warehouses, adds a connection for each through the running server, introspects and
 * annotates them (automatic annotation: sampled values), and returns tables and notes as chat sees them.
 * `cacheDir`: read/write the result there (for tuning runs; never committed).
 */
export async function loadSingleBenches(
  pgServer: DbServer,
  server: TestServer,
  cacheDir?: string,
): Promise<{ benches: SingleBench[]; missing: string[] }> {
  const cacheFile = cacheDir && join(cacheDir, 'linking-single.json');
  if (cacheFile && existsSync(cacheFile))
    return { benches: JSON.parse(readFileSync(cacheFile, 'utf8')), missing: [] };
  const missing: string[] = [];
  const sets: Array<{
    name: string;
    database: string;
    load: () => Promise<{ questions: SingleQuestion[]; about: string }>;
  }> = [
    { name: 'sql-eval single schema', database: 'single_sqleval', load: () => loadSqlEvalSingle(pgServer) },
    {
      name: 'KaggleDBQA split by database',
      database: 'split_kaggledbqa',
      load: () => loadKaggleSingle(pgServer),
    },
  ];
  if (spiderPresent())
    sets.push({
      name: 'Spider dev single schema',
      database: 'single_spider',
      load: () => loadSpiderSingle(pgServer),
    });
  else
    missing.push(
      `Spider dev single schema: skipped, ${SPIDER_DIR}/dev.json and tables.json not found. Get Spider (CC BY-SA 4.0) and set LOUPE_BENCH_SPIDER to the folder holding them.`,
    );
  const benches: SingleBench[] = [];
  for (const set of sets) {
    const { questions: qs, about } = await set.load();
    const created = await server.call('POST', '/connections', {
      body: {
        name: set.name,
        type: 'POSTGRES',
        host: pgServer.host,
        port: pgServer.port,
        database: set.database,
        username: pgServer.user,
        password: pgServer.password,
      },
    });
    if (created.status !== 201) throw new Error(created.text);
    const connectionId = created.body.data.id as string;
    const test = await server.call('POST', `/connections/${connectionId}/test`);
    if (!test.body.data?.success) throw new Error(test.text);
    const { orgId, adminUserId } = server.app;
    await runAutoAnnotation({
      orgId,
      connectionId,
      tables: null,
      requestedBy: adminUserId,
      requestedAt: new Date().toISOString(),
    });
    const cached = await loadSchema(orgId, connectionId);
    const tables = cached?.schema.tables ?? [];
    const annotations = await listAnnotationsOf(orgId, connectionId);
    const notes = annotations.map((n) => ({
      tableName: n.tableName,
      columnName: n.columnName,
      annotation: n.annotation,
      dataType: n.dataType,
      examples: n.examples,
      source: n.source,
    })) as NoteLike[];
    const values = usableValues(cached?.values, annotations);
    benches.push({
      name: set.name,
      tables,
      notes,
      values,
      questions: qs,
      about: `${set.name}: ${tables.length} tables; ${about}; value index: ${cached?.values?.stats.columnsKept ?? 0} columns of ${cached?.values?.stats.tablesRead ?? 0} tables read, ${cached?.values?.stats.chars ?? 0} characters of values${cached?.values?.stats.stoppedBy ? ` (stopped by ${cached.values.stats.stoppedBy})` : ''}`,
    });
  }
  if (cacheFile) {
    mkdirSync(cacheDir!, { recursive: true });
    writeFileSync(cacheFile, JSON.stringify(benches));
  }
  return { benches, missing };
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Whether a text describes a table with its columns: a `TABLE name` line followed by column lines, or
 * the one-line form `TABLE name …: col type, …`. A name in the "Other tables" list does not count.
 */
export function describes(text: string, table: string): boolean {
  const lines = text.split('\n');
  const head = new RegExp(`^(TABLE|VIEW) ${escapeRe(table)}( \\(~[\\d,]+ rows\\))?(:| --|$| comment)`, 'i');
  return lines.some(
    (l, i) => head.test(l) && (/: \S/.test(l.slice(table.length + 6)) || /^ {2}\S/.test(lines[i + 1] ?? '')),
  );
}

export interface SingleOutcome {
  half: SingleQuestion['half'];
  first: boolean;
  afterSearch: boolean;
  bytes: number;
  ms: number;
  missing: string[];
  question: string;
}

/**
 * One question: the first request exactly as chat builds it (firstSchemaContext, buildMessages, the
 * tool definitions), timed; recall of that request; then recall after one search_schema call with the
 * question's text as its query (what a model that saw nothing useful would send).
 */
export function evaluate(bench: SingleBench, q: SingleQuestion): SingleOutcome {
  const input = {
    connection: { id: 'bench', name: 'Warehouse', type: 'POSTGRES' as const, database: 'warehouse' },
    tables: bench.tables,
    notes: bench.notes,
    values: bench.values ?? [],
    // As chat keys the index: from the cache's time stamp and the annotations' last change.
    schemaKey: schemaKey(`bench:${bench.name}`, 'cached', bench.notes),
    schemaSummary: null,
    history: [],
    question: q.question,
  };
  const t0 = performance.now();
  const schema = firstSchemaContext(input);
  const ms = performance.now() - t0;
  const messages = buildMessages({ ...input, schema });
  const tools = toolDefinitions('POSTGRES', true);
  const bytes = Buffer.byteLength(
    JSON.stringify({
      model: 'bench-model',
      messages,
      tools,
      tool_choice: 'auto',
      temperature: 0,
      stream: false,
    }),
  );
  const system = messages[0].content as string;
  const missing = q.tables.filter((t) => !describes(system, t));
  let afterSearch = missing.length === 0;
  if (!afterSearch) {
    const reply = schemaSearchReply(bench.tables, bench.notes, q.question, bench.values ?? []);
    afterSearch = missing.every((t) => describes(reply, t));
  }
  return { half: q.half, first: missing.length === 0, afterSearch, bytes, ms, missing, question: q.question };
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const kb = (n: number) => `${(n / 1000).toFixed(1)} KB`;

/** Report rows (one per benchmark and half) and the figures over target. */
export function singleReport(
  benches: SingleBench[],
  targets: { recall: number; bytes: number; ms: number },
): { rows: string[][]; notes: string[]; over: string[] } {
  const rows: string[][] = [];
  const notes: string[] = [];
  const over: string[] = [];
  for (const b of benches) {
    const outcomes = b.questions.map((q) => evaluate(b, q));
    for (const half of ['tuning', 'held-out'] as const) {
      const os = outcomes.filter((o) => o.half === half);
      const n = os.length;
      if (!n) continue;
      const first = os.filter((o) => o.first).length;
      const after = os.filter((o) => o.afterSearch).length;
      const bytes = os.map((o) => o.bytes);
      const ms = os.map((o) => o.ms).sort((a, c) => a - c);
      const meanMs = ms.reduce((a, c) => a + c, 0) / n;
      const maxBytes = Math.max(...bytes);
      const recallOk = half === 'tuning' || first / n >= targets.recall;
      if (!recallOk)
        over.push(
          `linking ${b.name} (held-out): first-request recall ${pct(first / n)} < ${pct(targets.recall)}`,
        );
      if (maxBytes > targets.bytes)
        over.push(`linking ${b.name} (${half}): largest first request ${kb(maxBytes)}`);
      if (meanMs > targets.ms)
        over.push(`linking ${b.name} (${half}): ranking ${meanMs.toFixed(1)} ms per question`);
      rows.push([
        `${b.name}, ${half}`,
        `${pct(first / n)} (${first}/${n})${recallOk ? '' : ' ✗'}`,
        `${pct(after / n)} (${after}/${n})`,
        kb(bytes.reduce((a, c) => a + c, 0) / n),
        `${kb(maxBytes)}${maxBytes > targets.bytes ? ' ✗' : ''}`,
        `${meanMs.toFixed(1)} ms (p95 ${ms[Math.floor(n * 0.95)].toFixed(1)}, max ${ms[n - 1].toFixed(1)})`,
      ]);
    }
    const t0 = performance.now();
    buildIndex(b.tables, b.notes, b.values ?? []);
    notes.push(
      `${b.about}. Index build (once per schema and annotations; later questions reuse it): ${(performance.now() - t0).toFixed(0)} ms.`,
    );
    const misses = outcomes.filter((o) => o.half === 'tuning' && !o.first);
    if (misses.length)
      notes.push(
        `  Missed in the tuning half (first ones): ${misses
          .slice(0, Number(process.env.LOUPE_BENCH_MISSES ?? 6))
          .map((o) => `"${o.question}" — missing ${o.missing.join(', ')}`)
          .join('; ')}`,
      );
  }
  return { rows, notes, over };
}
