/**
 * SQL Server adapter. No SQL Server can run here: the pure parts (configuration, parameter naming,
 * introspection SQL and snapshot building, value normalization) are tested directly; the full driver
 * suite runs against a real server when MSSQL_URL is set
 * (mssql://user:password@host:1433/database?encrypt=true).
 */
import sql from 'mssql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAllDrivers, driverFor } from '../../shared/connections/drivers/index';
import {
  buildMssqlSnapshot,
  MSSQL_INTROSPECTION,
  mssqlConfig,
  mssqlTypeName,
  normalizeMssqlValue,
  paramNames,
} from '../../shared/connections/drivers/mssql';
import type { ConnectionTarget } from '../../shared/connections/drivers/types';
import { runReadOnly } from '../../shared/connections/run';
import { assertReadOnly } from '../../shared/connections/sql-guard';
import type { AppError } from '../../shared/platform/errors';

const target: ConnectionTarget = {
  id: 'mssql-1',
  version: '3',
  type: 'MSSQL',
  host: 'sql.example.com',
  port: null,
  database: 'sales',
  username: 'reporter',
  password: 'pw',
  sslEnabled: true,
};

describe('SQL Server adapter: configuration and SQL', () => {
  it('verifies TLS when sslEnabled, asks for read-only intent and bounds connect time', () => {
    const c = mssqlConfig(target);
    expect(c).toMatchObject({ server: 'sql.example.com', port: 1433, database: 'sales', user: 'reporter' });
    expect(c.options).toMatchObject({
      encrypt: true,
      trustServerCertificate: false,
      readOnlyIntent: true,
      useUTC: true,
    });
    expect(c.connectionTimeout).toBe(10_000);
    expect(mssqlConfig({ ...target, sslEnabled: false, port: 14330 }).options?.encrypt).toBe(false);
    expect(mssqlConfig({ ...target, port: 14330 }).port).toBe(14330);
  });

  it('names positional parameters @p1, @p2, … as the guard expects', () => {
    expect(paramNames(['a', 2, null])).toEqual(['p1', 'p2', 'p3']);
    expect(
      assertReadOnly('MSSQL', 'SELECT TOP 10 * FROM dbo.orders WHERE id = @p1 AND status = @p2').kind,
    ).toBe('select');
  });

  it('introspection SQL reads user tables and views only, skipping system schemas and shipped objects', () => {
    expect(MSSQL_INTROSPECTION.columns).toContain("o.type IN ('U', 'V')");
    expect(MSSQL_INTROSPECTION.columns).toContain('o.is_ms_shipped = 0');
    expect(MSSQL_INTROSPECTION.columns).toContain("s.name NOT IN ('sys', 'INFORMATION_SCHEMA', 'guest')");
    expect(MSSQL_INTROSPECTION.columns).toContain('HAS_PERMS_BY_NAME');
    expect(MSSQL_INTROSPECTION.columns).toContain('p.index_id IN (0, 1)');
    expect(MSSQL_INTROSPECTION.primaryKeys).toContain('i.is_primary_key = 1');
    expect(MSSQL_INTROSPECTION.foreignKeys).toContain('sys.foreign_key_columns');
    // Every introspection statement is itself a read the guard accepts.
    for (const q of Object.values(MSSQL_INTROSPECTION))
      expect(assertReadOnly('MSSQL', q).kind).toBe('select');
  });

  it('formats column types from sys.columns facts', () => {
    expect(mssqlTypeName('nvarchar', 100, 0, 0)).toBe('nvarchar(50)');
    expect(mssqlTypeName('nvarchar', -1, 0, 0)).toBe('nvarchar(max)');
    expect(mssqlTypeName('varbinary', -1, 0, 0)).toBe('varbinary(max)');
    expect(mssqlTypeName('decimal', 9, 18, 4)).toBe('decimal(18,4)');
    expect(mssqlTypeName('datetime2', 8, 27, 7)).toBe('datetime2(7)');
    expect(mssqlTypeName('int', 4, 10, 0)).toBe('int');
  });

  it('builds the snapshot: default schema unqualified, keys, foreign keys, row estimates', () => {
    const s = buildMssqlSnapshot(
      'dbo',
      [
        {
          schema: 'dbo',
          name: 'orders',
          kind: 'U ',
          col: 'id',
          type: 'int',
          max_length: 4,
          precision: 10,
          scale: 0,
          nullable: false,
          estimate: '120',
        },
        {
          schema: 'dbo',
          name: 'orders',
          kind: 'U ',
          col: 'customer_id',
          type: 'int',
          max_length: 4,
          precision: 10,
          scale: 0,
          nullable: true,
          estimate: '120',
        },
        {
          schema: 'crm',
          name: 'customers',
          kind: 'U ',
          col: 'id',
          type: 'bigint',
          max_length: 8,
          precision: 19,
          scale: 0,
          nullable: false,
          estimate: null,
        },
        {
          schema: 'dbo',
          name: 'v_orders',
          kind: 'V ',
          col: 'id',
          type: 'int',
          max_length: 4,
          precision: 10,
          scale: 0,
          nullable: true,
          estimate: null,
        },
      ],
      [
        { schema: 'dbo', name: 'orders', col: 'id' },
        { schema: 'crm', name: 'customers', col: 'id' },
      ],
      [
        {
          fk: 'fk_orders_customers',
          schema: 'dbo',
          name: 'orders',
          col: 'customer_id',
          ref_schema: 'crm',
          ref_name: 'customers',
          ref_col: 'id',
        },
      ],
    );
    expect(s.tables.map((t) => t.name)).toEqual(['orders', 'crm.customers', 'v_orders']);
    const orders = s.tables[0];
    expect(orders).toMatchObject({ schema: 'dbo', kind: 'table', primaryKey: ['id'], rowEstimate: 120 });
    expect(orders.columns[0]).toEqual({ name: 'id', type: 'int', nullable: false, primaryKey: true });
    expect(orders.foreignKeys).toEqual([
      { columns: ['customer_id'], referencedTable: 'crm.customers', referencedColumns: ['id'] },
    ]);
    expect(s.tables[2].kind).toBe('view');
  });

  it('normalizes tedious values: decimals and bigint as strings, dates by column type, binary as base64', () => {
    const col = (declaration: string) => ({ name: 'x', type: { declaration } });
    expect(normalizeMssqlValue(12.5, col('decimal'))).toBe('12.5');
    expect(normalizeMssqlValue(3.25, col('money'))).toBe('3.25');
    expect(normalizeMssqlValue('9007199254740993', col('bigint'))).toBe('9007199254740993');
    expect(normalizeMssqlValue(7, col('int'))).toBe(7);
    const d = new Date('2024-03-01T10:20:30.123Z');
    expect(normalizeMssqlValue(d, col('datetime2'))).toBe('2024-03-01T10:20:30.123');
    expect(normalizeMssqlValue(d, col('datetimeoffset'))).toBe('2024-03-01T10:20:30.123Z');
    expect(normalizeMssqlValue(new Date('2024-03-01T00:00:00Z'), col('date'))).toBe('2024-03-01');
    expect(normalizeMssqlValue(new Date('1970-01-01T10:20:30.500Z'), col('time'))).toBe('10:20:30.500');
    expect(normalizeMssqlValue(Buffer.from([1, 2, 255]), col('varbinary'))).toBe('AQL/');
    expect(normalizeMssqlValue('0F8FAD5B-D9CB-469F-A165-70867728950E', col('uniqueidentifier'))).toBe(
      '0F8FAD5B-D9CB-469F-A165-70867728950E',
    );
    expect(normalizeMssqlValue(null, col('int'))).toBeNull();
    expect(normalizeMssqlValue(true, col('bit'))).toBe(true);
  });

  it('the mssql types the adapter relies on carry these declarations', () => {
    expect(
      [sql.Decimal, sql.Numeric, sql.Money, sql.BigInt, sql.DateTime2, sql.Date, sql.Time].map(
        (t) => (t as { declaration?: string }).declaration,
      ),
    ).toEqual(['decimal', 'numeric', 'money', 'bigint', 'datetime2', 'date', 'time']);
  });
});

