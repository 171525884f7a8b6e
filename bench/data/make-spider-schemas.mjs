// Derives bench/data/spider-schemas.json.gz from Spider's tables.json (Yu et al., 2018; CC BY-SA 4.0):
//   node bench/data/make-spider-schemas.mjs path/to/spider/tables.json
// Keeps, per database, each table's original name, its columns with Spider's coarse types, the primary
// key and the foreign keys. No rows, no questions.
import { readFileSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const src = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const out = {};
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
    if (!t.columns.some((c) => c[0].toLowerCase() === name.toLowerCase()))
      t.columns.push([name, d.column_types[i]]);
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
  out[d.db_id] = tables;
}
writeFileSync(
  new URL('./spider-schemas.json.gz', import.meta.url),
  gzipSync(JSON.stringify(out), { level: 9 }),
);
