import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import type pg from 'pg';
import { loadSpider, spiderSchemas } from './linking-data';
import type { SingleQuestion } from './linking-single';

/**
 * The database-split linking benchmark: KaggleDBQA (Lee et al., ACL 2021; CC BY-SA 4.0), a public
 * text-to-SQL corpus of eight real-world databases that no other benchmark here uses, merged into ONE
 * PostgreSQL schema with Spider's tables as unrelated neighbours (as the other warehouses are).
 *
 * Split, fixed before any tuning: a database is in the HELD-OUT half when the first byte of the SHA-256
 * of `kaggledbqa:<db_id>` is odd, else in the tuning half (held-out: Pesticide, USWildFires,
 * StudentMathScore, GreaterManchesterCrime; tuning: WorldSoccerDataBase, GeoNuclearData, WhatCDHipHop,
 * TheHistoryofBaseball). Every question of a database is in its database's half; ranking is tuned on the
 * tuning half only, and the held-out half is measured only to report.
 *
 * What each database brings (bench/data/kaggledbqa.json.gz, made by bench/data/make-kaggledbqa.mjs):
 * tables with their original names, coarse types and keys; the documentation's column descriptions as
 * PostgreSQL column comments and its one-line overview as each table's comment (what a documented
 * warehouse has); and its documented value lists (`value_enums`) as rows, one per listed value, so that
 * the value index samples real values of those columns (the databases' own rows are not in the corpus:
 * only the columns with documented values have rows). Questions have no hints.
 */

const sha = (s: string) => createHash('sha256').update(s).digest();

/** The half of a KaggleDBQA database (the fixed rule above). */
export const dbHalf = (db: string): SingleQuestion['half'] =>
  sha(`kaggledbqa:${db}`)[0] % 2 === 0 ? 'tuning' : 'held-out';

interface KaggleColumn {
  name: string;
  type: string;
  description?: string;
  values?: Record<string, string>;
}
interface KaggleTable {
  name: string;
  columns: KaggleColumn[];
  primaryKey: string[];
  foreignKeys: Array<[string, string, string]>;
}
interface KaggleData {
  databases: Record<string, { overview: string | null; tables: KaggleTable[] }>;
  questions: Array<{ db: string; question: string; tables: string[] }>;
}

export const kaggleData = (): KaggleData =>
  JSON.parse(
    gunzipSync(readFileSync(new URL('./data/kaggledbqa.json.gz', import.meta.url))).toString('utf8'),
  ) as KaggleData;

const quote = (s: string) => `"${s.replaceAll('"', '""')}"`;
const literal = (s: string) => `'${s.replaceAll("'", "''")}'`;
const TYPE: Record<string, string> = { text: 'text', number: 'numeric', time: 'text', boolean: 'boolean' };

/**
 * Loads the KaggleDBQA warehouse into the connected (empty) database's `public` schema; returns its
 * questions (tables named as in that schema) and a line saying what was loaded.
 */
export async function loadKaggleSplit(
  client: pg.Client,
  assignNames: (dbs: Array<[string, string[]]>) => Map<string, Map<string, string>>,
): Promise<{ questions: SingleQuestion[]; about: string }> {
  const data = kaggleData();
  const spider = spiderSchemas();
  const names = assignNames([
    ...Object.entries(data.databases).map(
      ([db, d]) => [`kaggle:${db}`, d.tables.map((t) => t.name)] as [string, string[]],
    ),
    ...spider.map(([db, ts]) => [`spider:${db}`, ts.map((t) => t.name)] as [string, string[]]),
  ]);
  let rows = 0;
  for (const [db, d] of Object.entries(data.databases)) {
    const nameOf = (t: string) => names.get(`kaggle:${db}`)!.get(t.toLowerCase())!;
    for (const t of d.tables) {
      const table = quote(nameOf(t.name));
      const cols = t.columns.map((c) => `${quote(c.name)} ${TYPE[c.type] ?? 'text'}`);
      await client.query(`CREATE TABLE ${table} (${cols.join(', ')})`);
      if (d.overview) await client.query(`COMMENT ON TABLE ${table} IS ${literal(d.overview)}`);
      for (const c of t.columns) {
        const enums = c.values ? Object.entries(c.values) : [];
        const doc = [
          c.description ?? '',
          enums.length ? `Values: ${enums.map(([k, v]) => `${k} = ${v}`).join('; ')}` : '',
        ]
          .filter(Boolean)
          .join('. ');
        if (doc) await client.query(`COMMENT ON COLUMN ${table}.${quote(c.name)} IS ${literal(doc)}`);
        // The documented values as rows of their column (the corpus has no other rows).
        if (enums.length && (TYPE[c.type] ?? 'text') === 'text') {
          await client.query(`INSERT INTO ${table} (${quote(c.name)}) SELECT unnest($1::text[])`, [
            enums.map(([k]) => k),
          ]);
          rows += enums.length;
        }
      }
    }
    // Keys after the rows (documented values leave the other columns empty): primary keys are declared
    // only where they hold, foreign keys as written.
    for (const t of d.tables) {
      if (t.primaryKey.length)
        await client
          .query(
            `ALTER TABLE ${quote(nameOf(t.name))} ADD PRIMARY KEY (${t.primaryKey.map(quote).join(', ')})`,
          )
          .catch(() => {});
    }
    for (const t of d.tables)
      for (const [col, ref, refCol] of t.foreignKeys)
        await client
          .query(
            `ALTER TABLE ${quote(nameOf(t.name))} ADD FOREIGN KEY (${quote(col)}) REFERENCES ${quote(nameOf(ref))} (${quote(refCol)})`,
          )
          .catch(() => {}); // a key to a column that is not unique: left undeclared
  }
  for (const [db, ts] of spider)
    await loadSpider(client, `spider:${db}`, ts, {
      schema: 'public',
      tableName: (t) => names.get(`spider:${db}`)!.get(t.toLowerCase())!,
    });
  const questions: SingleQuestion[] = data.questions.map((q) => ({
    question: q.question,
    tables: q.tables.map((t) => names.get(`kaggle:${q.db}`)!.get(t.toLowerCase())!),
    half: dbHalf(q.db),
  }));
  const dbs = Object.keys(data.databases);
  const held = dbs.filter((db) => dbHalf(db) === 'held-out');
  return {
    questions,
    about: `${dbs.length} KaggleDBQA databases (held-out: ${held.join(', ')}; ${rows} documented values as rows) and ${spider.length} Spider schemas without rows in one schema; ${questions.length} questions, split by database`,
  };
}
