// Derives bench/data/kaggledbqa.json.gz from KaggleDBQA (Lee et al., "KaggleDBQA: Realistic Evaluation of
// Text-to-SQL Parsers", ACL 2021; CC BY-SA 4.0; github.com/Chia-Hsuan-Lee/KaggleDBQA):
//   node bench/data/make-kaggledbqa.mjs path/to/KaggleDBQA   (the folder holding KaggleDBQA_tables.json and examples/)
// Keeps, per database: each table's original name, its columns with their coarse types, the column
// descriptions of the database documentation, primary and foreign keys, and the documented value lists
// (`value_enums`: the values a column holds, with their meaning); and the questions of examples/<db>.json
// with the tables of their reference SQL (from its parsed `sql`). No rows; no reference SQL text.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

const dir = process.argv[2];
const src = JSON.parse(readFileSync(join(dir, 'KaggleDBQA_tables.json'), 'utf8'));

/** Tables referenced anywhere in a Spider-format `sql` object (its `["table_unit", index]` pairs). */
const tableIds = (sql, out = new Set()) => {
  if (Array.isArray(sql)) {
    if (sql.length === 2 && sql[0] === 'table_unit' && typeof sql[1] === 'number') out.add(sql[1]);
    else for (const x of sql) tableIds(x, out);
  } else if (sql && typeof sql === 'object') for (const x of Object.values(sql)) tableIds(x, out);
  return out;
};

const databases = {};
for (const d of src) {
  const tables = d.table_names_original.map((name) => ({
    name,
    columns: [],
    primaryKey: [],
    foreignKeys: [],
  }));
  const colOf = [];
  d.column_names_original.forEach(([ti, name], i) => {
    if (ti < 0) {
      colOf.push(null);
      return;
    }
    const t = tables[ti];
    if (!t.columns.some((c) => c.name.toLowerCase() === name.toLowerCase())) {
      const col = { name, type: d.column_types[i] };
      const description = d.column_descriptions?.[i];
      if (description && description.toLowerCase() !== name.toLowerCase()) col.description = description;
      const enums = d.value_enums?.[name];
      if (enums && typeof enums === 'object') col.values = enums;
      t.columns.push(col);
    }
    colOf.push([ti, name]);
  });
  for (const pk of d.primary_keys.flat()) {
    const c = colOf[pk];
    if (c) tables[c[0]].primaryKey.push(c[1]);
  }
  for (const [from, to] of d.foreign_keys) {
    const a = colOf[from];
    const b = colOf[to];
    if (a && b && a[0] !== b[0]) tables[a[0]].foreignKeys.push([a[1], tables[b[0]].name, b[1]]);
  }
  databases[d.db_id] = { overview: d.db_overview ?? null, tables };
}

const questions = [];
for (const f of readdirSync(join(dir, 'examples')).sort()) {
  if (f.includes('_')) continue; // <db>_fewshot.json and <db>_test.json split <db>.json
  for (const q of JSON.parse(readFileSync(join(dir, 'examples', f), 'utf8'))) {
    const names = databases[q.db_id].tables.map((t) => t.name);
    questions.push({
      db: q.db_id,
      question: q.question,
      tables: [...tableIds(q.sql)].map((i) => names[i]),
    });
  }
}
writeFileSync(
  new URL('./kaggledbqa.json.gz', import.meta.url),
  gzipSync(JSON.stringify({ databases, questions }), { level: 9 }),
);
