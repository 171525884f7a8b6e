import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import sqlParser from 'node-sql-parser';
import type pg from 'pg';

/**
 * Data of the schema-linking benchmark, all public:
 *  - sql-eval (defog-ai, Apache-2.0; read from the shared corpus, not committed here): PostgreSQL dumps
 *    of seven databases with rows, and questions with reference SQL (questions_gen_postgres.csv);
 *  - Spider (Yu et al. 2018, CC BY-SA 4.0): the table and column names, coarse types and keys of its
 *    166 databases, in bench/data/spider-schemas.json.gz (no rows), as distractor tables.
 * Each source database becomes one PostgreSQL schema of a single warehouse database.
 */

/** Where the sql-eval corpus lives; LOUPE_BENCH_CORPUS overrides. */
/** The team's corpus beside the checkout (`../shared/corpus`), as CI has it; LOUPE_BENCH_CORPUS overrides. */
export const CORPUS_DIR =
  process.env.LOUPE_BENCH_CORPUS ?? join(import.meta.dirname, '..', '..', 'shared', 'corpus', 'sql-eval');

/** Spider databases that are the same as a sql-eval one (their tables would be exact duplicates). */
export const SPIDER_DUPLICATES = new Set(['academic', 'restaurants', 'scholar', 'yelp', 'geo', 'imdb']);

export interface Question {
  db: string;
  question: string;
  sql: string;
  /** Schema-qualified tables of the reference SQL (`academic.author`). */
  tables: string[];
}

const quote = (s: string) => `"${s.replaceAll('"', '""')}"`;

/** RFC 4180 CSV (quoted fields with doubled quotes and newlines). */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(field);
      field = '';
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += ch;
  }
  if (field || row.length) rows.push([...row, field]);
  return rows.filter((r) => r.length > 1 || r[0] !== '');
}

const parser = new sqlParser.Parser();

/**
 * Tables of a reference query, parsed with node-sql-parser. sql-eval writes accepted variants as
 * `{a.x, a.y}` column sets and `GROUP BY {}`, and separates alternative answers with `;`: the braces are
 * resolved and the first alternative that parses is used. Names that are not tables of the database
 * (CTE names) are dropped; null when nothing parses.
 */
export function referenceTables(sql: string, known: Set<string>): string[] | null {
  const cleaned = sql.replace(/GROUP BY\s*\{\s*\}\s*,?/gi, 'GROUP BY 1,').replace(/[{}]/g, '');
  for (const alt of cleaned.split(';')) {
    const text = alt.trim().replace(/GROUP BY 1,\s*(ORDER|LIMIT|HAVING|$)/gi, 'GROUP BY 1 $1');
    if (!text) continue;
    try {
      const list = parser.tableList(text, { database: 'Postgresql' });
      const names = [...new Set(list.map((e) => e.split('::')[2].toLowerCase()))].filter((n) => known.has(n));
      if (names.length) return names;
    } catch {
      // try the next alternative
    }
  }
  return null;
}

/** Decodes one field of PostgreSQL's COPY text format. */
const copyField = (f: string): string | null =>
  f === '\\N'
    ? null
    : f.replace(/\\(.)/g, (_, c: string) => ({ t: '\t', n: '\n', r: '\r', b: '\b', f: '\f' })[c] ?? c);

/**
 * Loads a pg_dump plain-text file into schema `db`: tables, constraints and indexes (with `public.`
 * replaced by the schema), and the COPY data as batched INSERTs. Owner, ACL and session settings are
 * skipped. With `into`, the tables go into that existing schema instead, renamed by `into.tableName`,
 * and the dump's other names (sequences, constraints, indexes) get the prefix `db_` so that several
 * databases can share the schema.
 */
export async function loadDump(
  client: pg.Client,
  db: string,
  file: string,
  into?: { schema: string; tableName: (table: string) => string },
): Promise<number> {
  const lines = readFileSync(file, 'utf8').split('\n');
  const target = into?.schema ?? db;
  if (!into) await client.query(`CREATE SCHEMA ${quote(db)}`);
  await client.query(`SET search_path = ${quote(target)}`);
  const tables = new Set(
    lines.flatMap((l) => /^CREATE TABLE public\.(\w+) \($/.exec(l)?.[1] ?? []).map((t) => t.toLowerCase()),
  );
  const rename = (name: string) =>
    !into
      ? name
      : tables.has(name.toLowerCase())
        ? quote(into.tableName(name.toLowerCase()))
        : `${db}_${name}`;
  const qualify = (s: string) => {
    const out = s.replace(/\bpublic\.(\w+)/g, (_, n: string) => `${quote(target)}.${rename(n)}`);
    return into
      ? out
          .replace(/\bADD CONSTRAINT (\w+)/g, `ADD CONSTRAINT ${db}_$1`)
          .replace(/^CREATE (UNIQUE )?INDEX (\w+)/, `CREATE $1INDEX ${db}_$2`)
      : out;
  };
  let stmt = '';
  let rows = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const copy = /^COPY public\.(\S+) \(([^)]*)\) FROM stdin;$/.exec(line);
    if (copy) {
      const data: Array<Array<string | null>> = [];
      for (i++; i < lines.length && lines[i] !== '\\.'; i++) data.push(lines[i].split('\t').map(copyField));
      const cols = copy[2].split(',').map((c) => c.trim());
      for (let k = 0; k < data.length; k += 200) {
        const batch = data.slice(k, k + 200);
        const values = batch
          .map((_, r) => `(${cols.map((__, c) => `$${r * cols.length + c + 1}`).join(', ')})`)
          .join(', ');
        await client.query(
          `INSERT INTO ${quote(target)}.${rename(copy[1])} (${cols.join(', ')}) VALUES ${values}`,
          batch.flat(),
        );
      }
      rows += data.length;
      continue;
    }
    if (!stmt && (line.startsWith('--') || !line.trim())) continue;
    stmt += `${line}\n`;
    if (!line.trimEnd().endsWith(';')) continue;
    const s = stmt.trim();
    stmt = '';
    if (
      /^(SET |SELECT pg_catalog\.|REVOKE |GRANT |COMMENT ON SCHEMA|CREATE SCHEMA|ALTER SCHEMA|ALTER DEFAULT)/.test(
        s,
      ) ||
      /OWNER TO /.test(s)
    )
      continue;
    await client.query(qualify(s));
  }
  return rows;
}

