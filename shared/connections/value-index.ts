import type { ConnectionTarget, DbType, TableInfo } from '../databases/drivers/types';
import { type ReadCover, refusedByGuard } from '../databases/read-set';
import { judgeReadSet, runReadOnly } from '../databases/run';
import { logger } from '../platform/logger';

/**
 * The value index: distinct values of the low-cardinality text columns of a connection, sampled when
 * the schema is introspected or refreshed and stored with the schema cache (schema-store.ts), so that a
 * question naming a value ("October Meeting", "Czech Republic") finds the table that holds it.
 *
 * What is read: one statement per table, through the read-only path (runReadOnly: guard, read-only
 * session, statement timeout, row and byte caps), selecting ONLY the eligible columns, each cut to
 * VALUE_MAX_CHARS + 1 characters by the database, of the first SAMPLE_ROWS rows:
 *   SELECT substr("col", 1, 65) AS "v0", … FROM "schema"."table" LIMIT 1000
 * (SUBSTRING/TOP on SQL Server, SUBSTR on MySQL/MariaDB; on MongoDB a find with a projection of the
 * string fields). Views are not read. Judged like any read, but together (databases/read-set.ts): the
 * statements of all tables sampled are judged ahead as one union, so the PostgreSQL function rule's
 * catalog lookup runs once (per READS_PER_VERDICT tables) instead of once per table; a statement whose
 * names are a subset of an allowed union is allowed (the monotone subset rule), and a refused union is
 * split until the refused tables are found, which are skipped (counted in `stats.refused`) while the
 * others are sampled. Nothing is read that runReadOnly would refuse as a read of its own.
 * Eligible: text-typed columns whose name does not look like a secret or personal identifier
 * (secretName) and that no annotation excludes (`sampleValues: false` on the column, or on the table
 * for all its columns). Never read: every other column.
 * What is kept: per column, the distinct values seen when there are at most VALUES_PER_COLUMN of them
 * (a low-cardinality column: categories, codes, names of a few dozen things), each of at most
 * VALUE_MAX_CHARS characters, with control characters removed; nothing of a column with more.
 * Budget per connection: SAMPLE_MAX_TABLES tables, TOTAL_CHARS characters of values, QUERY_TIMEOUT_MS
 * per statement and TOTAL_MS in all (sampling stops where a limit is reached and says so in `stats`).
 */

/** Rows read per table at most. */
export const SAMPLE_ROWS = 1_000;
/** A column with more distinct values than this in its sample is not indexed. */
export const VALUES_PER_COLUMN = 60;
/** Characters of one value at most (longer ones are not indexed). */
export const VALUE_MAX_CHARS = 64;
/** Characters of all values of a connection at most. */
export const TOTAL_CHARS = 400_000;
/** Tables read at most. */
export const SAMPLE_MAX_TABLES = 2_000;
/** Columns read per table at most. */
const COLUMNS_PER_TABLE = 60;
/** Timeout of one sampling statement. */
export const QUERY_TIMEOUT_MS = 3_000;
/** Time all sampling statements of one introspection may take. */
export const TOTAL_MS = 20_000;
/** Bytes one sampling statement may return (the driver's byte cap). */
const QUERY_MAX_BYTES = 2 * 1024 * 1024;
/** Statements in flight at once (the pool has 3 connections). */
const CONCURRENCY = 2;

/**
 * Column names whose values are never read: secrets, credentials and personal identifiers. Matched on
 * the words of the name (`user_password`, `ApiKey`, `emailAddress`, `ssn`), so `author` or `hashtag_count`
 * are not caught by a part of a word.
 */
const SECRET_WORDS = new Set(
  (
    'password passwd passphrase pwd secret secrets token tokens hash hashed salt apikey credential credentials ' +
    'otp pin ssn iban cvv cvc email emails mail phone phones mobile telephone tel dob birthdate birthday ' +
    'address passport license licence signature private'
  ).split(' '),
);
const SECRET_PAIRS = new Set(
  (
    'api key|access key|secret key|private key|auth token|credit card|card number|account number|' +
    'social security|tax id|birth date|of birth|ip address|e mail|user agent|session id|national id'
  ).split('|'),
);

