import { describe, expect, it } from 'vitest';
import type { DbType } from '../../shared/databases/drivers/types';
import { assertReadOnly, classifyStatement } from '../../shared/guard/read';
import type { AppError } from '../../shared/platform/errors';

const refusal = async (type: DbType, sql: string): Promise<AppError> => {
  try {
    await assertReadOnly(type, sql);
  } catch (e) {
    return e as AppError;
  }
  throw new Error(`expected ${type} to refuse: ${sql}`);
};

const allowed: [DbType, string, string][] = [
  ['POSTGRES', 'SELECT 1', 'select'],
  ['POSTGRES', 'select * from orders where id = $1 and status = $2', 'select'],
  ['POSTGRES', 'SELECT * FROM t WHERE a = $1::int AND b = $2::text[]', 'select'],
  ['POSTGRES', 'WITH recent AS (SELECT * FROM orders) SELECT count(*) FROM recent', 'select'],
  ['POSTGRES', '  -- leading comment\n/* block */ SELECT 1;', 'select'],
  ['POSTGRES', 'VALUES (1, 2), (3, 4)', 'values'],
  ['POSTGRES', 'EXPLAIN SELECT * FROM orders', 'explain'],
  ['POSTGRES', 'EXPLAIN (BUFFERS false, FORMAT JSON) SELECT * FROM orders', 'explain'],
  ['POSTGRES', 'EXPLAIN (ANALYZE false) SELECT * FROM orders', 'explain'],
  // Read by the server's own grammar (issue 9): these were refused by node-sql-parser.
  ['POSTGRES', 'SELECT now() AS at', 'select'],
  ['POSTGRES', 'SELECT * FROM orders WHERE total > $1::numeric AND day = $2::date', 'select'],
  ['POSTGRES', 'TABLE orders', 'select'],
  ['POSTGRES', 'SELECT x FROM generate_series(1, 3) AS g(x), LATERAL (SELECT x * 2) y(z)', 'select'],
  ['POSTGRES', 'SELECT a, rank() OVER w AS rank FROM t WINDOW w AS (ORDER BY a)', 'select'],
  ['POSTGRES', "SELECT jsonb_path_query(doc, '$.a[*] ? (@ > 1)') FROM t", 'select'],
  ['POSTGRES', 'SELECT 1 UNION ALL SELECT 2 ORDER BY 1', 'select'],
  ['POSTGRES', 'SHOW search_path', 'show'],
  ['POSTGRES', "SELECT 'it''s', E'a\\'b', $$x; DROP$$ AS s", 'select'],
  ['POSTGRES', 'SELECT "update" FROM t', 'select'],
  ['POSTGRES', "SELECT replace(name, 'a', 'b'), now() - interval '1 day' FROM t", 'select'],
  ['POSTGRES', 'SELECT t.update FROM t', 'select'],
  ['MYSQL', 'SELECT * FROM orders WHERE id = ? AND status = ?', 'select'],
  ['MYSQL', 'SHOW TABLES', 'show'],
  ['MYSQL', 'DESCRIBE orders', 'describe'],
  ['MYSQL', 'DESC orders', 'describe'],
  ['MYSQL', 'EXPLAIN SELECT * FROM orders', 'explain'],
  ['MYSQL', 'EXPLAIN FORMAT=JSON SELECT * FROM orders', 'explain'],
  ['MYSQL', "SELECT 'it\\'s' AS s, `weird name` FROM t # comment", 'select'],
  [
    'MYSQL',
    "SELECT CAST(a AS CHAR CHARACTER SET utf8mb4), REPLACE(a, 'x', 'y'), TRUNCATE(1.5, 0) FROM t",
    'select',
  ],
  ['MYSQL', 'SELECT /*+ MAX_EXECUTION_TIME(1000) */ * FROM t', 'select'],
  ['MARIADB', 'WITH x AS (SELECT 1 AS a) SELECT a FROM x', 'select'],
  ['MARIADB', 'SELECT * FROM t WHERE a = ?', 'select'],
  ['MSSQL', 'SELECT TOP 10 * FROM dbo.orders WHERE id = @p1', 'select'],
  ['MSSQL', 'SELECT [order id], name FROM [dbo].[orders] WITH (NOLOCK)', 'select'],
  ['MSSQL', 'SELECT * FROM t FOR JSON PATH', 'select'],
  ['SQLITE', 'SELECT * FROM t WHERE a = ? AND b = ?', 'select'],
  ['SQLITE', 'VALUES (1), (2)', 'values'],
  ['SQLITE', 'EXPLAIN QUERY PLAN SELECT * FROM t', 'explain'],
  // Nested comments (PostgreSQL, SQL Server): everything after SELECT 1 is one comment.
  ['POSTGRES', 'SELECT 1 /* /* nested */ ; DELETE FROM t; */', 'select'],
  ['MSSQL', 'SELECT 1 /* /* nested */ ; DROP TABLE t; */', 'select'],
  ['SQLITE', 'PRAGMA table_info(orders)', 'pragma'],
  ['SQLITE', 'PRAGMA main.index_list(orders)', 'pragma'],
  ['SQLITE', 'PRAGMA user_version', 'pragma'],
  [
    'SQLITE',
    'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5) SELECT x FROM c',
    'select',
  ],
];

