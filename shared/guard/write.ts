/**
 * Exactly one statement, verified on the read-only guard's parsers: PostgreSQL's own grammar
 * (libpg-query) for PostgreSQL, sqlparser-rs (MySQL dialect for MySQL and MariaDB, MsSql, SQLite)
 * for the others, each loaded on first use. Next to the parser, the guard's dialect-aware tokenizer
 * must find no second statement under any reading of strings and comments the server might use and
 * no MySQL executable comment. Anything else throws the guard's 400 READ_ONLY_VIOLATION
 * (statementType MULTIPLE_STATEMENTS, EXECUTABLE_COMMENT, UNPARSEABLE).
 *
 * Query approval runs this on every write: the guard's reads are single statements by construction,
 * but a statement that is not a read is refused by the guard at its first keyword, before counting.
 */
import type { DbType } from './dialect';
import { multipleStatements as multiple, readOnlyViolation, unparseable } from './errors';
import { type Dialect, interpretations, lex } from './lexer';
import { loadPgParser, pgStatements, statementTypeOf } from './postgres-grammar';
import { loadSqlparser, type SqlparserDialect } from './sqlparser';
import { oneSqlparserStatement } from './write-sqlparser';

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

/** Returns the statement's type (upper case, e.g. UPDATE), or throws the guard's 400. */
export async function verifyWrite(type: SqlType, text: string): Promise<string> {
  const dialect = dialectOf[type];
  assertTokens(dialect, text);
  if (dialect === 'pg') {
    await loadPgParser();
    return onePgStatement(text);
  }
  await loadSqlparser();
  return oneSqlparserStatement(dialect as SqlparserDialect, text);
}

/**
 * The tokenizer's checks, under every reading of the text (lexer.ts): no executable
 * comment; nothing but `;` after the first `;`. The server's own reading (the first) must end every
 * string, identifier and comment; another reading may leave one open only where it has no `;` (the
 * server would then read one statement and fail on it, never run a second one).
 */
function assertTokens(dialect: Dialect, text: string): void {
  if (text.includes('\u0000'))
    throw readOnlyViolation('UNPARSEABLE', 'The statement contains a NUL character.');
  const readings = interpretations(dialect).map((opts) => lex(text, opts));
  if (readings.some((r) => r.executableComment))
    throw readOnlyViolation(
      'EXECUTABLE_COMMENT',
      'MySQL executable comments (/*! … */) are not allowed: the server runs their contents.',
    );
  const isSemi = (t: { kind: string; value: string }) => t.kind === 'punct' && t.value === ';';
  readings.forEach((r, i) => {
    const semi = r.tokens.findIndex(isSemi);
    if (semi >= 0 && r.tokens.slice(semi).some((t) => !isSemi(t))) throw multiple();
    if (r.unterminated && (i === 0 || semi >= 0))
      throw readOnlyViolation(
        'UNPARSEABLE',
        'The statement has an unterminated string, identifier or comment.',
      );
  });
}

function onePgStatement(text: string): string {
  let stmts: Record<string, unknown>[];
  try {
    stmts = pgStatements(text);
  } catch (e) {
    throw unparseable("PostgreSQL's parser", e);
  }
  if (stmts.length === 0) throw readOnlyViolation('UNPARSEABLE', 'The statement is empty.');
  if (stmts.length !== 1) throw multiple();
  const [node] = Object.keys(stmts[0]);
  return node ? statementTypeOf(node) : 'UNKNOWN';
}
