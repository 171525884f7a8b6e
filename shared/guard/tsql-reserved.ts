/**
 * SQL Server's reserved keywords (Microsoft's list, "Reserved Keywords (Transact-SQL)"; WITHIN
 * GROUP is its one two-word entry). SQL Server reads these only as keywords: as a name they must
 * be delimited ([commit], "commit"). SQL Server also needs no `;` between statements, so where a
 * parser reads an unquoted reserved word as an alias (`SELECT * FROM t SHUTDOWN`), the server reads
 * the end of one statement and the start of the next, or a syntax error. The guard refuses such an
 * alias written without AS, whatever the reserved word: a valid single read never has one.
 */

import { multipleStatements } from './errors';
import { lex, type Token } from './lexer';

const RESERVED = new Set(
  `ADD ALL ALTER AND ANY AS ASC AUTHORIZATION BACKUP BEGIN BETWEEN BREAK BROWSE BULK BY CASCADE CASE
  CHECK CHECKPOINT CLOSE CLUSTERED COALESCE COLLATE COLUMN COMMIT COMPUTE CONSTRAINT CONTAINS
  CONTAINSTABLE CONTINUE CONVERT CREATE CROSS CURRENT CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP
  CURRENT_USER CURSOR DATABASE DBCC DEALLOCATE DECLARE DEFAULT DELETE DENY DESC DISK DISTINCT
  DISTRIBUTED DOUBLE DROP DUMP ELSE END ERRLVL ESCAPE EXCEPT EXEC EXECUTE EXISTS EXIT EXTERNAL FETCH
  FILE FILLFACTOR FOR FOREIGN FREETEXT FREETEXTTABLE FROM FULL FUNCTION GOTO GRANT GROUP HAVING
  HOLDLOCK IDENTITY IDENTITY_INSERT IDENTITYCOL IF IN INDEX INNER INSERT INTERSECT INTO IS JOIN KEY
  KILL LEFT LIKE LINENO LOAD MERGE NATIONAL NOCHECK NONCLUSTERED NOT NULL NULLIF OF OFF OFFSETS ON
  OPEN OPENDATASOURCE OPENQUERY OPENROWSET OPENXML OPTION OR ORDER OUTER OVER PERCENT PIVOT PLAN
  PRECISION PRIMARY PRINT PROC PROCEDURE PUBLIC RAISERROR READ READTEXT RECONFIGURE REFERENCES
  REPLICATION RESTORE RESTRICT RETURN REVERT REVOKE RIGHT ROLLBACK ROWCOUNT ROWGUIDCOL RULE SAVE
  SCHEMA SECURITYAUDIT SELECT SEMANTICKEYPHRASETABLE SEMANTICSIMILARITYDETAILSTABLE
  SEMANTICSIMILARITYTABLE SESSION_USER SET SETUSER SHUTDOWN SOME STATISTICS SYSTEM_USER TABLE
  TABLESAMPLE TEXTSIZE THEN TO TOP TRAN TRANSACTION TRIGGER TRUNCATE TRY_CONVERT TSEQUAL UNION
  UNIQUE UNPIVOT UPDATE UPDATETEXT USE USER VALUES VARYING VIEW WAITFOR WHEN WHERE WHILE WITH
  WRITETEXT`.split(/\s+/),
);

export const isTsqlReserved = (word: string) => RESERVED.has(word.toUpperCase());

const reservedAlias = (word: string) =>
  multipleStatements(
    `${word.toUpperCase()} is a reserved word in SQL Server: written without AS and without brackets after a table, a column or a subquery, the server reads it as a keyword (it can start another statement; no semicolon is needed between statements), not as an alias. Only one statement can run at a time; write [${word}] if it is a name.`,
  );

const isWord = (t: Token | undefined, word: string) =>
  t?.kind === 'word' && t.value.toUpperCase() === word.toUpperCase();

/** The offset in `text` of sqlparser-rs's 1-based line and column (counted in code points). */
function offsetOf(text: string, line: number, column: number): number {
  let l = 1;
  let c = 1;
  let offset = 0;
  for (const ch of text) {
    if (l === line && c === column) return offset;
    if (ch === '\n') {
      l++;
      c = 1;
    } else c++;
    offset += ch.length;
  }
  return -1;
}

type Ident = { value: string; span?: { start?: { line?: number; column?: number } } };

/**
 * sqlparser-rs's tree (MsSql dialect) of `text`: refuses an alias (of a table, subquery, join,
 * column, CTE or alias column) written without quotes or brackets that is a reserved word, unless it
 * follows AS: after AS the server reads a name or fails on the batch, never a new statement (so
 * `c.precision AS precision` runs as written). Walked without recursion; the text is tokenized only
 * when such an alias is found.
 */
export function assertNoReservedAlias(stmt: unknown, text: string): void {
  const found: Ident[] = [];
  const stack: Array<[unknown, boolean]> = [[stmt, false]];
  while (stack.length > 0) {
    const [node, inAlias] = stack.pop() as [unknown, boolean];
    if (!node || typeof node !== 'object') continue;
    const o = node as Record<string, unknown>;
    // An identifier: {value, quote_style?, span}; a keyword token carries `keyword` instead.
    if (inAlias && !Array.isArray(node) && typeof o.value === 'string' && !('keyword' in o)) {
      if (!o.quote_style && isTsqlReserved(o.value)) found.push(o as Ident);
    }
    for (const [k, v] of Object.entries(o))
      if (v && typeof v === 'object') stack.push([v, inAlias || k === 'alias']);
  }
  if (found.length === 0) return;
  const tokens = lex(text, { dialect: 'mssql', backslashEscapes: false }).tokens;
  for (const alias of found) {
    const { line, column } = alias.span?.start ?? {};
    const at = line && column ? offsetOf(text, line, column) : -1;
    const i = tokens.findIndex((t) => t.start === at);
    if (i < 0 || !isWord(tokens[i], alias.value) || !isWord(tokens[i - 1], 'AS'))
      throw reservedAlias(alias.value);
  }
}

/**
 * node-sql-parser's tree (TransactSQL), which keeps no quoting and no positions: an alias that is a
 * reserved word is refused when the word is also written bare, not after AS and not as part of a
 * dotted name (it may be that alias). Used only for statements sqlparser-rs cannot read, so a
 * bracketed reserved alias next to the same keyword (`SELECT a [from] FROM t`) is refused only there.
 */
export function assertNoReservedNspAlias(ast: unknown, tokens: Token[]): void {
  const bare = new Set(
    tokens
      .filter((t, i) => t.kind === 'word' && !isWord(tokens[i - 1], 'AS') && tokens[i - 1]?.value !== '.')
      .map((t) => t.value.toUpperCase()),
  );
  const stack: unknown[] = [ast];
  while (stack.length > 0) {
    const node = stack.pop();
    if (!node || typeof node !== 'object') continue;
    const o = node as Record<string, unknown>;
    const as = typeof o.as === 'string' ? o.as : (o.as as { value?: unknown } | null)?.value;
    if (typeof as === 'string' && isTsqlReserved(as) && bare.has(as.toUpperCase())) throw reservedAlias(as);
    for (const v of Object.values(o)) if (v && typeof v === 'object') stack.push(v);
  }
}