const refused: [DbType, string, string][] = [
  // Writes and DDL
  ['POSTGRES', 'DELETE FROM t', 'DELETE'],
  ['POSTGRES', 'UPDATE t SET a = 1', 'UPDATE'],
  ['POSTGRES', 'INSERT INTO t VALUES (1)', 'INSERT'],
  ['POSTGRES', 'DROP TABLE t', 'DROP'],
  ['POSTGRES', 'CREATE TABLE x (a int)', 'CREATE'],
  ['POSTGRES', 'ALTER TABLE t ADD COLUMN b int', 'ALTER'],
  ['POSTGRES', 'TRUNCATE t', 'TRUNCATE'],
  ['POSTGRES', 'GRANT ALL ON t TO public', 'GRANT'],
  ['POSTGRES', "COPY t TO '/tmp/x'", 'COPY'],
  ['POSTGRES', 'CALL p()', 'CALL'],
  ['POSTGRES', 'DO $$ BEGIN DELETE FROM t; END $$', 'DO'],
  ['POSTGRES', 'SET statement_timeout = 0', 'SET'],
  ['POSTGRES', 'BEGIN', 'BEGIN'],
  ['POSTGRES', 'COMMIT', 'COMMIT'],
  ['POSTGRES', 'VACUUM t', 'VACUUM'],
  ['POSTGRES', 'LISTEN x', 'LISTEN'],
  ['POSTGRES', 'REFRESH MATERIALIZED VIEW v', 'REFRESH'],
  ['POSTGRES', 'PREPARE p AS DELETE FROM t', 'PREPARE'],
  ['POSTGRES', 'MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE', 'MERGE'],
  // Stacked statements
  ['POSTGRES', 'SELECT 1; DROP TABLE t', 'MULTIPLE_STATEMENTS'],
  ['POSTGRES', 'SELECT 1; -- x\nDROP TABLE t', 'MULTIPLE_STATEMENTS'],
  ['POSTGRES', 'SELECT 1; /* x */ SELECT 2', 'MULTIPLE_STATEMENTS'],
  ['POSTGRES', "SELECT '\\'; DROP TABLE t; --'", 'MULTIPLE_STATEMENTS'],
  ['POSTGRES', "SELECT E'\\''; DROP TABLE t; --'", 'MULTIPLE_STATEMENTS'],
  ['POSTGRES', 'SELECT $$ $$; DELETE FROM t; SELECT $$ $$', 'MULTIPLE_STATEMENTS'],
  ['POSTGRES', 'SELECT $a$ x $a$; DELETE FROM t', 'MULTIPLE_STATEMENTS'],
  ['MYSQL', 'SELECT 1 /* /* not nested in MySQL */ ; DELETE FROM t; -- */', 'MULTIPLE_STATEMENTS'],
  // Data-modifying CTEs, SELECT INTO, locking reads
  ['POSTGRES', 'WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d', 'DELETE'],
  ['POSTGRES', 'WITH u AS (UPDATE t SET a = 1 RETURNING *) SELECT 1', 'UPDATE'],
  ['POSTGRES', 'WITH i AS (INSERT INTO t VALUES (1) RETURNING *) SELECT 1', 'INSERT'],
  ['POSTGRES', 'SELECT * INTO new_table FROM t', 'SELECT_INTO'],
  ['POSTGRES', 'SELECT * FROM t FOR UPDATE', 'LOCKING_READ'],
  ['POSTGRES', 'SELECT * FROM t FOR SHARE', 'LOCKING_READ'],
  ['POSTGRES', 'SELECT * FROM t FOR NO KEY UPDATE', 'LOCKING_READ'],
  ['POSTGRES', 'SELECT * FROM t FOR KEY SHARE', 'LOCKING_READ'],
  // EXPLAIN of writes
  ['POSTGRES', 'EXPLAIN ANALYZE DELETE FROM t', 'EXPLAIN DELETE'],
  ['POSTGRES', 'EXPLAIN (ANALYZE) UPDATE t SET a = 1', 'EXPLAIN UPDATE'],
  ['POSTGRES', 'EXPLAIN EXPLAIN SELECT 1', 'UNPARSEABLE'],
  ['POSTGRES', 'EXPLAIN ANALYZE SELECT 1', 'EXPLAIN ANALYZE'],
  ['POSTGRES', 'EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM orders', 'EXPLAIN ANALYZE'],
  ['POSTGRES', 'EXPLAIN (ANALYZE true) SELECT 1', 'EXPLAIN ANALYZE'],
  ['POSTGRES', '(SELECT * FROM t) UNION (SELECT * FROM t FOR UPDATE)', 'LOCKING_READ'],
  ['POSTGRES', 'SELECT * FROM t WHERE a IN (SELECT a FROM u FOR SHARE)', 'LOCKING_READ'],
  ['POSTGRES', 'WITH x AS (SELECT 1), d AS (DELETE FROM t RETURNING 1) SELECT * FROM x', 'DELETE'],
  [
    'POSTGRES',
    'SELECT * FROM (WITH m AS (MERGE INTO t USING s ON true WHEN MATCHED THEN DELETE RETURNING 1) SELECT 1) q',
    'MERGE',
  ],
  // Side-effecting functions
  ['POSTGRES', 'SELECT pg_sleep(10)', 'FUNCTION'],
  ['POSTGRES', "SELECT pg_sleep_for('1 hour')", 'FUNCTION'],
  ['POSTGRES', 'SELECT pg_catalog.pg_sleep(10)', 'FUNCTION'],
  ['POSTGRES', 'SELECT "pg_sleep"(10)', 'FUNCTION'],
  ['POSTGRES', 'SELECT pg_sleep /* gap */ (10)', 'FUNCTION'],
  ['POSTGRES', 'SELECT * FROM pg_sleep(10)', 'FUNCTION'],
  ['POSTGRES', "SELECT nextval('s')", 'FUNCTION'],
  ['POSTGRES', "SELECT setval('s', 1)", 'FUNCTION'],
  ['POSTGRES', "SELECT set_config('x', 'y', false)", 'FUNCTION'],
  ['POSTGRES', 'SELECT pg_advisory_lock(1)', 'FUNCTION'],
  ['POSTGRES', 'SELECT pg_try_advisory_xact_lock(1)', 'FUNCTION'],
  ['POSTGRES', "SELECT lo_import('/etc/passwd')", 'FUNCTION'],
  ['POSTGRES', "SELECT lo_export(1, '/tmp/x')", 'FUNCTION'],
  ['POSTGRES', "SELECT dblink_exec('conn', 'DELETE FROM t')", 'FUNCTION'],
  ['POSTGRES', 'SELECT pg_terminate_backend(123)', 'FUNCTION'],
  ['POSTGRES', 'SELECT pg_cancel_backend(123)', 'FUNCTION'],
  ['POSTGRES', 'SELECT pg_reload_conf()', 'FUNCTION'],
  ['POSTGRES', "SELECT pg_read_file('/etc/passwd')", 'FUNCTION'],
  ['POSTGRES', "SELECT pg_read_binary_file('/etc/passwd')", 'FUNCTION'],
  ['POSTGRES', "SELECT pg_ls_dir('.')", 'FUNCTION'],
  ['POSTGRES', "SELECT pg_stat_file('x')", 'FUNCTION'],
  ['POSTGRES', "SELECT query_to_xml('DELETE FROM t', true, true, '')", 'FUNCTION'],
  ['POSTGRES', 'SELECT txid_current()', 'FUNCTION'],
  ['POSTGRES', "SELECT pg_notify('c', 'x')", 'FUNCTION'],
  ['POSTGRES', "SELECT * FROM pg_create_logical_replication_slot('s', 'test_decoding')", 'FUNCTION'],
  ['POSTGRES', 'SELECT pg_switch_wal()', 'FUNCTION'],
  // Functions that run SQL text, lock or maintain indexes, in any position or spelling (issue 8)
  [
    'POSTGRES',
    "SELECT * FROM ts_stat('SELECT to_tsvector(''simple'', dblink_exec(''dbname=x'', ''DELETE FROM u''))')",
    'FUNCTION',
  ],
  ['POSTGRES', "SELECT ts_rewrite('a'::tsquery, 'SELECT 1')", 'FUNCTION'],
  ['POSTGRES', "SELECT pg_catalog.ts_rewrite('a'::tsquery, 'SELECT 1')", 'FUNCTION'],
  ['POSTGRES', "SELECT cursor_to_xml('c', 1, true, true, '')", 'FUNCTION'],
  ['POSTGRES', 'SELECT "public"."dblink_exec"(\'x\', \'DELETE FROM t\')', 'FUNCTION'],
  ['POSTGRES', "SELECT 1 FROM t WHERE a = (SELECT length(dblink_exec('x', 'DELETE FROM t')))", 'FUNCTION'],
  ['POSTGRES', 'SELECT coalesce(NULL, pg_advisory_lock(1)::text)', 'FUNCTION'],
  ['POSTGRES', 'SELECT CASE WHEN true THEN pg_terminate_backend(1) END', 'FUNCTION'],
  ['POSTGRES', "SELECT brin_summarize_new_values('i'::regclass)", 'FUNCTION'],
  ['POSTGRES', "SELECT gin_clean_pending_list('i'::regclass)", 'FUNCTION'],
  ['POSTGRES', 'SELECT * FROM ROWS FROM (generate_series(1, 2), pg_sleep(1))', 'FUNCTION'],
  ['POSTGRES', 'SELECT array_agg(x ORDER BY pg_sleep(1)) FROM t', 'FUNCTION'],
  ['POSTGRES', 'VALUES (pg_advisory_lock(1))', 'FUNCTION'],
  ['POSTGRES', "EXPLAIN SELECT dblink_exec('x', 'DELETE FROM t')", 'FUNCTION'],
  // A backslash reading (standard_conforming_strings off) that hides a call from the parser
  ['POSTGRES', "SELECT 'a\\' , pg_sleep(1), '' AS x", 'FUNCTION'],
  // Unparseable text is refused, never run
  ['POSTGRES', 'SELEC 1', 'SELEC'],
  ['POSTGRES', 'SELECT FROM WHERE', 'UNPARSEABLE'],
  ['POSTGRES', "SELECT 'unterminated", 'UNPARSEABLE'],
  ['POSTGRES', 'SELECT 1 /* unterminated', 'UNPARSEABLE'],
  // MySQL / MariaDB
  ['MYSQL', '/*!50000 DROP TABLE t */', 'EXECUTABLE_COMMENT'],
  ['MYSQL', 'SELECT 1 /*!50000 , (SELECT SLEEP(5)) */', 'EXECUTABLE_COMMENT'],
  ['MYSQL', 'SELECT 1 /*! ; DROP TABLE t */', 'EXECUTABLE_COMMENT'],
  ['MARIADB', 'SELECT 1 /*M!100000 , SLEEP(5) */', 'EXECUTABLE_COMMENT'],
  ['MYSQL', 'SELECT 1; -- x\nDROP TABLE t', 'MULTIPLE_STATEMENTS'],
  ['MYSQL', 'SELECT 1; # x\nDROP TABLE t', 'MULTIPLE_STATEMENTS'],
  ['MYSQL', "SELECT '\\' ; DELETE FROM t; -- '", 'MULTIPLE_STATEMENTS'],
  ['MYSQL', 'SELECT "\\" ; DELETE FROM t; -- "', 'MULTIPLE_STATEMENTS'],
  ['MYSQL', 'SELECT 1 --sleep(5)', 'FUNCTION'],
  ['MYSQL', 'SELECT 1 FROM t INTO OUTFILE "/tmp/x"', 'SELECT_INTO'],
  ['MYSQL', "SELECT a FROM t INTO DUMPFILE '/tmp/x'", 'SELECT_INTO'],
  ['MYSQL', 'SELECT a INTO @x FROM t', 'SELECT_INTO'],
  ['MYSQL', 'SELECT @a := 1', 'ASSIGNMENT'],
  ['MYSQL', 'SELECT * FROM t FOR UPDATE', 'LOCKING_READ'],
  ['MYSQL', 'SELECT * FROM t FOR SHARE', 'LOCKING_READ'],
  ['MYSQL', 'SELECT * FROM t LOCK IN SHARE MODE', 'LOCKING_READ'],
  ['MYSQL', 'SELECT SLEEP(5)', 'FUNCTION'],
  ['MYSQL', "SELECT BENCHMARK(1000000, MD5('x'))", 'FUNCTION'],
  ['MYSQL', "SELECT GET_LOCK('x', 10)", 'FUNCTION'],
  ['MYSQL', "SELECT RELEASE_LOCK('x')", 'FUNCTION'],
  ['MYSQL', "SELECT LOAD_FILE('/etc/passwd')", 'FUNCTION'],
  ['MYSQL', 'SELECT `sleep`(5)', 'FUNCTION'],
  // Stored functions and unknown names: refused unless the connection allows them (issue 8)
  ['MYSQL', 'SELECT my_stored_fn(1)', 'FUNCTION'],
  ['MARIADB', 'SELECT loupe_test.my_stored_fn(1) FROM t', 'FUNCTION'],
  ['MARIADB', "SELECT IS_USED_LOCK('x')", 'FUNCTION'],
  ['MSSQL', 'SELECT dbo.fn_writes(1)', 'FUNCTION'],
  ['SQLITE', 'SELECT my_app_fn(1)', 'FUNCTION'],
  ['SQLITE', "SELECT sqlite_log(1, 'x')", 'FUNCTION'],
  // Table-valued functions count as calls
  ['MSSQL', 'SELECT * FROM dbo.my_tvf(1) AS x JOIN t ON t.id = x.id', 'FUNCTION'],
  ['MSSQL', 'SELECT * FROM t CROSS APPLY dbo.my_tvf(t.id) AS x', 'FUNCTION'],
  ['SQLITE', 'SELECT * FROM my_vtab(1)', 'FUNCTION'],
  ['MARIADB', 'SELECT * FROM (SELECT my_fn(1)) x', 'FUNCTION'],
  ['MARIADB', 'SELECT NEXTVAL(s)', 'FUNCTION'],
  ['MYSQL', 'DO SLEEP(5)', 'DO'],
  ['MYSQL', 'HANDLER t OPEN', 'HANDLER'],
  ['MYSQL', 'LOCK TABLES t WRITE', 'LOCK'],
  ['MYSQL', "LOAD DATA INFILE '/tmp/x' INTO TABLE t", 'LOAD'],
  ['MYSQL', 'REPLACE INTO t VALUES (1)', 'REPLACE'],
  ['MYSQL', 'EXPLAIN DELETE FROM t', 'EXPLAIN DELETE'],
  ['MYSQL', 'DESCRIBE DELETE FROM t', 'EXPLAIN DELETE'],
  ['MYSQL', 'DESC t; DROP TABLE x', 'MULTIPLE_STATEMENTS'],
  ['MYSQL', 'DESC t;DROP x', 'MULTIPLE_STATEMENTS'],
  ['MYSQL', 'SET GLOBAL read_only = 0', 'SET'],
  ['MYSQL', 'KILL 42', 'KILL'],
  ['MYSQL', 'USE mysql', 'USE'],
  // SQL Server
  ['MSSQL', 'EXEC sp_who', 'EXEC'],
  ['MSSQL', "EXECUTE ('DELETE FROM t')", 'EXECUTE'],
  ['MSSQL', 'sp_who', 'SP_WHO'],
  ['MSSQL', "SELECT * FROM OPENROWSET('SQLNCLI', 'Server=x;', 'SELECT 1')", 'FUNCTION'],
  ['MSSQL', "SELECT * FROM OPENQUERY(linked, 'DELETE FROM t')", 'FUNCTION'],
  ['MSSQL', "SELECT * FROM OPENDATASOURCE('SQLNCLI', 'x').db.dbo.t", 'FUNCTION'],
  ['MSSQL', "SELECT master.dbo.xp_cmdshell('dir')", 'FUNCTION'],
  ['MSSQL', "SELECT 1; EXEC xp_cmdshell 'dir'", 'MULTIPLE_STATEMENTS'],
  ['MSSQL', 'SELECT 1 EXEC sp_who', 'EXEC'],
  ['MSSQL', "WAITFOR DELAY '00:00:10'", 'WAITFOR'],
  ['MSSQL', "SELECT 1 WAITFOR DELAY '00:00:10'", 'WAITFOR'],
  ['MSSQL', 'SELECT * INTO #copy FROM t', 'SELECT_INTO'],
  ['MSSQL', 'SELECT * FROM t WITH (UPDLOCK)', 'LOCKING_READ'],
  ['MSSQL', 'SELECT * FROM t WITH (XLOCK, ROWLOCK)', 'LOCKING_READ'],
  ['MSSQL', 'SELECT * FROM t WITH (HOLDLOCK)', 'LOCKING_READ'],
  ['MSSQL', 'DECLARE @x int', 'DECLARE'],
  ['MSSQL', 'SHUTDOWN', 'SHUTDOWN'],
  ['MSSQL', 'DBCC CHECKDB', 'DBCC'],
  ['MSSQL', 'EXPLAIN SELECT 1', 'EXPLAIN'],
  // SQLite
  ['SQLITE', "ATTACH DATABASE '/tmp/x.db' AS x", 'ATTACH'],
  ['SQLITE', 'DETACH DATABASE x', 'DETACH'],
  ['SQLITE', 'PRAGMA journal_mode = WAL', 'PRAGMA'],
  ['SQLITE', 'PRAGMA query_only = 0', 'PRAGMA'],
  ['SQLITE', 'PRAGMA writable_schema = 1', 'PRAGMA'],
  ['SQLITE', 'PRAGMA user_version = 5', 'PRAGMA'],
  ['SQLITE', "SELECT load_extension('/tmp/evil.so')", 'FUNCTION'],
  ['SQLITE', "SELECT writefile('/tmp/x', 'y')", 'FUNCTION'],
  ['SQLITE', "VACUUM INTO '/tmp/copy.db'", 'VACUUM'],
  ['SQLITE', 'SELECT 1; DROP TABLE t', 'MULTIPLE_STATEMENTS'],
  ['SQLITE', 'WITH d AS (SELECT 1) DELETE FROM t', 'DELETE'],
  ['SQLITE', 'CREATE TEMP VIEW v AS SELECT 1', 'CREATE'],
  ['SQLITE', 'INSERT OR REPLACE INTO t VALUES (1)', 'INSERT'],
];

