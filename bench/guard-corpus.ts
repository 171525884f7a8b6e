/**
 * The guard's corpus (issue 9): public read queries from `../shared/corpus/` (relative to the
 * repository root; `LOUPE_CORPUS_DIR` overrides), each kept only when the real database accepts it
 * with EXPLAIN on the corpus schemas (embedded PostgreSQL, MariaDB, SQLite). See bench/guard.ts.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { ROOT } from '../infra/functions';
import { type Dialect, lex } from '../shared/guard/lexer';
import type { CatalogQuery } from '../shared/guard/postgres-catalog';
import type { DbServer } from '../test/support/databases';

export type CorpusDialect = 'POSTGRES' | 'MARIADB' | 'SQLITE' | 'MSSQL';

export interface CorpusStatement {
  db: string;
  sql: string;
  source: string;
}

/** The corpus folder: LOUPE_CORPUS_DIR, else `shared/corpus` beside the clone (or further up). */
export function corpusDir(): string | undefined {
  if (process.env.LOUPE_CORPUS_DIR) return resolve(process.env.LOUPE_CORPUS_DIR);
  let dir = dirname(ROOT);
  for (let i = 0; i < 4; i++) {
    const candidate = join(dir, 'shared', 'corpus');
    if (existsSync(join(candidate, 'README.md'))) return candidate;
    dir = dirname(dir);
  }
  return undefined;
}

/** RFC 4180 CSV (quoted fields with commas, quotes and newlines). */
export function parseCsv(text: string): Record<string, string>[] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  if (field || row.length) {
    row.push(field);
    rows.push(row);
  }
  const [head, ...body] = rows.filter((r) => r.length > 1 || r[0] !== '');
  return body.map((r) => Object.fromEntries(head.map((h, i) => [h, r[i] ?? ''])));
}

const lexDialect: Record<CorpusDialect, Dialect> = {
  POSTGRES: 'pg',
  MARIADB: 'mysql',
  SQLITE: 'sqlite',
  MSSQL: 'mssql',
};

/** Splits a `query` cell into its statements (several acceptable answers are separated by `;`). */
export function splitStatements(text: string, dialect: CorpusDialect): string[] {
  const { tokens } = lex(text, { dialect: lexDialect[dialect], backslashEscapes: dialect === 'MARIADB' });
  const out: string[] = [];
  let start = 0;
  for (const t of tokens)
    if (t.kind === 'punct' && t.value === ';') {
      out.push(text.slice(start, t.start));
      start = t.end;
    }
  out.push(text.slice(start));
  return out.map((s) => s.trim()).filter((s) => s.length > 0);
}

const files: Record<CorpusDialect, string[]> = {
  POSTGRES: ['questions_gen_postgres.csv', 'instruct_basic_postgres.csv', 'instruct_advanced_postgres.csv'],
  MARIADB: ['questions_gen_mysql.csv'],
  SQLITE: ['questions_gen_sqlite.csv'],
  MSSQL: ['questions_gen_tsql.csv'],
};

/** Every distinct candidate statement of a dialect, with its database name. */
export function corpusStatements(dir: string, dialect: CorpusDialect): CorpusStatement[] {
  const seen = new Set<string>();
  const out: CorpusStatement[] = [];
  for (const f of files[dialect]) {
    const path = join(dir, 'sql-eval', f);
    if (!existsSync(path)) continue;
    for (const r of parseCsv(readFileSync(path, 'utf8')))
      for (const sql of splitStatements(r.query ?? '', dialect)) {
        const key = `${r.db_name}\u0000${sql}`;
        if (seen.has(key)) continue;
        seen.add(key);
        out.push({ db: r.db_name, sql, source: f });
      }
  }
  return out;
}

interface Column {
  name: string;
  type: string;
}