/** Whether a column name looks like a secret or a personal identifier. */
export function secretName(column: string): boolean {
  const words = column
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  for (let i = 0; i < words.length; i++) {
    if (SECRET_WORDS.has(words[i])) return true;
    if (i + 1 < words.length && SECRET_PAIRS.has(`${words[i]} ${words[i + 1]}`)) return true;
  }
  return false;
}

/** One column's sampled values. */
export interface ColumnValues {
  /** Table name as in the schema cache. */
  t: string;
  /** Column name (a dotted path for a MongoDB field). */
  c: string;
  /** Distinct values, most frequent first. */
  v: string[];
}

export interface ValueIndex {
  sampledAt: string;
  columns: ColumnValues[];
  stats: {
    tablesRead: number;
    columnsRead: number;
    columnsKept: number;
    chars: number;
    failures: number;
    /** Tables skipped because the guard refuses their read (owner code a read of them would run); also in `failures`. */
    refused?: number;
    /** Why sampling stopped early, when it did (`time`, `size`, `tables`). */
    stoppedBy: string | null;
  };
}

/** What sampling needs to know of the annotations (a subset of Annotation). */
export interface ExclusionNote {
  tableName: string;
  columnName: string | null;
  sampleValues?: boolean | null;
}

const TEXT_TYPE = /char|text|clob|string|citext|enum|^set\b|^name$|^any$|^$/i;
const NOT_TEXT = /binary|bytea|blob|\[\]|array|json|xml|uuid|^date|^time/i;

/** Whether a column's type holds text values (the sampled values are checked to be strings too). */
export const isTextType = (type: string) => TEXT_TYPE.test(type.trim()) && !NOT_TEXT.test(type);

/** Whether a column's values must never be read: a secret-looking name, or excluded by an annotation. */
export function excludedColumn(table: string, column: string, notes: ExclusionNote[]): boolean {
  if (secretName(column)) return true;
  const t = table.toLowerCase();
  const bare = t.slice(t.lastIndexOf('.') + 1);
  const c = column.toLowerCase();
  return notes.some((n) => {
    if (n.sampleValues !== false) return false;
    const nt = n.tableName.toLowerCase();
    if (nt !== t && nt !== bare) return false;
    return n.columnName === null || n.columnName.toLowerCase() === c;
  });
}

/** The columns of a table whose values may be sampled. */
export function eligibleColumns(table: TableInfo, notes: ExclusionNote[]): string[] {
  if (table.kind === 'view') return [];
  const names = table.columns
    .filter(
      (c) =>
        (table.kind === 'collection' ? /\bstring\b/.test(c.type) : isTextType(c.type)) &&
        c.name !== '_id' &&
        // A MongoDB field inside an excluded one (`secret.note`) is excluded with it.
        !c.name
          .split('.')
          .some((_, i, parts) => excludedColumn(table.name, parts.slice(0, i + 1).join('.'), notes)),
    )
    .map((c) => c.name);
  // MongoDB: a field and a field inside it cannot both be projected (a path collision): the outer one stays.
  const kept =
    table.kind === 'collection' ? names.filter((n) => !names.some((o) => n.startsWith(`${o}.`))) : names;
  return kept.slice(0, COLUMNS_PER_TABLE);
}

const quote = (type: DbType, ident: string) => {
  if (type === 'MYSQL' || type === 'MARIADB') return `\`${ident.replaceAll('`', '``')}\``;
  if (type === 'MSSQL') return `[${ident.replaceAll(']', ']]')}]`;
  return `"${ident.replaceAll('"', '""')}"`;
};