describe('read-only guard: reads are allowed', () => {
  for (const [type, sql, kind] of allowed)
    it(`${type} allows ${JSON.stringify(sql)} as ${kind}`, async () => {
      expect((await assertReadOnly(type, sql)).kind).toBe(kind);
    });
});

describe('read-only guard: everything else is 400 READ_ONLY_VIOLATION naming the statement kind', () => {
  for (const [type, sql, statementType] of refused)
    it(`${type} refuses ${JSON.stringify(sql)} as ${statementType}`, async () => {
      const e = await refusal(type, sql);
      expect(e.status).toBe(400);
      expect(e.code).toBe('READ_ONLY_VIOLATION');
      expect((e.details as { statementType: string }).statementType).toBe(statementType);
      expect(e.message.length).toBeGreaterThan(20);
    });

  it('names the refused function in the details', async () => {
    expect((await refusal('POSTGRES', 'SELECT pg_sleep(1)')).details).toEqual({
      statementType: 'FUNCTION',
      function: 'pg_sleep',
    });
  });

  it('explains what the parser rejected for text it cannot verify', async () => {
    const e = await refusal('POSTGRES', 'SELECT FROM WHERE');
    expect(e.message).toMatch(/could not be verified/);
    expect((e.details as { reason: string }).reason.length).toBeGreaterThan(0);
  });

  it('treats empty text as a validation error', async () => {
    expect((await refusal('POSTGRES', '   ')).code).toBe('VALIDATION_ERROR');
    expect((await refusal('POSTGRES', '-- only a comment')).code).toBe('VALIDATION_ERROR');
  });
});

