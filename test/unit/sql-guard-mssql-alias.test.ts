import transactsql from 'node-sql-parser/build/transactsql';
import { describe, expect, it } from 'vitest';
import type { DbType } from '../../shared/databases/drivers/types';
import { lex } from '../../shared/guard/lexer';
import { assertReadOnly } from '../../shared/guard/read';
import { assertNoReservedNspAlias } from '../../shared/guard/tsql-reserved';
import type { AppError } from '../../shared/platform/errors';

/**
 * SQL Server needs no `;` between statements, and a parser may read a reserved word after a table or
 * a column as an alias where the server starts another statement (`SELECT * FROM t SHUTDOWN` is a
 * read, then SHUTDOWN). An unquoted alias that is a T-SQL reserved word is refused; quoted or
 * bracketed it is a name. sqlparser-rs also stops reading at END after a complete statement; text it
 * does not read to its end is not verified by it.
 */
const refusal = async (type: DbType, sql: string): Promise<AppError | undefined> => {
  try {
    await assertReadOnly(type, sql);
  } catch (e) {
    return e as AppError;
  }
  return undefined;
};

const expectRefused = async (type: DbType, sqls: string[]) => {
  const accepted: string[] = [];
  for (const sql of sqls) {
    const e = await refusal(type, sql);
    if (!e) accepted.push(sql);
    else {
      expect(e.status, sql).toBe(400);
      expect(e.code, sql).toBe('READ_ONLY_VIOLATION');
    }
  }
  expect(accepted, 'accepted').toEqual([]);
};

/** Words that start a T-SQL statement, every one on Microsoft's reserved keyword list. */
const statementWords = [
  'SHUTDOWN',
  'COMMIT',
  'RECONFIGURE',
  'ROLLBACK',
  'CHECKPOINT',
  'KILL',
  'BACKUP',
  'RESTORE',
  'DBCC',
  'EXEC',
  'EXECUTE',
  'INSERT',
  'UPDATE',
  'DELETE',
  'DROP',
  'CREATE',
  'ALTER',
  'GRANT',
  'REVOKE',
  'DENY',
  'USE',
  'SET',
  'DECLARE',
  'WAITFOR',
  'BEGIN',
  'END',
  'GOTO',
  'PRINT',
  'RAISERROR',
  'TRUNCATE',
  'MERGE',
  'BULK',
  'OPEN',
  'CLOSE',
  'FETCH',
  'DEALLOCATE',
  'SAVE',
  'WHILE',
  'IF',
  'RETURN',
  'BREAK',
  'CONTINUE',
  'SETUSER',
  'READTEXT',
  'WRITETEXT',
  'UPDATETEXT',
  'REVERT',
  'DUMP',
  'LOAD',
  'SELECT',
  'WITH',
];

const mixed = (w: string) => w[0] + w.slice(1).toLowerCase();

/** The word as a bare alias after a table, a subquery, a join and a column, with comments and newlines. */
const bareAlias = (w: string) => [
  `SELECT * FROM t ${w}`,
  `SELECT * FROM dbo.t ${w.toLowerCase()}`,
  `SELECT * FROM [dbo].[t] ${mixed(w)}`,
  `SELECT * FROM t ${w};`,
  `SELECT * FROM (SELECT 1 AS a) ${w}`,
  `SELECT * FROM t JOIN u ${w} ON 1 = 1`,
  `SELECT * FROM t CROSS JOIN u ${w}`,
  `SELECT a ${w} FROM t`,
  `SELECT a ${w}`,
  `SELECT t.a ${w} FROM t`,
  `SELECT CASE WHEN a = 1 THEN 1 END ${w} FROM t`,
  `SELECT * FROM t /* comment */ ${w}`,
  `SELECT * FROM t/**/${w}`,
  `SELECT * FROM t -- comment\n${w}`,
  `SELECT * FROM t\n\n\t${w}\n`,
  `SELECT * FROM t\r\n-- ${w}\r\n${w} -- trailing`,
  `WITH c AS (SELECT 1 AS a) SELECT * FROM c ${w}`,
  `SELECT * FROM t WHERE EXISTS (SELECT 1 FROM u ${w})`,
  `SELECT a FROM t UNION ALL SELECT b FROM u ${w}`,
];

