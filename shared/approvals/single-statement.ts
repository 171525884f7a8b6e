/**
 * Exactly one statement, verified the way the read-only guard verifies: the dialect-aware tokenizer,
 * under every reading of strings and comments the server might use, finds no second statement, no
 * MySQL executable comment and nothing unterminated, and the real parser (node-sql-parser) parses
 * the text as exactly one statement. Anything else throws the guard's 400 READ_ONLY_VIOLATION
 * (statementType MULTIPLE_STATEMENTS, EXECUTABLE_COMMENT, UNPARSEABLE).
 *
 * Query approval runs this on every write whatever classifier is in use: the guard's reads are
 * single statements by construction, but a statement that is not a read is refused by the guard at
 * its first keyword, before any counting.
 */
import type { DbType } from '../connections/drivers/types';
import { readOnlyViolation } from '../connections/sql-guard';
import { type Dialect, interpretations, lex } from '../connections/sql-lexer';

/** Refusals that say the text is not one verifiable statement (never a mere "this is a write"). */
export const STRUCTURAL = new Set(['MULTIPLE_STATEMENTS', 'EXECUTABLE_COMMENT', 'UNPARSEABLE', 'TOO_DEEP']);

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

const multiple = () =>
  readOnlyViolation(
    'MULTIPLE_STATEMENTS',
    'Only one statement can run at a time; remove the extra statements.',
  );

/** Returns the parsed statement's type (upper case), or throws the guard's 400. */
export async function assertSingleStatement(type: Exclude<DbType, 'MONGODB'>, text: string): Promise<string> {
  const sqlType = type;
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
  return typeof astType === 'string' ? astType.toUpperCase() : 'UNKNOWN';
}
