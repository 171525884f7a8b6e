import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { closeAllDrivers, driverFor } from '../../shared/databases/drivers/index';
import type { ConnectionTarget } from '../../shared/databases/drivers/types';
import { runReadOnly } from '../../shared/databases/run';
import { failure, refusesEach } from '../support/drivers';

const db = inject('mariadb');
const suffix = `${process.pid}_${Date.now().toString(36)}`;
const T = `drv_my_items_${suffix}`;
const P = `drv_my_parent_${suffix}`;
const SECRET_DB = `drv_my_secret_${suffix}`;

const target = (over: Partial<ConnectionTarget> = {}): ConnectionTarget => ({
  id: `my-${suffix}`,
  version: '1',
  type: 'MARIADB',
  host: db?.host ?? '127.0.0.1',
  port: db?.port ?? 3306,
  database: db?.database ?? 'loupe_test',
  username: db?.user ?? 'loupe_user',
  password: db?.password ?? '',
  sslEnabled: false,
  ...over,
});

let admin: mysql.Connection;
const count = async (table = T) =>
  Number(((await admin.query(`SELECT count(*) AS n FROM ${table}`)) as any)[0][0].n);

describe.skipIf(!db)('MariaDB driver (mysql2 adapter)', () => {
  beforeAll(async () => {
    if (!db) return;
    admin = await mysql.createConnection({
      host: db.host,
      port: db.port,
      user: db.adminUser,
      password: db.adminPassword,
      database: db.database,
    });
    await admin.query(`CREATE TABLE ${P} (id INT PRIMARY KEY, label VARCHAR(20))`);
    await admin.query(`CREATE TABLE ${T} (
      id INT AUTO_INCREMENT PRIMARY KEY, parent_id INT, big BIGINT, amount DECIMAL(30,10), created TIMESTAMP(3) NULL,
      day DATE, local_dt DATETIME(6), raw VARBINARY(10), label VARCHAR(50),
      CONSTRAINT fk_${suffix} FOREIGN KEY (parent_id) REFERENCES ${P}(id))`);
    await admin.query(`INSERT INTO ${P} VALUES (1, 'one')`);
    await admin.query("SET time_zone = '+00:00'");
    for (let i = 1; i <= 30; i++)
      await admin.query(
        `INSERT INTO ${T} (parent_id, big, amount, created, day, local_dt, raw, label) VALUES (1, ?, '12345678901234567890.0123456789', '2024-03-01 10:20:30.123', '2024-03-01', '2024-03-01 10:20:30.500000', X'0102FF', 'row')`,
        [(9007199254740993n + BigInt(i)).toString()],
      );
    await admin.query(`CREATE DATABASE ${SECRET_DB}`);
    await admin.query(`CREATE TABLE ${SECRET_DB}.hidden (id INT)`);
  });

  afterAll(async () => {
    if (!db) return;
    await closeAllDrivers();
    await admin.query(`DROP TABLE IF EXISTS ${T}, ${P}`);
    await admin.query(`DROP DATABASE IF EXISTS ${SECRET_DB}`);
    await admin.end();
  });

  it('pings and reports the server version', async () => {
    const r = await (await driverFor(target())).ping();
    expect(r.serverVersion).toMatch(/MariaDB/i);
  });

  it('returns values as JSON that keeps their meaning', async () => {
    const r = await runReadOnly(
      target(),
      `SELECT big, amount, created, day, local_dt, raw, JSON_OBJECT('a', 1) AS j FROM ${T} ORDER BY id LIMIT 1`,
    );
    expect(r.rows[0]).toMatchObject({
      big: '9007199254740994',
      amount: '12345678901234567890.0123456789',
      created: '2024-03-01T10:20:30.123Z',
      day: '2024-03-01',
      local_dt: '2024-03-01T10:20:30.500000',
      raw: Buffer.from([1, 2, 255]).toString('base64'),
    });
  });

  it('binds ? parameters as a prepared statement and normalizes values the same way', async () => {
    const sql = `SELECT big, amount, created, day, local_dt, raw FROM ${T} WHERE id = ?`;
    const bound = await runReadOnly(target(), sql, { params: [1] });
    const plain = await runReadOnly(target(), sql.replace('?', '1'));
    expect(bound.rows).toEqual(plain.rows);
    expect(bound.rows[0]).toMatchObject({
      big: '9007199254740994',
      created: '2024-03-01T10:20:30.123Z',
      day: '2024-03-01',
    });
  });

  it('binds ? parameters', async () => {
    const r = await runReadOnly(target(), `SELECT count(*) AS n FROM ${T} WHERE id > ? AND label = ?`, {
      params: [25, 'row'],
    });
    expect(r.rows).toEqual([{ n: '5' }]);
    const none = await runReadOnly(target(), `SELECT count(*) AS n FROM ${T} WHERE label = ?`, {
      params: ["row' OR '1'='1"],
    });
    expect(none.rows).toEqual([{ n: '0' }]);
  });

  it('stops at maxRows and at the byte cap, marking the result truncated', async () => {
    const r = await runReadOnly(target(), `SELECT id FROM ${T} ORDER BY id`, { maxRows: 5 });
    expect(r.rows.map((x) => x.id)).toEqual([1, 2, 3, 4, 5]);
    expect(r.truncated).toBe(true);
    const big = await runReadOnly(target(), `SELECT REPEAT('x', 1000) AS s FROM ${T}`, { maxBytes: 5_000 });
    expect(big.rows.length).toBeLessThan(5);
    expect(big.truncated).toBe(true);
    const all = await runReadOnly(target(), `SELECT id FROM ${T}`, { maxRows: 30 });
    expect(all.rows).toHaveLength(30);
    expect(all.truncated).toBeUndefined();
  });

  it('streams a huge result and stops at the cap', async () => {
    const r = await runReadOnly(target(), 'SELECT seq FROM seq_1_to_50000000', { maxRows: 10 });
    expect(r.rows).toHaveLength(10);
    expect(r.truncated).toBe(true);
    expect((await runReadOnly(target(), 'SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('a row longer than the per-value bound (8 MiB) is refused with VALUE_TOO_LARGE before it is buffered; the pool stays usable', async () => {
    // 9 MB is within MariaDB's max_allowed_packet (16 MB): the server sends it, the wire watcher refuses it.
    const e = await failure(runReadOnly(target(), "SELECT REPEAT('x', 9000000) AS s"));
    expect(e.status).toBe(422);
    expect(e.code).toBe('VALUE_TOO_LARGE');
    // 8,000,000 is under the bound: read (and then truncated by the 5 MiB byte cap), not refused.
    const under = await runReadOnly(target(), "SELECT REPEAT('x', 8000000) AS s");
    expect(under.truncated).toBe(true);
    expect((await runReadOnly(target(), 'SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('runs SHOW, DESCRIBE and EXPLAIN', async () => {
    expect((await runReadOnly(target(), 'SHOW TABLES')).rows.length).toBeGreaterThan(0);
    expect((await runReadOnly(target(), `DESCRIBE ${T}`)).rows.map((r) => r.Field)).toContain('amount');
    expect((await runReadOnly(target(), `EXPLAIN SELECT * FROM ${T}`)).columns).toContain('table');
  });

  it('maps max_statement_time to 504 QUERY_TIMEOUT', async () => {
    const e = await failure(
      runReadOnly(target(), 'SELECT count(*) FROM seq_1_to_100000000 a, seq_1_to_1000 b', { timeoutMs: 300 }),
    );
    expect(e.code).toBe('QUERY_TIMEOUT');
    expect(e.status).toBe(504);
  });

  it('maps a rejected statement to 422 QUERY_FAILED with the database code', async () => {
    const e = await failure(runReadOnly(target(), `SELECT nope FROM ${T}`));
    expect(e.code).toBe('QUERY_FAILED');
    expect(e.message).toContain("Unknown column 'nope'");
    expect(e.details).toMatchObject({ code: 'ER_BAD_FIELD_ERROR' });
    const denied = await failure(runReadOnly(target(), `SELECT * FROM ${SECRET_DB}.hidden`));
    expect(denied.code).toBe('QUERY_FAILED');
    expect(denied.details).toMatchObject({ code: 'ER_TABLEACCESS_DENIED_ERROR' });
  });

  it('introspects tables, columns, keys and row estimates of the connection database', async () => {
    const s = await (await driverFor(target())).introspect();
    const t = s.tables.find((x) => x.name === T);
    expect(t?.primaryKey).toEqual(['id']);
    expect(t?.columns.find((c) => c.name === 'amount')).toEqual({
      name: 'amount',
      type: 'decimal(30,10)',
      nullable: true,
      primaryKey: false,
    });
    expect(t?.foreignKeys).toEqual([
      { columns: ['parent_id'], referencedTable: P, referencedColumns: ['id'] },
    ]);
    expect(typeof t?.rowEstimate).toBe('number');
    expect(s.tables.some((x) => x.name.includes('hidden'))).toBe(false);
  });

  describe('read-only enforcement (every attempt leaves the database unchanged)', () => {
    const attempts: [string, string][] = [
      ['DELETE', `DELETE FROM ${T}`],
      ['UPDATE', `UPDATE ${T} SET big = 0`],
      ['INSERT', `INSERT INTO ${T} (big) VALUES (1)`],
      ['REPLACE', `REPLACE INTO ${T} (id, big) VALUES (1, 0)`],
      ['DROP', `DROP TABLE ${T}`],
      ['stacked with a comment', `SELECT 1; -- x\nDROP TABLE ${T}`],
      ['executable comment', `/*!50000 DROP TABLE ${T} */`],
      ['executable comment inside a select', `SELECT 1 /*!50000 , (SELECT SLEEP(5)) */`],
      ['MariaDB executable comment', `SELECT 1 /*M!100000 , SLEEP(5) */`],
      ['backslash string trick', `SELECT '\\' ; DELETE FROM ${T}; -- '`],
      ['--1 is not a comment', 'SELECT 1 --sleep(5)'],
      ['SELECT INTO OUTFILE', `SELECT * FROM ${T} INTO OUTFILE '/tmp/drv_${suffix}'`],
      ['SELECT INTO DUMPFILE', `SELECT raw FROM ${T} LIMIT 1 INTO DUMPFILE '/tmp/drv_${suffix}'`],
      ['SELECT INTO variable', `SELECT id INTO @x FROM ${T} LIMIT 1`],
      ['FOR UPDATE', `SELECT * FROM ${T} FOR UPDATE`],
      ['LOCK IN SHARE MODE', `SELECT * FROM ${T} LOCK IN SHARE MODE`],
      ['SLEEP', 'SELECT SLEEP(5)'],
      ['BENCHMARK', "SELECT BENCHMARK(100000000, MD5('x'))"],
      ['GET_LOCK', "SELECT GET_LOCK('x', 10)"],
      ['LOAD_FILE', "SELECT LOAD_FILE('/etc/passwd')"],
      ['assignment', 'SELECT @a := 1'],
      ['CALL', 'CALL p()'],
      ['DO', 'DO SLEEP(5)'],
      ['HANDLER', `HANDLER ${T} OPEN`],
      ['EXPLAIN of a write', `EXPLAIN DELETE FROM ${T}`],
      ['LOCK TABLES', `LOCK TABLES ${T} WRITE`],
      ['SET', 'SET SESSION sql_mode = ""'],
    ];
    refusesEach(attempts, target, count, 30);

    it('the read-only transaction stops a write even when the guard is bypassed', async () => {
      const d = await driverFor(target());
      await expect(
        d.query(`DELETE FROM ${T}`, { maxRows: 10, maxBytes: 1e6, timeoutMs: 5000 }),
      ).rejects.toMatchObject({ errno: 1792 });
      await expect(
        d.query(`SELECT 1; DELETE FROM ${T}`, { maxRows: 10, maxBytes: 1e6, timeoutMs: 5000 }),
      ).rejects.toMatchObject({ code: 'ER_PARSE_ERROR' });
      expect(await count()).toBe(30);
    });
  });
});