describe('SQL Server guard: a statement word as a bare alias is refused', () => {
  it.each(statementWords)('%s', async (w) => {
    await expectRefused('MSSQL', bareAlias(w));
  });

  it('refuses SHUTDOWN, COMMIT and RECONFIGURE after a table as MULTIPLE_STATEMENTS', async () => {
    for (const sql of ['SELECT * FROM t SHUTDOWN', 'SELECT * FROM t COMMIT', 'SELECT * FROM t RECONFIGURE']) {
      const e = await refusal('MSSQL', sql);
      expect(e?.details, sql).toEqual({ statementType: 'MULTIPLE_STATEMENTS' });
      expect(e?.message).toMatch(/reserved word in SQL Server/);
    }
  });

  it('refuses any reserved word as a bare alias, not only statement words', async () => {
    await expectRefused('MSSQL', [
      'SELECT * FROM t KEY',
      'SELECT a PERCENT FROM t',
      'SELECT * FROM t FILE',
      'SELECT * FROM t PUBLIC',
      'SELECT a USER FROM t',
      'SELECT * FROM t STATISTICS',
      'SELECT * FROM t TRAN',
    ]);
  });

  it('refuses the second statement written out with its arguments', async () => {
    await expectRefused('MSSQL', [
      'SELECT * FROM t SHUTDOWN WITH NOWAIT',
      'SELECT * FROM t KILL 52',
      "SELECT * FROM t BACKUP DATABASE sales TO DISK = 'x.bak'",
      "SELECT * FROM t RESTORE DATABASE sales FROM DISK = 'x.bak'",
      'SELECT * FROM t DBCC CHECKDB',
      'SELECT * FROM t RECONFIGURE WITH OVERRIDE',
      'SELECT * FROM t ROLLBACK TRANSACTION',
      'SELECT * FROM t COMMIT TRAN',
      'SELECT * FROM t CHECKPOINT 10',
      'SELECT * FROM t USE master',
      'SELECT * FROM t SET NOCOUNT ON',
      "SELECT * FROM t SETUSER 'dbo'",
      'SELECT * FROM t GRANT SELECT ON t TO public',
      'SELECT * FROM t DENY SELECT ON t TO public',
      "SELECT * FROM t PRINT 'x'",
      "SELECT * FROM t RAISERROR('x', 16, 1)",
      'SELECT * FROM t TRUNCATE TABLE t',
      "SELECT * FROM t BULK INSERT t FROM 'x'",
      'SELECT * FROM t OPEN c',
      'SELECT * FROM t CLOSE c',
      'SELECT * FROM t DEALLOCATE c',
      'SELECT * FROM t FETCH NEXT FROM c',
      'SELECT * FROM t SAVE TRAN s',
      'SELECT * FROM t WHILE 1 = 1 SELECT 1',
      'SELECT * FROM t IF 1 = 1 SHUTDOWN',
      'SELECT * FROM t BEGIN TRAN',
      'SELECT * FROM t BEGIN SHUTDOWN END',
      'SELECT * FROM t GOTO x',
      'SELECT * FROM t RETURN',
      "SELECT * FROM t WAITFOR DELAY '00:00:10'",
      "SELECT * FROM t THROW 50000, 'x', 1",
      'SELECT * FROM t REVERT',
      'SELECT * FROM t EXEC sp_who',
      'SELECT * FROM t DROP TABLE t',
      'SELECT * FROM t SHUTDOWN WHERE 1 = 1',
      'SELECT 1 x SHUTDOWN',
      'SELECT * FROM t x SHUTDOWN',
      'SELECT * FROM t [x] SHUTDOWN',
      'SELECT * FROM t "x" COMMIT',
      'SELECT * FROM t WITH (NOLOCK) SHUTDOWN',
      'SELECT * FROM t WHERE a = 1 SHUTDOWN',
      'SELECT * FROM t ORDER BY a SHUTDOWN',
      'SELECT a FROM t GROUP BY a SHUTDOWN',
      'SELECT a FROM t GROUP BY a HAVING COUNT(*) > 1 SHUTDOWN',
      'SELECT * FROM t ORDER BY a OFFSET 1 ROWS SHUTDOWN',
      "SELECT a FROM t FOR XML PATH('') SHUTDOWN",
      'SELECT TOP 1 * FROM t SHUTDOWN',
    ]);
  });

  it('refuses text sqlparser-rs stops reading at END', async () => {
    await expectRefused('MSSQL', [
      'SELECT * FROM t END',
      'SELECT 1 END SELECT 2',
      'SELECT * FROM t END SHUTDOWN',
      'SELECT a FROM t END\nSHUTDOWN',
      'SELECT a END FROM t',
      'SELECT * FROM t JOIN u END ON 1 = 1',
      'SELECT CASE WHEN 1 = 1 THEN 1 END END',
      'SELECT * FROM t /* c */ END -- c\n SHUTDOWN',
      'SELECT * FROM t END;',
    ]);
  });
});

describe('SQL Server guard: after AS the server reads a name or fails on the batch, never a new statement', () => {
  it('accepts a reserved word after AS (c.precision AS precision, as the introspection query writes it)', async () => {
    for (const sql of [
      'SELECT c.precision AS precision, c.scale AS scale FROM sys.columns c',
      'SELECT * FROM t AS SHUTDOWN',
      'SELECT a AS commit FROM t',
      'SELECT * FROM t AS /* c */\nReconfigure',
    ])
      expect((await assertReadOnly('MSSQL', sql)).kind, sql).toBe('select');
  });

  it('still refuses the same word without AS, anywhere in the statement', async () => {
    await expectRefused('MSSQL', [
      'SELECT c.precision AS precision FROM sys.columns c SHUTDOWN',
      'SELECT a AS commit, b commit FROM t',
      'SELECT * FROM t AS x JOIN u shutdown ON 1 = 1',
    ]);
  });
});

