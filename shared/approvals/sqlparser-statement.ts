/**
 * One statement by sqlparser-rs (MySQL/MariaDB, SQL Server, SQLite), with two places where its
 * reading of a text can differ from the server's closed:
 * - sqlparser-rs stops reading at END after a complete statement (for BEGIN … END blocks) and drops
 *   the rest of the text, so the text is parsed again with a sentinel statement appended: unless the
 *   sentinel is read as the second statement, the parser did not read the whole text.
 * - SQL Server needs no `;` between statements, and sqlparser-rs reads a reserved word that starts a
 *   T-SQL statement (COMMIT, SHUTDOWN, …) as an alias when it follows a table or a column, where the
 *   server starts a second statement. Such an unquoted alias is refused.
 */
import { readOnlyViolation } from '../connections/guard/errors';
import { type SqlparserDialect, sqlparserStatements } from '../connections/guard/sqlparser';
import { multiple, unparseable } from './refusals';

/** T-SQL reserved words that start a statement; never an unquoted name on SQL Server. */
const tsqlStatementWords = new Set([
  'ALTER',
  'BACKUP',
  'BEGIN',
  'BREAK',
  'BULK',
  'CHECKPOINT',
  'CLOSE',
  'COMMIT',
  'CONTINUE',
  'CREATE',
  'DBCC',
  'DEALLOCATE',
  'DECLARE',
  'DELETE',
  'DENY',
  'DROP',
  'DUMP',
  'EXEC',
  'EXECUTE',
  'FETCH',
  'GOTO',
  'GRANT',
  'IF',
  'INSERT',
  'KILL',
  'LOAD',
  'MERGE',
  'OPEN',
  'PRINT',
  'RAISERROR',
  'READTEXT',
  'RECONFIGURE',
  'RESTORE',
  'RETURN',
  'REVERT',
  'REVOKE',
  'ROLLBACK',
  'SAVE',
  'SELECT',
  'SET',
  'SETUSER',
  'SHUTDOWN',
  'TRUNCATE',
  'UPDATE',
  'UPDATETEXT',
  'USE',
  'WAITFOR',
  'WHILE',
  'WITH',
  'WRITETEXT',
]);

const SENTINEL = '\n;SELECT 1';
const PARSER = 'the sqlparser-rs parser';

/** Returns the statement's type (upper case), or throws the guard's 400. */
export function oneSqlparserStatement(dialect: SqlparserDialect, text: string): string {
  let stmts: Record<string, unknown>[];
  let withSentinel: Record<string, unknown>[];
  try {
    stmts = sqlparserStatements(dialect, text);
    withSentinel = sqlparserStatements(dialect, text + SENTINEL);
  } catch (e) {
    throw unparseable(PARSER, e);
  }
  if (stmts.length === 0) throw readOnlyViolation('UNPARSEABLE', 'The statement is empty.');
  if (stmts.length !== 1) throw multiple();
  if (withSentinel.length !== 2)
    throw unparseable(PARSER, 'it stopped reading at END before the end of the text');
  if (dialect === 'mssql') assertNoStatementWordAlias(stmts[0]);
  return typeOf(stmts[0]);
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

/** Refuses an unquoted alias that is a T-SQL statement word (walked without recursion). */
function assertNoStatementWordAlias(stmt: unknown): void {
  const stack: Array<[unknown, boolean]> = [[stmt, false]];
  while (stack.length > 0) {
    const [node, inAlias] = stack.pop() as [unknown, boolean];
    if (!node || typeof node !== 'object') continue;
    const o = node as Record<string, unknown>;
    const word = typeof o.value === 'string' ? o.value.toUpperCase() : '';
    if (
      inAlias &&
      !Array.isArray(node) &&
      !('keyword' in o) &&
      !o.quote_style &&
      tsqlStatementWords.has(word)
    )
      throw multiple(
        `SQL Server reads the reserved word ${word} as the start of another statement (a semicolon is not needed there); only one statement can run at a time. Quote it ([${o.value}]) if it is a name.`,
      );
    for (const [k, v] of Object.entries(o))
      if (v && typeof v === 'object') stack.push([v, inAlias || k === 'alias']);
  }
}