const url = process.env.MSSQL_URL;
describe.skipIf(!url)(
  `SQL Server adapter against a real server ${url ? '(MSSQL_URL)' : '— skipped: MSSQL_URL is not set (no SQL Server here)'}`,
  () => {
    const suffix = `${process.pid}_${Date.now().toString(36)}`;
    const T = `drv_ms_items_${suffix}`;
    let admin: sql.ConnectionPool;
    let t: ConnectionTarget;
    const failure = async (p: Promise<unknown>) => {
      try {
        await p;
      } catch (e) {
        return e as AppError;
      }
      throw new Error('expected a failure');
    };
    const count = async () =>
      Number((await admin.request().query(`SELECT count(*) AS n FROM ${T}`)).recordset[0].n);

    beforeAll(async () => {
      const u = new URL(url as string);
      t = {
        id: `mssql-real-${suffix}`,
        version: '1',
        type: 'MSSQL',
        host: u.hostname,
        port: u.port ? Number(u.port) : 1433,
        database: u.pathname.replace(/^\//, '') || 'master',
        username: decodeURIComponent(u.username),
        password: decodeURIComponent(u.password),
        sslEnabled: u.searchParams.get('encrypt') === 'true',
      };
      admin = await new sql.ConnectionPool({
        ...mssqlConfig(t),
        options: {
          ...mssqlConfig(t).options,
          trustServerCertificate: u.searchParams.get('trustServerCertificate') === 'true',
        },
      }).connect();
      await admin
        .request()
        .batch(
          `CREATE TABLE ${T} (id int IDENTITY PRIMARY KEY, big bigint, amount decimal(30,10), at datetime2, raw varbinary(10), note nvarchar(50))`,
        );
      await admin
        .request()
        .batch(
          `INSERT INTO ${T} (big, amount, at, raw, note) SELECT TOP 30 9007199254740993, 12.5, '2024-03-01T10:20:30.123', 0x0102FF, N'row' FROM sys.objects a CROSS JOIN sys.objects b`,
        );
    });
    afterAll(async () => {
      await closeAllDrivers();
      await admin
        ?.request()
        .batch(`DROP TABLE IF EXISTS ${T}`)
        .catch(() => {});
      await admin?.close();
    });

    it('pings, reads with @p1 parameters, caps rows and introspects', async () => {
      expect((await (await driverFor(t)).ping()).serverVersion).toBeTruthy();
      const r = await runReadOnly(t, `SELECT big, amount, at, raw FROM ${T} WHERE id = @p1`, { params: [1] });
      expect(r.rows[0]).toEqual({
        big: '9007199254740993',
        amount: '12.5',
        at: '2024-03-01T10:20:30.123',
        raw: 'AQL/',
      });
      const capped = await runReadOnly(t, `SELECT id FROM ${T} ORDER BY id`, { maxRows: 5 });
      expect(capped.rows).toHaveLength(5);
      expect(capped.truncated).toBe(true);
      const s = await (await driverFor(t)).introspect();
      expect(s.tables.find((x) => x.name === T)?.primaryKey).toEqual(['id']);
    });

    it('maps a request timeout to 504 and an invalid object to 422 QUERY_FAILED (208)', async () => {
      const slow = await failure(
        runReadOnly(
          t,
          'SELECT count_big(*) FROM sys.all_objects a CROSS JOIN sys.all_objects b CROSS JOIN sys.all_objects c',
          { timeoutMs: 300 },
        ),
      );
      expect(slow.code).toBe('QUERY_TIMEOUT');
      const bad = await failure(runReadOnly(t, 'SELECT * FROM no_such_table_x'));
      expect(bad.details).toMatchObject({ code: '208' });
    });

    it('refuses writes and leaves the table unchanged; the rolled-back transaction undoes a bypassed write', async () => {
      for (const q of [
        `DELETE FROM ${T}`,
        `SELECT 1; DELETE FROM ${T}`,
        `EXEC sp_executesql N'DELETE FROM ${T}'`,
        `SELECT * INTO #x FROM ${T}`,
      ]) {
        const e = await failure(runReadOnly(t, q));
        expect(e.code).toBe('READ_ONLY_VIOLATION');
      }
      const d = await driverFor(t);
      await d.query(`DELETE FROM ${T}`, { maxRows: 10, maxBytes: 1e6, timeoutMs: 5000 });
      expect(await count()).toBe(30);
    });
  },
);