describe('SQL Server guard: valid reads keep passing', () => {
  it.each([
    'SELECT * FROM t [commit]',
    'SELECT * FROM t AS [shutdown]',
    'SELECT * FROM t "commit"',
    'SELECT * FROM t AS "reconfigure"',
    'SELECT a AS [reconfigure] FROM t',
    'SELECT a [rollback] FROM t',
    "SELECT a 'commit' FROM t",
    'SELECT a AS "end" FROM t',
    'SELECT a [end]',
    'SELECT * FROM (SELECT 1 AS a) [commit]',
    'SELECT * FROM t JOIN u [kill] ON t.id = [kill].id',
    'SELECT x [order] FROM t ORDER BY x',
    'SELECT a [from], b [to] FROM t',
    'SELECT * FROM t AS x',
    'SELECT * FROM t x',
    'SELECT a x FROM t',
    'SELECT * FROM t total',
    'SELECT a name, b status, c type, d value, e date, f year, g level FROM t',
    // Not reserved: SQL Server reads it as an alias (a THROW statement must follow a `;`).
    'SELECT * FROM t throw',
    'SELECT * FROM t receive',
    "SELECT CASE WHEN a = 1 THEN 'x' ELSE 'y' END AS result FROM t",
    "SELECT CASE WHEN a = 1 THEN 'x' END result FROM t",
    'SELECT COUNT(*) [count] FROM t',
    'SELECT * FROM t WITH (NOLOCK)',
    'SELECT * FROM t x WITH (NOLOCK)',
    'SELECT * FROM t FULL OUTER JOIN u ON t.id = u.id',
    'SELECT * FROM t ORDER BY a OFFSET 1 ROWS FETCH NEXT 5 ROWS ONLY',
    "SELECT a FROM t FOR XML PATH('')",
    'SELECT a FROM t FOR JSON AUTO',
    'SELECT * FROM (SELECT a, b FROM t) s PIVOT (SUM(b) FOR a IN ([x], [y])) p',
    'SELECT a FROM t;',
    'SELECT 1 AS a -- comment: commit; shutdown; END\n',
    "SELECT 'SHUTDOWN' AS x, N'END' AS y",
    'SELECT [end], [commit] FROM [shutdown]',
    "SELECT a FROM t WHERE b = 'x END y'",
    'SELECT t.a, u.b FROM dbo.t AS t LEFT JOIN dbo.u AS u ON u.id = t.id',
  ])('%s', async (sql) => {
    expect((await assertReadOnly('MSSQL', sql)).kind).toBe('select');
  });
});

describe('SQL Server guard: statements only node-sql-parser reads', () => {
  const { Parser } = transactsql as unknown as {
    Parser: new () => { astify(sql: string, o: object): unknown };
  };
  const check = (sql: string) =>
    assertNoReservedNspAlias(
      new Parser().astify(sql, { database: 'TransactSQL' }),
      lex(sql, { dialect: 'mssql', backslashEscapes: false }).tokens,
    );

  it('refuses a reserved alias that sqlparser-rs cannot parse (node-sql-parser reads it as an alias)', async () => {
    const e = await refusal('MSSQL', 'SELECT a PRINT');
    expect(e?.details).toEqual({ statementType: 'MULTIPLE_STATEMENTS' });
    expect(() => check('SELECT * FROM t PRINT')).toThrow(/PRINT is a reserved word/);
    expect(() => check('SELECT a RAISERROR FROM t')).toThrow(/RAISERROR is a reserved word/);
  });

  it('keeps no quoting, so a bracketed reserved alias passes unless the word is also written bare', () => {
    expect(() => check('SELECT a [print] FROM t')).not.toThrow();
    expect(() => check('SELECT a AS "print" FROM t')).not.toThrow();
    expect(() => check('SELECT a [from] FROM t')).toThrow(/FROM is a reserved word/);
    expect(() => check('SELECT c.precision AS precision FROM sys.columns c')).not.toThrow();
  });
});

describe('END truncation in the other sqlparser-rs dialects', () => {
  it.each<DbType>(['MYSQL', 'MARIADB', 'SQLITE'])('%s refuses text not read to its end', async (type) => {
    await expectRefused(type, [
      'SELECT 1 END SELECT 2',
      'SELECT a FROM t WHERE b = 1 END SELECT 2',
      'SELECT a FROM t ORDER BY a END KILL 1',
    ]);
  });

  it('their own reserved words keep their own rules: SHUTDOWN and THROW are names there', async () => {
    for (const type of ['MYSQL', 'MARIADB', 'SQLITE'] as DbType[])
      for (const sql of ['SELECT * FROM t shutdown', 'SELECT a throw FROM t'])
        expect((await assertReadOnly(type, sql)).kind, `${type} ${sql}`).toBe('select');
  });
});