/** The tables of each corpus database, read from the PostgreSQL dumps in `sql-eval/schemas/`. */
export function corpusSchemas(dir: string): Map<string, Map<string, Column[]>> {
  const out = new Map<string, Map<string, Column[]>>();
  const schemaDir = join(dir, 'sql-eval', 'schemas');
  for (const f of readdirSync(schemaDir).filter((x) => x.endsWith('.sql'))) {
    const tables = new Map<string, Column[]>();
    const text = readFileSync(join(schemaDir, f), 'utf8');
    for (const m of text.matchAll(/CREATE TABLE public\.("?[\w]+"?) \(([\s\S]*?)\n\);/g)) {
      const cols: Column[] = [];
      for (const line of m[2].split('\n')) {
        const c = /^\s+("[^"]+"|\w+) (.+?),?$/.exec(line);
        if (!c || /^(CONSTRAINT|PRIMARY|UNIQUE|CHECK|FOREIGN)$/i.test(c[1])) continue;
        cols.push({ name: c[1].replace(/"/g, ''), type: c[2].replace(/ NOT NULL| DEFAULT .*$/g, '').trim() });
      }
      tables.set(m[1].replace(/"/g, ''), cols);
    }
    out.set(f.replace(/\.sql$/, ''), tables);
  }
  return out;
}

const mariaType = (t: string) => {
  const x = t.toLowerCase();
  if (x === 'text') return 'TEXT';
  if (x === 'bigint') return 'BIGINT';
  if (x === 'integer' || x === 'int') return 'INT';
  if (x === 'boolean') return 'BOOLEAN';
  if (x.startsWith('time without')) return 'TIME';
  if (x.startsWith('timestamp')) return 'DATETIME';
  if (x === 'real') return 'FLOAT';
  if (x === 'double precision') return 'DOUBLE';
  if (x === 'date') return 'DATE';
  if (x.startsWith('numeric')) return 'DECIMAL(30,10)';
  if (x.startsWith('character varying')) return x.replace('character varying', 'VARCHAR');
  return 'TEXT';
};

/** Validators: each answers whether the real database accepts a statement (EXPLAIN). */
export interface Validator {
  accepts(s: CorpusStatement): Promise<boolean>;
  /** PostgreSQL: runs the function rule's catalog lookup on the same server. */
  catalog?: CatalogQuery;
  /** PostgreSQL: makes `db`'s corpus schema the search path of the catalog lookups (as a connection to it would). */
  use?(db: string): Promise<void>;
  close(): Promise<void>;
}

export async function postgresValidator(
  server: DbServer,
  schemas: Map<string, Map<string, Column[]>>,
): Promise<Validator> {
  const client = new pg.Client({
    host: server.host,
    port: server.port,
    database: server.database,
    user: server.adminUser,
    password: server.adminPassword,
  });
  await client.connect();
  for (const [db, tables] of schemas) {
    await client.query(`DROP SCHEMA IF EXISTS corpus_${db} CASCADE; CREATE SCHEMA corpus_${db}`);
    for (const [t, cols] of tables)
      await client.query(
        `CREATE TABLE corpus_${db}."${t}" (${cols.map((c) => `"${c.name}" ${c.type}`).join(', ')})`,
      );
  }
  return {
    async use(db) {
      await client.query(`SET search_path = corpus_${db}, public`);
    },
    async catalog(text, opts) {
      const r = await client.query(text, opts.params);
      return { columns: [], rows: r.rows, rowCount: r.rows.length, executionTime: 0 };
    },
    async accepts(s) {
      if (!schemas.has(s.db)) return false;
      try {
        await client.query(`SET search_path = corpus_${s.db}, public`);
        await client.query(`EXPLAIN ${s.sql}`);
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      for (const db of schemas.keys()) await client.query(`DROP SCHEMA IF EXISTS corpus_${db} CASCADE`);
      await client.end();
    },
  };
}

export async function mariadbValidator(
  server: DbServer,
  schemas: Map<string, Map<string, Column[]>>,
): Promise<Validator> {
  const conn = await mysql.createConnection({
    host: server.host,
    port: server.port,
    user: server.adminUser,
    password: server.adminPassword,
  });
  for (const [db, tables] of schemas) {
    await conn.query(`DROP DATABASE IF EXISTS corpus_${db}`);
    await conn.query(`CREATE DATABASE corpus_${db}`);
    for (const [t, cols] of tables)
      await conn.query(
        `CREATE TABLE corpus_${db}.\`${t}\` (${cols.map((c) => `\`${c.name}\` ${mariaType(c.type)}`).join(', ')})`,
      );
  }
  return {
    async accepts(s) {
      if (!schemas.has(s.db)) return false;
      try {
        await conn.query(`USE corpus_${s.db}`);
        await conn.query(`EXPLAIN ${s.sql}`);
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      for (const db of schemas.keys()) await conn.query(`DROP DATABASE IF EXISTS corpus_${db}`);
      await conn.end();
    },
  };
}

export async function sqliteValidator(schemas: Map<string, Map<string, Column[]>>): Promise<Validator> {
  const dbs = new Map<string, DatabaseSync>();
  for (const [db, tables] of schemas) {
    const d = new DatabaseSync(':memory:');
    for (const [t, cols] of tables)
      d.exec(`CREATE TABLE "${t}" (${cols.map((c) => `"${c.name}" ${c.type}`).join(', ')})`);
    dbs.set(db, d);
  }
  return {
    async accepts(s) {
      const d = dbs.get(s.db);
      if (!d) return false;
      try {
        d.prepare(`EXPLAIN QUERY PLAN ${s.sql}`).all();
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      for (const d of dbs.values()) d.close();
    },
  };
}
