/**
 * One statement by sqlparser-rs (MySQL/MariaDB, SQL Server, SQLite), on the read-only guard's own
 * check (connections/guard/one-statement.ts): the text must be read to its end (sqlparser-rs stops
 * at END after a complete statement and drops the rest), be exactly one statement, and on SQL
 * Server have no reserved word as an alias without AS, brackets or quotes (the server would start
 * another statement there; `[commit]` in brackets is a name).
 */

import { AppError } from '../platform/errors';
import { unparseable } from './errors';
import { oneSqlparserStatement as oneStatement } from './one-statement';
import type { SqlparserDialect } from './sqlparser';

const PARSER = 'the sqlparser-rs parser';

/** Returns the statement's type (upper case), or throws the guard's 400. */
export function oneSqlparserStatement(dialect: SqlparserDialect, text: string): string {
  try {
    return typeOf(oneStatement(dialect, text));
  } catch (e) {
    if (e instanceof AppError) throw e;
    throw unparseable(PARSER, e);
  }
}

/** `Insert` → INSERT, `CreateTable` → CREATE_TABLE; a WITH-headed write is its write. */
function typeOf(stmt: unknown): string {
  const key = typeof stmt === 'string' ? stmt : Object.keys(stmt ?? {})[0];
  if (!key) return 'UNKNOWN';
  if (key === 'Query') {
    const body = ((stmt as { Query?: { body?: object } }).Query?.body ?? {}) as object;
    const inner = Object.keys(body)[0];
    return ['Insert', 'Update', 'Delete', 'Merge'].includes(inner) ? inner.toUpperCase() : 'SELECT';
  }
  return key.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();
}
