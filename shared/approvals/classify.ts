/**
 * PROVISIONAL statement classification for query approval, built on the current read-only guard.
 * CONTRACTS.md assigns `classifyStatement(type, text)` to `shared/connections/sql-guard.ts` (owner:
 * the `guard` branch); until that is merged this file provides the same signature and meaning, and
 * the integrator switches the import in shared/approvals/approvals.ts to the guard's version.
 *
 * - 'read' exactly when `assertReadOnly` accepts the text (same parser, same token checks).
 * - Otherwise the text must still be exactly one statement, verified the way the guard verifies:
 *   the dialect-aware tokenizer under every reading of strings and comments the server might use
 *   finds no second statement, no MySQL executable comment and nothing unterminated, and the real
 *   parser (node-sql-parser) parses it as exactly one statement. Anything else throws the guard's
 *   400 READ_ONLY_VIOLATION (statementType MULTIPLE_STATEMENTS, EXECUTABLE_COMMENT, UNPARSEABLE).
 * - MongoDB: a JSON query; reads are what the guard accepts, a `$out`/`$merge`-style query is a
 *   'write'; text that is not a MongoDB query throws the guard's error.
 */

import type { DbType } from '../connections/drivers/types';
import { assertReadOnly, readOnlyViolation } from '../connections/sql-guard';
import { type Dialect, interpretations, lex } from '../connections/sql-lexer';
import { isAppError } from '../platform/errors';

export interface Classification {
  kind: 'read' | 'write';
  statementType: string;
}

type SqlType = Exclude<DbType, 'MONGODB'>;
const dialectOf: Record<SqlType, Dialect> = {
  POSTGRES: 'pg',
  MYSQL: 'mysql',
  MARIADB: 'mysql',
  MSSQL: 'mssql',
  SQLITE: 'sqlite',
};
const parserDatabase: Record<SqlType, string> = {
  POSTGRES: 'PostgresQL',
  MYSQL: 'MySQL',
  MARIADB: 'MariaDB',
  MSSQL: 'TransactSQL',
  SQLITE: 'Sqlite',
};
const parserModules: Record<SqlType, () => Promise<unknown>> = {
  POSTGRES: () => import('node-sql-parser/build/postgresql'),
  MYSQL: () => import('node-sql-parser/build/mysql'),
  MARIADB: () => import('node-sql-parser/build/mariadb'),
  MSSQL: () => import('node-sql-parser/build/transactsql'),
  SQLITE: () => import('node-sql-parser/build/sqlite'),
};
type Parser = { astify(sql: string, opt: { database: string }): unknown };
type ParserModule = { Parser: new () => Parser };
const parsers = new Map<SqlType, Parser>();

async function parserFor(type: SqlType): Promise<Parser> {
  const known = parsers.get(type);
  if (known) return known;
  const mod = (await parserModules[type]()) as ParserModule & { default?: ParserModule };
  const Ctor = mod.Parser ?? mod.default?.Parser;
  const p = new Ctor();
  parsers.set(type, p);
  return p;
}

/** Errors that say the text is not one verifiable statement: never a mere "this is a write". */
const structural = new Set(['MULTIPLE_STATEMENTS', 'EXECUTABLE_COMMENT', 'UNPARSEABLE']);

const multiple = () =>
  readOnlyViolation(
    'MULTIPLE_STATEMENTS',
    'Only one statement can run at a time; remove the extra statements.',
  );

export async function classifyStatement(type: DbType, text: string): Promise<Classification> {
  let refusal: { statementType: string };
  try {
    const read = await assertReadOnly(type, text);
    return { kind: 'read', statementType: read.kind.toUpperCase() };
  } catch (e) {
    if (!isAppError(e) || e.code !== 'READ_ONLY_VIOLATION') throw e;
    const details = (e.details ?? {}) as { statementType?: unknown };
    const statementType = typeof details.statementType === 'string' ? details.statementType : 'UNKNOWN';
    if (structural.has(statementType)) throw e;
    if (type === 'MONGODB') return { kind: 'write', statementType };
    refusal = { statementType };
  }
  const sqlType = type as SqlType;
  // The guard refused it as a read; now verify it is still exactly one statement.
  const readings = interpretations(dialectOf[sqlType]).map((opts) => lex(text, opts));
  if (readings.some((r) => r.executableComment))
    throw readOnlyViolation(
      'EXECUTABLE_COMMENT',
      'MySQL executable comments (/*! … */) are not allowed: the server runs their contents.',
    );
  if (readings.some((r) => r.unterminated))
    throw readOnlyViolation(
      'UNPARSEABLE',
      'The statement has an unterminated string, identifier or comment.',
    );
  for (const r of readings) {
    const semi = r.tokens.findIndex((t) => t.kind === 'punct' && t.value === ';');
    if (semi >= 0 && r.tokens.slice(semi).some((t) => !(t.kind === 'punct' && t.value === ';')))
      throw multiple();
  }
  let asts: unknown[];
  try {
    const ast = (await parserFor(sqlType)).astify(text, { database: parserDatabase[sqlType] });
    asts = (Array.isArray(ast) ? ast : [ast]).filter((a) => a != null);
  } catch (e) {
    const reason = (e instanceof Error ? e.message : String(e)).slice(0, 300);
    throw readOnlyViolation(
      'UNPARSEABLE',
      `The statement could not be verified as a single statement: the ${parserDatabase[sqlType]} parser rejected it (${reason}). Only statements the parser can verify are run.`,
      { reason },
    );
  }
  if (asts.length !== 1) throw multiple();
  const astType = (asts[0] as { type?: unknown }).type;
  const statementType =
    refusal.statementType !== 'UNKNOWN'
      ? refusal.statementType
      : typeof astType === 'string'
        ? astType.toUpperCase()
        : 'UNKNOWN';
  return { kind: 'write', statementType };
}
