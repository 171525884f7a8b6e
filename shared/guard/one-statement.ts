/**
 * Exactly one statement as sqlparser-rs reads it (MySQL/MariaDB, SQL Server, SQLite), with the two
 * places where its reading can differ from the server's closed. Shared by the read-only guard and
 * query approval (shared/guard/write-sqlparser.ts).
 * - sqlparser-rs stops reading at END after a complete statement (for BEGIN … END blocks) and drops
 *   the rest of the text. So the text is parsed with a sentinel statement appended, named with a
 *   per-instance random word the text does not contain: unless the sentinel is the last statement
 *   read, the parser did not read the whole text.
 * - SQL Server needs no `;` between statements, and sqlparser-rs reads a reserved word after a table
 *   or a column as an alias where the server starts another statement: an alias that is a T-SQL
 *   reserved word must be quoted, bracketed or follow AS (tsql-reserved.ts).
 */
import { randomBytes } from 'node:crypto';
import { multipleStatements, readOnlyViolation } from './errors';
import { type SqlparserDialect, sqlparserStatements } from './sqlparser-parse';
import { assertNoReservedAlias } from './tsql-reserved';

const SENTINEL_NAME = `loupe_end_${randomBytes(8).toString('hex')}`;
const SENTINEL = `\n;SELECT 1 AS ${SENTINEL_NAME}`;

/** The sentinel as read: one SELECT of one aliased item, from nothing. Any other shape fails closed. */
function isSentinel(stmt: unknown): boolean {
  type Select = { projection?: { ExprWithAlias?: { alias?: { value?: unknown } } }[]; from?: unknown[] };
  const select = (stmt as { Query?: { body?: { Select?: Select } } })?.Query?.body?.Select;
  return (
    select?.projection?.length === 1 &&
    select.projection[0].ExprWithAlias?.alias?.value === SENTINEL_NAME &&
    select.from?.length === 0
  );
}

/** Not an AppError: like a parse error, callers may let another grammar read the text. */
const notReadToTheEnd = () =>
  new Error('it did not read the text to its end; it stops at END after a complete statement');

/**
 * The one statement sqlparser-rs reads in `text`. Throws an Error (not an AppError) when the parser
 * cannot parse the text or does not read it to its end, and READ_ONLY_VIOLATION when the text is
 * empty (UNPARSEABLE), more than one statement or, on SQL Server, has an unquoted reserved word as
 * an alias without AS (MULTIPLE_STATEMENTS).
 */
export function oneSqlparserStatement(dialect: SqlparserDialect, text: string): Record<string, unknown> {
  if (text.includes(SENTINEL_NAME)) throw notReadToTheEnd();
  let stmts: Record<string, unknown>[];
  try {
    stmts = sqlparserStatements(dialect, text + SENTINEL);
  } catch {
    // The parser's error on the text as written (its positions and wording are the user's).
    sqlparserStatements(dialect, text);
    throw notReadToTheEnd();
  }
  if (!isSentinel(stmts.at(-1))) throw notReadToTheEnd();
  stmts = stmts.slice(0, -1);
  if (stmts.length === 0) throw readOnlyViolation('UNPARSEABLE', 'The statement is empty.');
  if (stmts.length !== 1) throw multipleStatements();
  if (dialect === 'mssql') assertNoReservedAlias(stmts[0], text);
  return stmts[0];
}
