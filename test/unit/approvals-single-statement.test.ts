import { describe, expect, it } from 'vitest';
import type { DbType } from '../../shared/databases/drivers/types';
import { verifyWrite } from '../../shared/guard/write';

type Sql = Exclude<DbType, 'MONGODB'>;

const refusal = async (type: Sql, text: string) => {
  const e = (await verifyWrite(type, text).then(
    () => {
      throw new Error(`accepted: ${text}`);
    },
    (x) => x,
  )) as { status: number; code: string; details: { statementType: string } };
  return e;
};

describe('verifyWrite: valid single writes of each dialect, on its real grammar', () => {
  it.each<[Sql, string, string]>([
    ['POSTGRES', 'DELETE FROM t USING u WHERE t.id = u.id', 'DELETE'],
    ['POSTGRES', 'UPDATE t SET a = u.a FROM u WHERE t.id = u.id', 'UPDATE'],
    [
      'POSTGRES',
      'INSERT INTO t (id, a) VALUES (1, 2) ON CONFLICT (id) DO UPDATE SET a = EXCLUDED.a',
      'INSERT',
    ],
    ['POSTGRES', 'INSERT INTO t (id) VALUES (1) ON CONFLICT DO NOTHING RETURNING *', 'INSERT'],
    ['POSTGRES', 'WITH x AS (SELECT 1 AS id) UPDATE t SET a = 1 FROM x WHERE t.id = x.id', 'UPDATE'],
    ['POSTGRES', 'WITH d AS (DELETE FROM t RETURNING *) INSERT INTO archive SELECT * FROM d', 'INSERT'],
    [
      'POSTGRES',
      'MERGE INTO t USING u ON t.id = u.id WHEN MATCHED THEN UPDATE SET a = u.a WHEN NOT MATCHED THEN INSERT (id, a) VALUES (u.id, u.a)',
      'MERGE',
    ],
    ['POSTGRES', "UPDATE t SET a = $$it's; fine$$ WHERE id = 1;", 'UPDATE'],
    ['POSTGRES', 'UPDATE t SET a = $q$ $$ ; $$ $q$', 'UPDATE'],
    ['POSTGRES', "UPDATE t SET a = 'x;y' -- trailing ; comment", 'UPDATE'],
    ['POSTGRES', 'UPDATE t SET a = 1 /* nested /* ; DROP TABLE t */ still a comment ; */', 'UPDATE'],
    // A backslash ends the string as the server reads it (standard_conforming_strings on).
    ['POSTGRES', "UPDATE t SET path = 'C:\\' WHERE id = 1", 'UPDATE'],
    ['POSTGRES', "UPDATE t SET a = E'it\\'s; fine'", 'UPDATE'],
    ['POSTGRES', 'UPDATE "odd;name" SET "a;b" = 1;;', 'UPDATE'],
    ['POSTGRES', '/* leading */ DELETE FROM t WHERE id = 1 /* c */ ;', 'DELETE'],
    ['POSTGRES', 'CREATE TABLE n (a int)', 'CREATE'],
    ['MARIADB', 'UPDATE a JOIN b ON a.id = b.id SET a.x = b.x WHERE b.y > 1', 'UPDATE'],
    ['MARIADB', 'INSERT INTO t (id, a) VALUES (1, 2) ON DUPLICATE KEY UPDATE a = VALUES(a)', 'INSERT'],
    ['MYSQL', 'INSERT INTO t (id, a) VALUES (1, 2) AS new ON DUPLICATE KEY UPDATE a = new.a', 'INSERT'],
    ['MARIADB', 'DELETE a FROM a JOIN b ON a.id = b.id', 'DELETE'],
    ['MYSQL', 'DELETE a, b FROM a JOIN b ON a.id = b.id', 'DELETE'],
    ['MYSQL', 'WITH x AS (SELECT 1 AS id) UPDATE t JOIN x ON t.id = x.id SET t.a = 1', 'UPDATE'],
    ['MARIADB', "REPLACE INTO t VALUES (1, 'x')", 'INSERT'],
    ['MARIADB', 'INSERT IGNORE INTO t VALUES (1, 2)', 'INSERT'],
    ['MARIADB', 'UPDATE t SET a = 1 ORDER BY id LIMIT 1', 'UPDATE'],
    // A backslash escape, read as the server reads it by default (sql_mode without NO_BACKSLASH_ESCAPES).
    ['MARIADB', "INSERT INTO t VALUES ('it\\'s')", 'INSERT'],
    ['MARIADB', 'UPDATE t SET a = "x;y" # comment ; here', 'UPDATE'],
    ['MARIADB', 'UPDATE `odd;name` SET a = 1 -- c\n;', 'UPDATE'],
    ['MARIADB', 'DELETE FROM t WHERE id = 1 RETURNING id', 'DELETE'],
    ['SQLITE', 'INSERT INTO t (id, a) VALUES (1, 2) ON CONFLICT(id) DO UPDATE SET a = excluded.a', 'INSERT'],
    ['SQLITE', 'INSERT INTO t (id, a) VALUES (1, 2) ON CONFLICT DO NOTHING', 'INSERT'],
    ['SQLITE', 'INSERT OR REPLACE INTO t VALUES (1, 2)', 'INSERT'],
    ['SQLITE', 'UPDATE t SET a = u.a FROM u WHERE t.id = u.id', 'UPDATE'],
    ['SQLITE', 'WITH x AS (SELECT 1) DELETE FROM t WHERE id IN (SELECT * FROM x)', 'DELETE'],
    ['SQLITE', 'UPDATE t SET a = 1 RETURNING *', 'UPDATE'],
    ['SQLITE', `UPDATE [odd;name] SET "a;b" = 'x;y';`, 'UPDATE'],
    ['SQLITE', 'DELETE FROM t;', 'DELETE'],
    [
      'MSSQL',
      'MERGE INTO t USING u ON t.id = u.id WHEN MATCHED THEN UPDATE SET a = u.a WHEN NOT MATCHED THEN INSERT (id, a) VALUES (u.id, u.a);',
      'MERGE',
    ],
    [
      'MSSQL',
      'MERGE t AS tgt USING (SELECT 1 AS id) AS src ON tgt.id = src.id WHEN MATCHED THEN DELETE OUTPUT deleted.id;',
      'MERGE',
    ],
    ['MSSQL', 'UPDATE t SET a = u.a FROM t JOIN u ON t.id = u.id', 'UPDATE'],
    ['MSSQL', 'UPDATE TOP (10) t SET a = 1', 'UPDATE'],
    ['MSSQL', 'DELETE FROM t OUTPUT deleted.id WHERE a = 1', 'DELETE'],
    ['MSSQL', 'INSERT INTO t (a) OUTPUT inserted.id VALUES (1)', 'INSERT'],
    ['MSSQL', 'WITH x AS (SELECT 1 AS id) UPDATE t SET a = 1 FROM t JOIN x ON t.id = x.id', 'UPDATE'],
    ['MSSQL', "UPDATE [odd;name] SET [a] = N'x;y'", 'UPDATE'],
    ['MSSQL', "UPDATE t SET a = CASE WHEN b = 1 THEN 'x' ELSE 'y' END WHERE id = 1", 'UPDATE'],
    // A reserved word is a name only when quoted.
    ['MSSQL', 'DELETE FROM t [commit] WHERE [commit].id = 1', 'DELETE'],
    ['MSSQL', 'UPDATE t SET a = 1 FROM t AS "key"', 'UPDATE'],
    ['MSSQL', 'UPDATE t SET a = 1 /* nested /* ; DROP TABLE t */ ; */', 'UPDATE'],
  ])('%s %s → %s', async (type, text, statementType) => {
    expect(await verifyWrite(type, text)).toBe(statementType);
  });
});

