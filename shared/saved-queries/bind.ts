import type { DbType } from '../databases/drivers/types';
import { type SqlDialect, scanSql } from './tokenize';
import type { Canonical, ParamDef, ParamType } from './values';

/** SQL text with driver markers in place of `{{name}}`, and the positional values to bind. */
export interface BoundSql {
  text: string;
  params: unknown[];
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** `YYYY-MM-DD HH:MM:SS[.fff]` in UTC: the literal form MySQL, MariaDB and SQLite compare and store. */
function sqlDateTime(d: Date): string {
  const base = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  return d.getUTCMilliseconds() ? `${base}.${pad(d.getUTCMilliseconds(), 3)}` : base;
}

/** The value handed to the driver for a checked parameter value. */
export function driverValue(dialect: DbType, type: ParamType, v: Canonical): unknown {
  if (v === null) return null;
  switch (dialect) {
    case 'POSTGRES':
      return v instanceof Date ? v.toISOString() : v;
    case 'MYSQL':
    case 'MARIADB':
    case 'SQLITE':
      if (typeof v === 'boolean') return v ? 1 : 0;
      if (v instanceof Date) return sqlDateTime(v);
      return v;
    case 'MSSQL':
      return v;
    case 'MONGODB':
      return type === 'date' || type === 'datetime'
        ? { $date: v instanceof Date ? v.toISOString() : `${v}T00:00:00.000Z` }
        : v;
  }
}

/**
 * Replaces every `{{name}}` (outside strings and comments) with the dialect's driver marker and
 * collects the values: PostgreSQL `$n` (one number per name, reused), SQL Server `@pn` (one per name,
 * reused), MySQL/MariaDB/SQLite `?` (bound again at each use). Values never enter the text.
 *
 * PostgreSQL infers each parameter's type from where it is used (`qty >= $1` makes it an integer);
 * where nothing gives it a type (`{{x}} IS NULL`) the query says so itself: `{{x}}::text` or
 * `CAST({{x}} AS text)` (the guard reads PostgreSQL with the server's own grammar, so both forms
 * verify). No cast is added here: a fixed cast would break comparisons with enum, uuid and domain columns.
 */
export function bindSql(
  sql: string,
  dialect: SqlDialect,
  defs: ParamDef[],
  values: ReadonlyMap<string, Canonical>,
): BoundSql {
  const { placeholders } = scanSql(sql, dialect);
  const types = new Map(defs.map((d) => [d.name, d.type]));
  const params: unknown[] = [];
  const slot = new Map<string, number>();
  let text = '';
  let last = 0;
  for (const p of placeholders) {
    const type = types.get(p.name);
    if (!type) throw new Error(`No definition for placeholder ${p.name}`);
    const value = driverValue(dialect, type, values.get(p.name) ?? null);
    text += sql.slice(last, p.start);
    last = p.end;
    if (dialect === 'POSTGRES' || dialect === 'MSSQL') {
      let n = slot.get(p.name);
      if (n === undefined) {
        params.push(value);
        n = params.length;
        slot.set(p.name, n);
      }
      text += dialect === 'POSTGRES' ? `$${n}` : `@p${n}`;
    } else {
      params.push(value);
      text += '?';
    }
  }
  text += sql.slice(last);
  return { text, params };
}
