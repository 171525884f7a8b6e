import type { DbType } from '../databases/drivers/types';

/** Dialects whose queries are SQL text (MongoDB queries are JSON; see mongo-params.ts). */
export type SqlDialect = Exclude<DbType, 'MONGODB'>;

/** A `{{name}}` placeholder found outside strings, quoted identifiers and comments. */
export interface Placeholder {
  name: string;
  start: number;
  end: number;
}

/** Something in the text that cannot be bound safely (a malformed placeholder or a raw driver marker). */
export interface ScanProblem {
  index: number;
  message: string;
}

export interface SqlScan {
  placeholders: Placeholder[];
  problems: ScanProblem[];
}

export const PLACEHOLDER_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
const PLACEHOLDER_AT = /\{\{\s*([A-Za-z_][A-Za-z0-9_]{0,62})\s*\}\}/y;
const DOLLAR_TAG_AT = /\$([A-Za-z_][A-Za-z0-9_]*)?\$/y;
const PG_POSITIONAL_AT = /\$\d+/y;
const MSSQL_POSITIONAL_AT = /@p\d+(?![A-Za-z0-9_@$#])/iy;

const isIdentChar = (c: string | undefined) => c !== undefined && /[A-Za-z0-9_$\u0080-\uffff]/.test(c);

const isMysql = (d: SqlDialect) => d === 'MYSQL' || d === 'MARIADB';

/**
 * Finds `{{name}}` placeholders in SQL text the way the dialect's lexer would see the text: string
 * literals (with the dialect's escapes), quoted identifiers, line and block comments (nested where the
 * dialect nests them) and PostgreSQL dollar-quoted strings are skipped, so a `{{x}}` inside any of them
 * is data, not a parameter. Raw driver markers (`$1` on PostgreSQL, `?` on MySQL/MariaDB/SQLite, `@p1` on
 * SQL Server) outside those regions are reported: they would collide with the bound parameters.
 */
export function scanSql(sql: string, dialect: SqlDialect): SqlScan {
  const placeholders: Placeholder[] = [];
  const problems: ScanProblem[] = [];
  const n = sql.length;
  let i = 0;

  /** Skips a quoted run that starts at `i` (the opening quote) and returns the index after it. */
  const skipQuoted = (open: number, close: string, backslash: boolean, doubledEscapes: boolean) => {
    let j = open + 1;
    while (j < n) {
      const c = sql[j];
      if (backslash && c === '\\') {
        j += 2;
        continue;
      }
      if (c === close) {
        if (doubledEscapes && sql[j + 1] === close) {
          j += 2;
          continue;
        }
        return j + 1;
      }
      j++;
    }
    return n;
  };

  const skipLine = (from: number) => {
    const nl = sql.indexOf('\n', from);
    return nl === -1 ? n : nl + 1;
  };

  const skipBlock = (from: number, nested: boolean) => {
    let depth = 1;
    let j = from + 2;
    while (j < n) {
      if (sql[j] === '*' && sql[j + 1] === '/') {
        depth--;
        j += 2;
        if (depth === 0 || !nested) return j;
        continue;
      }
      if (nested && sql[j] === '/' && sql[j + 1] === '*') {
        depth++;
        j += 2;
        continue;
      }
      j++;
    }
    return n;
  };

  while (i < n) {
    const c = sql[i];
    const next = sql[i + 1];

    if (c === "'") {
      const prev = sql[i - 1];
      const eString = dialect === 'POSTGRES' && (prev === 'E' || prev === 'e') && !isIdentChar(sql[i - 2]);
      i = skipQuoted(i, "'", isMysql(dialect) || eString, true);
      continue;
    }
    if (c === '"') {
      i = skipQuoted(i, '"', isMysql(dialect), true);
      continue;
    }
    if (c === '`' && (isMysql(dialect) || dialect === 'SQLITE')) {
      i = skipQuoted(i, '`', false, true);
      continue;
    }
    if (c === '[' && (dialect === 'MSSQL' || dialect === 'SQLITE')) {
      i = skipQuoted(i, ']', false, dialect === 'MSSQL');
      continue;
    }
    if (c === '-' && next === '-') {
      // MySQL needs whitespace (or the end) after `--` for a comment; `1--1` is arithmetic there.
      const after = sql[i + 2];
      if (!isMysql(dialect) || after === undefined || /\s/.test(after)) {
        i = skipLine(i);
        continue;
      }
    }
    if (c === '#' && isMysql(dialect)) {
      i = skipLine(i);
      continue;
    }
    if (c === '/' && next === '*') {
      i = skipBlock(i, dialect === 'POSTGRES' || dialect === 'MSSQL');
      continue;
    }
    if (c === '$' && dialect === 'POSTGRES' && !isIdentChar(sql[i - 1])) {
      DOLLAR_TAG_AT.lastIndex = i;
      const tag = DOLLAR_TAG_AT.exec(sql);
      if (tag) {
        const end = sql.indexOf(tag[0], i + tag[0].length);
        i = end === -1 ? n : end + tag[0].length;
        continue;
      }
      PG_POSITIONAL_AT.lastIndex = i;
      const pos = PG_POSITIONAL_AT.exec(sql);
      if (pos) {
        problems.push({
          index: i,
          message: `Raw parameter marker ${pos[0]} is not allowed; use a {{name}} placeholder.`,
        });
        i += pos[0].length;
        continue;
      }
    }
    if (c === '?' && (isMysql(dialect) || dialect === 'SQLITE')) {
      problems.push({
        index: i,
        message: 'Raw parameter marker ? is not allowed; use a {{name}} placeholder.',
      });
      i++;
      continue;
    }
    if (c === '@' && dialect === 'MSSQL' && !isIdentChar(sql[i - 1]) && sql[i - 1] !== '@') {
      MSSQL_POSITIONAL_AT.lastIndex = i;
      const pos = MSSQL_POSITIONAL_AT.exec(sql);
      if (pos) {
        problems.push({
          index: i,
          message: `Variable ${pos[0]} is reserved for bound parameters; use a {{name}} placeholder or another name.`,
        });
        i += pos[0].length;
        continue;
      }
    }
    if (c === '{' && next === '{') {
      PLACEHOLDER_AT.lastIndex = i;
      const m = PLACEHOLDER_AT.exec(sql);
      if (m) {
        placeholders.push({ name: m[1], start: i, end: i + m[0].length });
        i += m[0].length;
      } else {
        problems.push({
          index: i,
          message:
            'Malformed placeholder: write {{name}} with a name of letters, digits and underscores (not starting with a digit).',
        });
        i += 2;
      }
      continue;
    }
    if (isIdentChar(c)) {
      // Skip the whole word so that `$` inside identifiers (PostgreSQL) never starts a dollar quote.
      while (i < n && isIdentChar(sql[i])) i++;
      continue;
    }
    i++;
  }
  return { placeholders, problems };
}

/** Line and column (1-based) of an index, for error details. */
export function lineColumn(text: string, index: number): { line: number; column: number } {
  const before = text.slice(0, index);
  const line = before.split('\n').length;
  return { line, column: index - before.lastIndexOf('\n') };
}