describe('read-only guard: function allow lists', () => {
  it('allows a stored function the connection lists in allowedFunctions (name or qualified name)', async () => {
    await expect(
      assertReadOnly('MARIADB', 'SELECT my_fn(1)', { allowedFunctions: ['my_fn'] }),
    ).resolves.toEqual({
      kind: 'select',
    });
    await expect(
      assertReadOnly('MARIADB', 'SELECT app.my_fn(1)', { allowedFunctions: ['app.my_fn'] }),
    ).resolves.toEqual({ kind: 'select' });
    await expect(
      assertReadOnly('MSSQL', 'SELECT dbo.total(1)', { allowedFunctions: ['dbo.total'] }),
    ).resolves.toEqual({ kind: 'select' });
    const e = await refusal('MARIADB', 'SELECT other_fn(1)');
    expect(e.details).toMatchObject({ statementType: 'FUNCTION', function: 'other_fn' });
    expect(e.message).toMatch(/allowedFunctions/);
  });

  it('accepts expression forms a parser presents as calls (EXISTS, ROW, INTERVAL, CAST, CONVERT … USING, MATCH … AGAINST)', async () => {
    const reads: [DbType, string][] = [
      ['MARIADB', 'SELECT EXISTS (SELECT 1 FROM t WHERE a = 1) AS e'],
      ['MARIADB', 'SELECT * FROM t WHERE EXISTS(SELECT 1 FROM u WHERE u.a = t.a)'],
      ['MARIADB', 'SELECT * FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE u.a = t.a)'],
      ['MARIADB', 'SELECT CASE WHEN EXISTS (SELECT 1 FROM u) THEN 1 ELSE 0 END AS x'],
      ['MARIADB', 'SELECT * FROM t WHERE (a, b) = ROW(1, 2)'],
      ['MARIADB', 'SELECT NOW() - INTERVAL 1 DAY, DATE_ADD(d, INTERVAL 3 MONTH) FROM t'],
      ['MARIADB', 'SELECT CAST(a AS CHAR), CONVERT(a USING utf8mb4), CONVERT(a, CHAR) FROM t'],
      [
        'MARIADB',
        "SELECT MATCH (a, b) AGAINST ('x' IN BOOLEAN MODE) AS s FROM t WHERE MATCH (a) AGAINST ('x')",
      ],
      ['MYSQL', 'SELECT EXISTS(SELECT 1 FROM t) AS e, ROW(1, 2) = ROW(1, 2) AS r'],
      ['MSSQL', 'SELECT a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.a = t.a)'],
      ['MSSQL', 'SELECT a FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE u.a = t.a)'],
      ['SQLITE', 'SELECT EXISTS (SELECT 1 FROM t) AS e, CAST(a AS TEXT) FROM t'],
      ['POSTGRES', "SELECT EXISTS (SELECT 1 FROM t), ROW(1, 2) = ROW(1, 2), now() - INTERVAL '1 day'"],
    ];
    for (const [type, sql] of reads)
      expect((await assertReadOnly(type, sql)).kind, `${type} ${sql}`).toBe('select');
    // A quoted name is a call (a stored function named like the keyword), held to the rule.
    for (const sql of ['SELECT `exists`(1)', 'SELECT `row`(1, 2)', 'SELECT db.`exists`(1)']) {
      const e = await refusal('MARIADB', sql);
      expect(e.details, sql).toMatchObject({ statementType: 'FUNCTION' });
    }
    // EXISTS's subquery is still checked.
    expect((await refusal('MARIADB', 'SELECT EXISTS (SELECT SLEEP(5))')).details).toMatchObject({
      function: 'sleep',
    });
  });

  it('never allows a denied built-in, even when listed', async () => {
    await expect(assertReadOnly('MYSQL', 'SELECT SLEEP(1)', { allowedFunctions: ['sleep'] })).rejects.toThrow(
      expect.objectContaining({ code: 'READ_ONLY_VIOLATION' }),
    );
  });

  it('allows the built-ins models write', async () => {
    for (const [type, sql] of [
      [
        'MARIADB',
        "SELECT DATE_FORMAT(NOW(), '%Y'), IFNULL(a, 0), GROUP_CONCAT(b), ROUND(AVG(c), 2) FROM t GROUP BY a",
      ],
      [
        'SQLITE',
        "SELECT strftime('%Y', d), json_extract(j, '$.a'), total(x), row_number() OVER (ORDER BY x) FROM t",
      ],
      ['SQLITE', 'SELECT j.value FROM t, json_each(t.doc) AS j'],
      ['MSSQL', 'SELECT DATEADD(day, 1, GETDATE()), ISNULL(a, 0), COUNT(*) FROM t GROUP BY a'],
    ] as [DbType, string][])
      expect((await assertReadOnly(type, sql)).kind).toBe('select');
  });
});