/** The sampling statement of a table: only `columns`, each cut to VALUE_MAX_CHARS + 1 characters. */
export function valueSampleQuery(type: DbType, table: TableInfo, columns: string[]): string {
  const cut = VALUE_MAX_CHARS + 1;
  if (type === 'MONGODB')
    return JSON.stringify({
      collection: table.name,
      filter: {},
      projection: Object.fromEntries([['_id', 0], ...columns.map((c) => [c, 1])]),
      limit: SAMPLE_ROWS,
    });
  const parts =
    table.schema && table.name.startsWith(`${table.schema}.`)
      ? [table.schema, table.name.slice(table.schema.length + 1)]
      : [table.name];
  const from = parts.map((p) => quote(type, p)).join('.');
  const select = columns
    .map((c, i) => {
      const col = quote(type, c);
      const expr =
        type === 'MSSQL'
          ? `SUBSTRING(${col}, 1, ${cut})`
          : type === 'MYSQL' || type === 'MARIADB'
            ? `SUBSTR(${col}, 1, ${cut})`
            : `substr(${col}, 1, ${cut})`;
      return `${expr} AS ${quote(type, `v${i}`)}`;
    })
    .join(', ');
  return type === 'MSSQL'
    ? `SELECT TOP ${SAMPLE_ROWS} ${select} FROM ${from}`
    : `SELECT ${select} FROM ${from} LIMIT ${SAMPLE_ROWS}`;
}

const at = (row: Record<string, unknown>, path: string): unknown => {
  if (path in row) return row[path];
  let cur: unknown = row;
  for (const p of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[p];
  }
  return cur;
};

/** A value as indexed: control characters and surrounding space removed, inner runs of space folded. */
export const cleanValue = (s: string) =>
  s
    .replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();

/** The distinct values of one column of a sample, or null when the column is not low-cardinality text. */
export function distinctValues(values: unknown[]): string[] | null {
  const count = new Map<string, number>();
  let present = 0;
  for (const raw of values) {
    if (raw === null || raw === undefined) continue;
    if (typeof raw !== 'string') return null;
    const v = cleanValue(raw);
    if (!v) continue;
    present++;
    if (v.length > VALUE_MAX_CHARS) continue;
    count.set(v, (count.get(v) ?? 0) + 1);
    if (count.size > VALUES_PER_COLUMN) return null;
  }
  if (!count.size) return null;
  // Every value distinct in a large sample: identifiers or free text, not categories.
  if (present >= 200 && count.size === present) return null;
  return [...count.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([v]) => v);
}

/**
 * Samples the values of a connection's tables within the budget (see the top of this file). Never
 * throws: a table that cannot be read is counted in `stats.failures` and skipped.
 */
