import { describe, expect, it } from 'vitest';
import { assertSingleStatement } from '../../shared/approvals/single-statement';
import type { DbType } from '../../shared/connections/drivers/types';

describe('assertSingleStatement: kept for every write whatever classifier is in use', () => {
  it.each<[Exclude<DbType, 'MONGODB'>, string, string]>([
    ['SQLITE', 'DELETE FROM t; DELETE FROM u', 'MULTIPLE_STATEMENTS'],
    ['MARIADB', "INSERT INTO t VALUES ('a\\'; DROP TABLE t; -- ')", 'MULTIPLE_STATEMENTS'],
    ['POSTGRES', 'UPDATE t SET a = 1; DROP TABLE t', 'MULTIPLE_STATEMENTS'],
    ['MSSQL', 'UPDATE t SET a = 1; DROP TABLE t', 'MULTIPLE_STATEMENTS'],
    ['MYSQL', 'DELETE FROM t /*!50000 ; DROP TABLE t */', 'EXECUTABLE_COMMENT'],
  ])('%s %s → 400 %s', async (type, text, statementType) => {
    const e = (await assertSingleStatement(type, text).catch((x) => x)) as {
      code: string;
      details: { statementType: string };
    };
    expect(e.code).toBe('READ_ONLY_VIOLATION');
    expect(e.details.statementType).toBe(statementType);
  });

  it('returns the parsed type of one statement', async () => {
    expect(await assertSingleStatement('SQLITE', 'DELETE FROM t;')).toBe('DELETE');
    expect(await assertSingleStatement('MSSQL', 'UPDATE t SET a = 1')).toBe('UPDATE');
  });
});