export type SpiderTable = {
  name: string;
  columns: Array<[string, string]>;
  primaryKey: string[];
  foreignKeys: Array<[string, string, string]>;
};

const SPIDER_TYPE: Record<string, string> = {
  text: 'text',
  number: 'numeric',
  time: 'timestamp',
  boolean: 'boolean',
  others: 'text',
};

export function spiderSchemas(): Array<[string, SpiderTable[]]> {
  const raw = gunzipSync(readFileSync(new URL('./data/spider-schemas.json.gz', import.meta.url)));
  const all = JSON.parse(raw.toString('utf8')) as Record<string, SpiderTable[]>;
  return Object.entries(all)
    .filter(([db]) => !SPIDER_DUPLICATES.has(db.toLowerCase()))
    .sort(([a], [b]) => a.localeCompare(b));
}

/**
 * Creates a Spider database's tables (no rows) in schema `db`, with its primary and foreign keys; with
 * `into`, in that existing schema instead, each table renamed by `into.tableName`.
 */
export async function loadSpider(
  client: pg.Client,
  db: string,
  tables: SpiderTable[],
  into?: { schema: string; tableName: (table: string) => string },
): Promise<number> {
  const target = into?.schema ?? db;
  if (!into) await client.query(`CREATE SCHEMA ${quote(db)}`);
  const named = (t: string) => `${quote(target)}.${quote(into ? into.tableName(t) : t)}`;
  let created = 0;
  const pkOf = new Map<string, string[]>();
  for (const t of tables) {
    const cols = t.columns.map(([c, type]) => `${quote(c)} ${SPIDER_TYPE[type] ?? 'text'}`);
    const pk = t.primaryKey.filter((c) => t.columns.some(([n]) => n === c));
    if (pk.length) cols.push(`PRIMARY KEY (${pk.map(quote).join(', ')})`);
    try {
      await client.query(`CREATE TABLE ${named(t.name)} (${cols.join(', ')})`);
      pkOf.set(t.name, pk);
      created++;
    } catch {
      // a name PostgreSQL folds onto another table's: skipped
    }
  }
  for (const t of tables)
    for (const [col, refTable, refCol] of t.foreignKeys) {
      const pk = pkOf.get(refTable);
      if (!pkOf.has(t.name) || !pk || pk.length !== 1 || pk[0] !== refCol) continue;
      await client
        .query(
          `ALTER TABLE ${named(t.name)} ADD FOREIGN KEY (${quote(col)}) REFERENCES ${named(refTable)} (${quote(refCol)})`,
        )
        .catch(() => {}); // Spider declares a few keys between columns of different types: skipped
    }
  return created;
}

/** The sql-eval databases present in the corpus (schema dumps). */
export function sqlEvalDatabases(): string[] {
  const dir = join(CORPUS_DIR, 'schemas');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .map((f) => f.slice(0, -4))
    .sort();
}

/** Tables of each loaded database, lowercase bare names. */
export async function tablesBySchema(
  client: pg.Client,
  schemas: string[],
): Promise<Map<string, Set<string>>> {
  const r = await client.query<{ s: string; t: string }>(
    `SELECT table_schema AS s, table_name AS t FROM information_schema.tables WHERE table_schema = ANY($1)`,
    [schemas],
  );
  const out = new Map<string, Set<string>>();
  for (const { s, t } of r.rows) {
    if (!out.has(s)) out.set(s, new Set());
    out.get(s)!.add(t.toLowerCase());
  }
  return out;
}

/** Questions of sql-eval's questions_gen_postgres.csv on the loaded databases, with their tables. */
export function questions(known: Map<string, Set<string>>): { questions: Question[]; skipped: number } {
  const rows = parseCsv(readFileSync(join(CORPUS_DIR, 'questions_gen_postgres.csv'), 'utf8'));
  const head = rows[0];
  const col = (n: string) => head.indexOf(n);
  const out: Question[] = [];
  let skipped = 0;
  for (const r of rows.slice(1)) {
    const db = r[col('db_name')];
    const tables = known.get(db);
    if (!tables) continue;
    const sql = r[col('query')];
    const refs = referenceTables(sql, tables);
    if (!refs) {
      skipped++;
      continue;
    }
    out.push({ db, question: r[col('question')], sql, tables: refs.map((t) => `${db}.${t}`) });
  }
  return { questions: out, skipped };
}