export async function sampleValues(
  target: ConnectionTarget,
  tables: TableInfo[],
  notes: ExclusionNote[],
  opts: { totalMs?: number; now?: () => string } = {},
): Promise<ValueIndex> {
  const started = Date.now();
  const totalMs = Math.max(0, Math.min(opts.totalMs ?? TOTAL_MS, TOTAL_MS));
  const index: ValueIndex = {
    sampledAt: (opts.now ?? (() => new Date().toISOString()))(),
    columns: [],
    stats: {
      tablesRead: 0,
      columnsRead: 0,
      columnsKept: 0,
      chars: 0,
      failures: 0,
      refused: 0,
      stoppedBy: null,
    },
  };
  const work = tables
    .map((t) => ({ table: t, columns: eligibleColumns(t, notes) }))
    .filter((w) => w.columns.length > 0);
  if (work.length > SAMPLE_MAX_TABLES) index.stats.stoppedBy = 'tables';
  const queue = work.slice(0, SAMPLE_MAX_TABLES).map((w) => ({
    ...w,
    text: valueSampleQuery(target.type, w.table, w.columns),
    cover: undefined as ReadCover | undefined,
  }));
  const stop = (why: string) => {
    index.stats.stoppedBy ??= why;
  };
  const failed = (w: (typeof queue)[number], e: unknown) => {
    index.stats.failures++;
    logger().warn('value index: sampling a table failed', {
      connectionId: target.id,
      table: w.table.name,
      error: (e as Error).message,
    });
  };
  // Judged together, ahead: few catalog lookups for all tables (read-set.ts); the refused are skipped.
  let judged = queue;
  if (queue.length && totalMs >= 50) {
    let verdicts: Awaited<ReturnType<typeof judgeReadSet>> | undefined;
    try {
      verdicts = await judgeReadSet(
        target,
        queue.map((w) => w.text),
        { timeoutMs: totalMs - (Date.now() - started) },
      );
    } catch (e) {
      // Could not judge ahead (connection failure): each read is judged as it runs, and fails alike.
      logger().warn('value index: judging the sampling reads failed', {
        connectionId: target.id,
        error: (e as Error).message,
      });
    }
    if (verdicts)
      judged = queue.filter((w, i) => {
        const v = verdicts[i];
        if (v.ok) {
          w.cover = v.cover;
          return true;
        }
        index.stats.refused = (index.stats.refused ?? 0) + 1;
        failed(w, v.error);
        return false;
      });
  }
  // Unions refused since they were judged (the catalog changed meanwhile): their reads are judged alone.
  const stale = new Set<ReadCover>();
  const read = (w: (typeof queue)[number], left: number, cover: ReadCover | undefined) =>
    runReadOnly(
      target,
      w.text,
      // Loupe's own sample: never JIT-compiled (drivers/types.ts ownQuery).
      {
        maxRows: SAMPLE_ROWS,
        maxBytes: QUERY_MAX_BYTES,
        timeoutMs: Math.min(QUERY_TIMEOUT_MS, left),
        ownQuery: true,
      },
      cover,
    );
  const one = async (w: (typeof queue)[number]) => {
    const left = totalMs - (Date.now() - started);
    if (left < 50) return stop('time');
    if (index.stats.chars >= TOTAL_CHARS) return stop('size');
    let rows: Record<string, unknown>[];
    try {
      const cover = w.cover && !stale.has(w.cover) ? w.cover : undefined;
      try {
        rows = (await read(w, left, cover)).rows;
      } catch (e) {
        // The catalog changed since the union was judged and the union is now refused: the table's own
        // read is judged alone (as any read), so a newly refused neighbour does not hide it.
        if (!cover || !refusedByGuard(e)) throw e;
        stale.add(cover);
        rows = (await read(w, Math.max(50, totalMs - (Date.now() - started)), undefined)).rows;
      }
    } catch (e) {
      if (refusedByGuard(e)) index.stats.refused = (index.stats.refused ?? 0) + 1;
      failed(w, e);
      return;
    }
    index.stats.tablesRead++;
    w.columns.forEach((c, i) => {
      index.stats.columnsRead++;
      const key = target.type === 'MONGODB' ? c : `v${i}`;
      const values = distinctValues(rows.map((r) => at(r, key)));
      if (!values) return;
      const kept: string[] = [];
      for (const v of values) {
        if (index.stats.chars + v.length > TOTAL_CHARS) {
          stop('size');
          break;
        }
        index.stats.chars += v.length;
        kept.push(v);
      }
      if (kept.length) {
        index.columns.push({ t: w.table.name, c, v: kept });
        index.stats.columnsKept++;
      }
    });
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, judged.length) }, async () => {
      while (next < judged.length) await one(judged[next++]);
    }),
  );
  // Stable order whatever the concurrency: as the schema lists the tables.
  const order = new Map(tables.map((t, i) => [t.name, i]));
  index.columns.sort((a, b) => (order.get(a.t) ?? 0) - (order.get(b.t) ?? 0) || a.c.localeCompare(b.c));
  return index;
}

/**
 * The values retrieval may use now: columns excluded since sampling (an annotation with
 * `sampleValues: false`, a secret-looking name) are left out, whatever the stored index holds.
 */
export function usableValues(index: ValueIndex | null | undefined, notes: ExclusionNote[]): ColumnValues[] {
  if (!index?.columns?.length) return [];
  const excluding = notes.filter((n) => n.sampleValues === false);
  return index.columns.filter((c) => !excludedColumn(c.t, c.c, excluding));
}