describe('read-only guard: the second grammar (sqlparser-rs) keeps every check', () => {
  // node-sql-parser rejects these (window functions on SQLite, CHARACTER SET casts on MySQL); the
  // statements are then verified by sqlparser-rs with the same token checks and function rule.
  const refusedViaFallback: [DbType, string, string][] = [
    ['SQLITE', 'SELECT rank() OVER (ORDER BY id) AS r, my_fn(1) FROM t', 'FUNCTION'],
    ['SQLITE', "SELECT rank() OVER (ORDER BY id) AS r FROM t, pragma_journal_mode('wal')", 'FUNCTION'],
    ['SQLITE', "SELECT rank() OVER (ORDER BY id) AS r, load_extension('x') FROM t", 'FUNCTION'],
    [
      'SQLITE',
      "SELECT rank() OVER (ORDER BY id) FROM t WHERE id IN (SELECT readfile('/etc/passwd'))",
      'FUNCTION',
    ],
    ['SQLITE', 'SELECT rank() OVER (ORDER BY id) AS r FROM t; DELETE FROM t', 'MULTIPLE_STATEMENTS'],
    ['MARIADB', 'SELECT CAST(a AS CHAR CHARACTER SET utf8mb4), my_fn(a) FROM t', 'FUNCTION'],
    ['MARIADB', 'SELECT CAST(a AS CHAR CHARACTER SET utf8mb4) FROM t FOR UPDATE', 'LOCKING_READ'],
    ['MARIADB', 'SELECT CAST(a AS CHAR CHARACTER SET utf8mb4) INTO @x FROM t', 'SELECT_INTO'],
  ];
  for (const [type, sql, statementType] of refusedViaFallback)
    it(`${type} refuses ${JSON.stringify(sql)} as ${statementType}`, async () => {
      const e = await refusal(type, sql);
      expect(e.code).toBe('READ_ONLY_VIOLATION');
      expect((e.details as { statementType: string }).statementType).toBe(statementType);
    });

  it('allows the reads node-sql-parser could not parse', async () => {
    expect(
      (await assertReadOnly('SQLITE', 'SELECT name, rank() OVER (ORDER BY score DESC) AS rank FROM t')).kind,
    ).toBe('select');
    expect(
      (await assertReadOnly('MARIADB', 'SELECT CAST(a AS CHAR CHARACTER SET utf8mb4) FROM t')).kind,
    ).toBe('select');
  });
});

