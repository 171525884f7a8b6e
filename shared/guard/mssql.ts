/**
 * SQL Server (T-SQL): one read, verified on node-sql-parser's TransactSQL grammar first and
 * sqlparser-rs's MsSql grammar second, after the token checks (sql-text.ts; lock hints, EXEC,
 * WAITFOR and remote access included). SQL Server has no EXPLAIN.
 */
import { AppError } from '../platform/errors';
import { multipleStatements as multiple, readOnlyViolation } from './errors';
import type { Token } from './lexer';
import { loadNodeParser, parseNodeTree, readOfTree } from './node-parser';
import { oneSqlparserStatement } from './one-statement';
import { checkTokens, noPragma, readText, tableShorthand, viaSqlparser } from './sql-text';
import { loadSqlparser, sqlparserLoaded } from './sqlparser';
import { assertNoReservedNspAlias } from './tsql-reserved';
import type { DialectCheck, VerifiedRead } from './verdict';

function check(text: string): VerifiedRead {
  const { readings, tokens, first } = readText('mssql', text);
  if (first === 'EXPLAIN')
    throw readOnlyViolation('EXPLAIN', 'SQL Server has no EXPLAIN statement; use SELECT instead.');
  for (const r of readings) checkTokens('mssql', r.tokens);
  if (first === 'PRAGMA') throw noPragma();
  if (first === 'TABLE') throw tableShorthand();
  let asts: unknown[];
  try {
    asts = parseNodeTree('MSSQL', text, first);
  } catch (e) {
    if (!sqlparserLoaded()) throw e;
    try {
      return viaSqlparser('mssql', text);
    } catch (e2) {
      if (e2 instanceof AppError) throw e2;
      throw e;
    }
  }
  if (asts.length !== 1) throw multiple();
  const ast = asts[0] as Record<string, unknown>;
  assertOneMssqlStatement(text, ast, tokens);
  return readOfTree('MSSQL', 'mssql', ast, first);
}

/**
 * SQL Server needs no `;` between statements, and node-sql-parser's tree keeps no quoting, so where
 * the statement ends is read on sqlparser-rs's tree too: one statement, read to the end, no bare
 * reserved word as an alias (one-statement.ts). Text sqlparser-rs cannot parse is held to the
 * stricter check on node-sql-parser's aliases (tsql-reserved.ts).
 */
function assertOneMssqlStatement(text: string, ast: unknown, tokens: Token[]): void {
  try {
    oneSqlparserStatement('mssql', text);
  } catch (e) {
    if (e instanceof AppError) throw e;
    assertNoReservedNspAlias(ast, tokens);
  }
}

export const mssql: DialectCheck = {
  load: async () => {
    await loadSqlparser();
    await loadNodeParser('MSSQL');
  },
  check,
};