describe('verifyWrite: anything but one statement is 400 READ_ONLY_VIOLATION', () => {
  it.each<[Sql, string, string]>([
    ['POSTGRES', 'UPDATE t SET a = 1; DROP TABLE t', 'MULTIPLE_STATEMENTS'],
    ['POSTGRES', 'DELETE FROM t USING u WHERE t.id = u.id; DELETE FROM u', 'MULTIPLE_STATEMENTS'],
    [
      'POSTGRES',
      'INSERT INTO t VALUES (1) ON CONFLICT (id) DO UPDATE SET a = 1; DROP TABLE t',
      'MULTIPLE_STATEMENTS',
    ],
    ['POSTGRES', 'WITH x AS (SELECT 1) UPDATE t SET a = 1; SELECT 1', 'MULTIPLE_STATEMENTS'],
    ['POSTGRES', 'UPDATE t SET a = 1 /* c */; DELETE FROM t', 'MULTIPLE_STATEMENTS'],
    ['POSTGRES', 'UPDATE t SET a = 1 -- c\n; DROP TABLE t', 'MULTIPLE_STATEMENTS'],
    // With standard_conforming_strings off the backslash escapes the quote: a second statement appears.
    ['POSTGRES', "UPDATE t SET a = '\\'; DROP TABLE t; --'", 'MULTIPLE_STATEMENTS'],
    ['POSTGRES', "UPDATE t SET a = 'C:\\' WHERE b = ';'", 'MULTIPLE_STATEMENTS'],
    ['POSTGRES', 'UPDATE t SET a = $$x$$; DROP TABLE t', 'MULTIPLE_STATEMENTS'],
    ['POSTGRES', 'UPDATE t SET a = $q$ $$ $q$; DROP TABLE t', 'MULTIPLE_STATEMENTS'],
    ['POSTGRES', 'UPDATE t SET a = 1 /* /* */ ; DROP TABLE t', 'UNPARSEABLE'],
    ['POSTGRES', "UPDATE t SET a = 'open", 'UNPARSEABLE'],
    ['POSTGRES', 'UPDATE t SET a = $$open', 'UNPARSEABLE'],
    ['POSTGRES', 'UPDATE t SET a = 1 DELETE FROM t', 'UNPARSEABLE'],
    ['POSTGRES', 'UPDATE t SET a = 1 END', 'UNPARSEABLE'],
    ['POSTGRES', "UPDATE t SET a = 'x'\u0000; DROP TABLE t", 'UNPARSEABLE'],
    ['MARIADB', "INSERT INTO t VALUES ('a\\'; DROP TABLE t; -- ')", 'MULTIPLE_STATEMENTS'],
    ['MARIADB', 'UPDATE t SET a = "x\\"; DROP TABLE t; -- "', 'MULTIPLE_STATEMENTS'],
    ['MYSQL', 'DELETE FROM t /*!50000 ; DROP TABLE t */', 'EXECUTABLE_COMMENT'],
    ['MARIADB', 'UPDATE t SET a = 1 /*M! ; DROP TABLE t */', 'EXECUTABLE_COMMENT'],
    ['MARIADB', 'UPDATE t SET a = 1 # ; \n; DELETE FROM t', 'MULTIPLE_STATEMENTS'],
    // MySQL's "--" needs a space after it to start a comment: here it is 1 - -1, then a second statement.
    ['MARIADB', 'UPDATE t SET a = 1 --1; DROP TABLE t', 'MULTIPLE_STATEMENTS'],
    [
      'MARIADB',
      'INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = 1; DROP TABLE t',
      'MULTIPLE_STATEMENTS',
    ],
    ['MARIADB', 'UPDATE a JOIN b ON a.id = b.id SET a.x = 1; DELETE FROM b', 'MULTIPLE_STATEMENTS'],
    // The parser stops reading at END after a statement and would drop the rest.
    ['MARIADB', 'UPDATE a JOIN b ON a.id = b.id SET a.x = 1 END DROP TABLE t', 'UNPARSEABLE'],
    ['MYSQL', 'UPDATE t SET a = 1 END', 'UNPARSEABLE'],
    ['SQLITE', 'UPDATE t SET a = 1; DETACH x', 'MULTIPLE_STATEMENTS'],
    [
      'SQLITE',
      'INSERT INTO t VALUES (1) ON CONFLICT(id) DO UPDATE SET a = 1; DROP TABLE t',
      'MULTIPLE_STATEMENTS',
    ],
    ['SQLITE', "UPDATE t SET a = 1 /* ; */; ATTACH DATABASE 'x.db' AS x", 'MULTIPLE_STATEMENTS'],
    ['SQLITE', 'UPDATE [a;b] SET a = 1;\n-- c\n;DELETE FROM t', 'MULTIPLE_STATEMENTS'],
    ['SQLITE', 'UPDATE t SET a = 1 END', 'UNPARSEABLE'],
    ['SQLITE', 'DELETE FROM t END DROP TABLE t', 'UNPARSEABLE'],
    ['MSSQL', 'UPDATE t SET a = 1; DROP TABLE t', 'MULTIPLE_STATEMENTS'],
    ['MSSQL', 'MERGE t USING u ON t.id = u.id WHEN MATCHED THEN DELETE; DROP TABLE t', 'MULTIPLE_STATEMENTS'],
    // SQL Server needs no semicolon between statements.
    ['MSSQL', 'UPDATE t SET a = 1 DROP TABLE t', 'UNPARSEABLE'],
    ['MSSQL', "UPDATE t SET a = 1 WAITFOR DELAY '00:00:10'", 'UNPARSEABLE'],
    ['MSSQL', "UPDATE t SET a = 1 EXEC('DROP TABLE t')", 'UNPARSEABLE'],
    ['MSSQL', 'DELETE FROM t COMMIT', 'MULTIPLE_STATEMENTS'],
    ['MSSQL', 'DELETE FROM t SHUTDOWN', 'MULTIPLE_STATEMENTS'],
    ['MSSQL', 'INSERT INTO t SELECT a FROM u ROLLBACK', 'MULTIPLE_STATEMENTS'],
    ['MSSQL', 'INSERT INTO t SELECT 1 reconfigure', 'MULTIPLE_STATEMENTS'],
    ['MSSQL', 'DELETE FROM t OUTPUT deleted.id CHECKPOINT', 'MULTIPLE_STATEMENTS'],
    [
      'MSSQL',
      'UPDATE t SET a = 1 FROM t JOIN u ON t.id = u.id JOIN v Commit ON 1 = 1',
      'MULTIPLE_STATEMENTS',
    ],
    ['MSSQL', 'UPDATE t SET a = 1 FROM t Commit', 'MULTIPLE_STATEMENTS'],
    // Any reserved word, not only a statement word: the server never reads it as a name.
    ['MSSQL', 'UPDATE t SET a = 1 FROM t KEY', 'MULTIPLE_STATEMENTS'],
    ['MSSQL', 'INSERT INTO t SELECT a FROM u -- c\n/* c */ Shutdown', 'MULTIPLE_STATEMENTS'],
    ['MSSQL', 'UPDATE t SET a = 1 END DROP TABLE t', 'UNPARSEABLE'],
    ['MSSQL', 'UPDATE t SET a = 1 /* ; DROP TABLE t', 'UNPARSEABLE'],
  ])('%s %j → 400 %s', async (type, text, statementType) => {
    const e = await refusal(type, text);
    expect(e.status).toBe(400);
    expect(e.code).toBe('READ_ONLY_VIOLATION');
    expect(e.details.statementType).toBe(statementType);
  });

  it('names the parser’s reason for text it cannot read', async () => {
    const e = (await refusal('POSTGRES', 'UPDATE t SET a = 1 DELETE FROM t')) as unknown as {
      message: string;
      details: { reason: string };
    };
    expect(e.details.reason).toMatch(/syntax error/);
    expect(e.message).toMatch(/PostgreSQL's parser rejected it/);
  });
});