describe('classifyStatement', () => {
  it('classifies reads and writes with the guard', async () => {
    expect(await classifyStatement('POSTGRES', 'SELECT 1')).toEqual({
      kind: 'read',
      statementType: 'SELECT',
    });
    expect(await classifyStatement('POSTGRES', 'DELETE FROM t WHERE id = 1')).toEqual({
      kind: 'write',
      statementType: 'DELETE',
    });
    expect(await classifyStatement('MARIADB', 'UPDATE t SET a = 1')).toEqual({
      kind: 'write',
      statementType: 'UPDATE',
    });
    expect(await classifyStatement('SQLITE', 'INSERT INTO t VALUES (1)')).toEqual({
      kind: 'write',
      statementType: 'INSERT',
    });
  });

  it('throws the guard error for several statements or text it cannot parse', async () => {
    await expect(classifyStatement('POSTGRES', 'SELECT 1; DELETE FROM t')).rejects.toThrow(
      expect.objectContaining({
        code: 'READ_ONLY_VIOLATION',
        details: expect.objectContaining({ statementType: 'MULTIPLE_STATEMENTS' }),
      }),
    );
    await expect(classifyStatement('POSTGRES', 'SELECT FROM WHERE (')).rejects.toThrow(
      expect.objectContaining({ code: 'READ_ONLY_VIOLATION' }),
    );
  });
});

