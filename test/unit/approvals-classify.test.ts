import { describe, expect, it } from 'vitest';
// The provisional classifier: delete this file with shared/approvals/classify.ts when approvals.ts
// switches to the guard's `classifyStatement` (which has its own tests).
import { classifyStatement } from '../../shared/approvals/classify';
import type { DbType } from '../../shared/databases/drivers/types';

const fails = async (type: DbType, text: string) => {
  try {
    await classifyStatement(type, text);
  } catch (e) {
    return e as { status: number; code: string; details?: { statementType?: string } };
  }
  throw new Error(`accepted: ${text}`);
};

describe('classifyStatement (CONTRACTS.md): one statement, read or write, by the guard’s parsers', () => {
  it.each<[DbType, string, 'read' | 'write', string]>([
    ['POSTGRES', 'SELECT * FROM t', 'read', 'SELECT'],
    ['POSTGRES', 'WITH x AS (SELECT 1) SELECT * FROM x', 'read', 'SELECT'],
    ['POSTGRES', 'UPDATE t SET a = 1 WHERE id = 2', 'write', 'UPDATE'],
    ['POSTGRES', 'INSERT INTO t (a) VALUES (1);', 'write', 'INSERT'],
    ['POSTGRES', 'DELETE FROM t -- trailing ; comment', 'write', 'DELETE'],
    ['POSTGRES', 'CREATE TABLE n (a int)', 'write', 'CREATE'],
    ['MARIADB', 'UPDATE t SET a = 1', 'write', 'UPDATE'],
    ['MYSQL', 'SELECT 1', 'read', 'SELECT'],
    ['SQLITE', 'DELETE FROM t WHERE id = 1', 'write', 'DELETE'],
    ['MSSQL', 'UPDATE t SET a = 1', 'write', 'UPDATE'],
    ['MONGODB', '{"collection":"a","filter":{}}', 'read', 'MONGO'],
    // Writes the node-sql-parser grammars could not read, verified on the guard's own grammars.
    ['POSTGRES', 'DELETE FROM t USING u WHERE t.id = u.id', 'write', 'DELETE'],
    ['POSTGRES', 'INSERT INTO t (id) VALUES (1) ON CONFLICT (id) DO UPDATE SET a = 2', 'write', 'INSERT'],
    ['POSTGRES', 'WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d', 'write', 'DELETE'],
    ['POSTGRES', 'SELECT * FROM t FOR UPDATE', 'write', 'LOCKING_READ'],
    ['MARIADB', 'UPDATE a JOIN b ON a.id = b.id SET a.x = b.x', 'write', 'UPDATE'],
    ['MARIADB', 'WITH x AS (SELECT 1 AS id) UPDATE t JOIN x ON t.id = x.id SET t.a = 1', 'write', 'UPDATE'],
    ['SQLITE', 'INSERT INTO t (id) VALUES (1) ON CONFLICT(id) DO UPDATE SET a = 2', 'write', 'INSERT'],
    ['MSSQL', 'MERGE t USING u ON t.id = u.id WHEN MATCHED THEN DELETE;', 'write', 'MERGE'],
  ])('%s %s → %s', async (type, text, kind, statementType) => {
    expect(await classifyStatement(type, text)).toEqual({ kind, statementType });
  });

  it.each<[DbType, string, string]>([
    ['POSTGRES', 'UPDATE t SET a = 1; DROP TABLE t', 'MULTIPLE_STATEMENTS'],
    ['POSTGRES', 'SELECT 1; DELETE FROM t', 'MULTIPLE_STATEMENTS'],
    ['POSTGRES', 'UPDATE t SET a = 1 /* x */; DELETE FROM t', 'MULTIPLE_STATEMENTS'],
    // Under standard_conforming_strings off the backslash escapes the quote: a second statement appears.
    ['POSTGRES', "UPDATE t SET a = '\\'; DROP TABLE t; --'", 'MULTIPLE_STATEMENTS'],
    ['POSTGRES', "UPDATE t SET a = 'open", 'UNPARSEABLE'],
    ['POSTGRES', 'DELETE FROM t USING u WHERE t.id = u.id; DELETE FROM u', 'MULTIPLE_STATEMENTS'],
    // What the parser cannot verify does not run.
    ['POSTGRES', 'UPDATE t SET a = 1 DELETE FROM t', 'UNPARSEABLE'],
    ['MSSQL', 'DELETE FROM t COMMIT', 'MULTIPLE_STATEMENTS'],
    // A read the guard once verified as one statement: SQL Server reads SELECT … FROM t, then SHUTDOWN.
    ['MSSQL', 'SELECT * FROM t SHUTDOWN', 'MULTIPLE_STATEMENTS'],
    ['MSSQL', 'SELECT a FROM t -- c\nreconfigure', 'MULTIPLE_STATEMENTS'],
    ['MSSQL', 'SELECT * FROM t END SHUTDOWN', 'UNPARSEABLE'],
    ['MARIADB', 'UPDATE t SET a = 1 /*! ; DROP TABLE t */', 'EXECUTABLE_COMMENT'],
    ['MARIADB', "INSERT INTO t VALUES ('a\\'; DROP TABLE t; -- ')", 'MULTIPLE_STATEMENTS'],
    ['SQLITE', 'UPDATE t SET a = 1; DETACH x', 'MULTIPLE_STATEMENTS'],
  ])('%s %s → 400 %s', async (type, text, statementType) => {
    const e = await fails(type, text);
    expect(e.status).toBe(400);
    expect(e.code).toBe('READ_ONLY_VIOLATION');
    expect(e.details?.statementType).toBe(statementType);
  });

  it('empty text is 400; a MongoDB $out is a write (refused at submission as MongoDB runs only reads)', async () => {
    expect((await fails('POSTGRES', '  ')).status).toBe(400);
    expect((await fails('POSTGRES', '-- nothing')).status).toBe(400);
    expect(await classifyStatement('MONGODB', '{"collection":"a","pipeline":[{"$out":"b"}]}')).toMatchObject({
      kind: 'write',
    });
  });
});