describe('read-only guard: MongoDB JSON queries', () => {
  it('allows find and aggregate forms (Extended JSON values)', async () => {
    const find = await assertReadOnly(
      'MONGODB',
      '{"collection": "orders", "filter": {"_id": {"$oid": "507f1f77bcf86cd799439011"}}}',
    );
    expect(find.kind).toBe('mongo');
    const aggregate = await assertReadOnly(
      'MONGODB',
      '{"collection": "orders", "pipeline": [{"$match": {"a": 1}}, {"$group": {"_id": "$b", "n": {"$sum": 1}}}]}',
    );
    expect(aggregate.kind).toBe('mongo');
  });
  const mongoRefused: [string, string, string][] = [
    ['$out', '{"collection": "a", "pipeline": [{"$out": "b"}]}', '$out'],
    ['$merge', '{"collection": "a", "pipeline": [{"$merge": {"into": "b"}}]}', '$merge'],
    ['$out inside $facet', '{"collection": "a", "pipeline": [{"$facet": {"x": [{"$out": "b"}]}}]}', '$out'],
    [
      '$merge inside $lookup',
      '{"collection": "a", "pipeline": [{"$lookup": {"from": "b", "as": "c", "pipeline": [{"$merge": "d"}]}}]}',
      '$merge',
    ],
    [
      '$merge inside $unionWith',
      '{"collection": "a", "pipeline": [{"$unionWith": {"coll": "b", "pipeline": [{"$merge": "d"}]}}]}',
      '$merge',
    ],
    ['$where in a filter', '{"collection": "a", "filter": {"$where": "sleep(1000)"}}', '$where'],
    [
      '$function',
      '{"collection": "a", "pipeline": [{"$addFields": {"x": {"$function": {"body": "function(){}", "args": [], "lang": "js"}}}}]}',
      '$function',
    ],
    [
      '$accumulator',
      '{"collection": "a", "pipeline": [{"$group": {"_id": 1, "x": {"$accumulator": {}}}}]}',
      '$accumulator',
    ],
    ['$changeStream', '{"collection": "a", "pipeline": [{"$changeStream": {}}]}', '$changeStream'],
    ['system collections', '{"collection": "system.users", "filter": {}}', 'SYSTEM_COLLECTION'],
  ];
  for (const [name, q, statementType] of mongoRefused)
    it(`refuses ${name}`, async () => {
      const e = await refusal('MONGODB', q);
      expect(e.code).toBe('READ_ONLY_VIOLATION');
      expect((e.details as { statementType: string }).statementType).toBe(statementType);
    });
  const invalid: [string, string][] = [
    ['not JSON', 'db.orders.find()'],
    ['no collection', '{"filter": {}}'],
    ['an array', '[]'],
    ['unknown fields', '{"collection": "a", "update": {}}'],
    ['pipeline and filter together', '{"collection": "a", "pipeline": [], "filter": {}}'],
    ['a stage with two operators', '{"collection": "a", "pipeline": [{"$match": {}, "$limit": 1}]}'],
    ['a negative limit', '{"collection": "a", "filter": {}, "limit": -1}'],
  ];
  for (const [name, q] of invalid)
    it(`answers 400 VALIDATION_ERROR for ${name}`, async () => {
      const e = await refusal('MONGODB', q);
      expect(e.status).toBe(400);
      expect(e.code).toBe('VALIDATION_ERROR');
    });
});
