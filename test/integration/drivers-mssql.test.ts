/**
 * SQL Server adapter. No SQL Server can run here: the pure parts (configuration, parameter naming,
 * introspection SQL and snapshot building, value normalization) are tested directly; the real
 * mssql/tedious client is driven through the adapter against a TDS-level test server
 * (test/support/tds-wire.ts); the full driver suite runs against a real server when MSSQL_URL is set
 * (mssql://user:password@host:1433/database?encrypt=true).
 */
import sql from 'mssql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Diagnosis } from '../../shared/databases/diagnosis';
import { closeAllDrivers, driverFor } from '../../shared/databases/drivers/index';
import {
  buildMssqlSnapshot,
  MSSQL_INTROSPECTION,
  mssqlConfig,
  mssqlTypeName,
  normalizeMssqlValue,
  paramNames,
} from '../../shared/databases/drivers/mssql';
import type { ConnectionTarget } from '../../shared/databases/drivers/types';
import { runReadOnly } from '../../shared/databases/run';
import { assertReadOnly } from '../../shared/guard/read';
import type { AppError } from '../../shared/platform/errors';
import { startTdsWire, type TdsColumn, type TdsWireServer } from '../support/tds-wire';

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

  it('names positional parameters @p1, @p2, … as the guard expects', async () => {
    expect(paramNames(['a', 2, null])).toEqual(['p1', 'p2', 'p3']);
    expect(
      (await assertReadOnly('MSSQL', 'SELECT TOP 10 * FROM dbo.orders WHERE id = @p1 AND status = @p2')).kind,
    ).toBe('select');
  });

  it('introspection SQL reads user tables and views only, skipping system schemas and shipped objects', async () => {
    expect(MSSQL_INTROSPECTION.columns).toContain("o.type IN ('U', 'V')");
    expect(MSSQL_INTROSPECTION.columns).toContain('o.is_ms_shipped = 0');
    expect(MSSQL_INTROSPECTION.columns).toContain("s.name NOT IN ('sys', 'INFORMATION_SCHEMA', 'guest')");
    expect(MSSQL_INTROSPECTION.columns).toContain('HAS_PERMS_BY_NAME');
    expect(MSSQL_INTROSPECTION.columns).toContain('p.index_id IN (0, 1)');
    expect(MSSQL_INTROSPECTION.primaryKeys).toContain('i.is_primary_key = 1');
    expect(MSSQL_INTROSPECTION.foreignKeys).toContain('sys.foreign_key_columns');
    // Comments: MS_Description extended properties of user objects (table: minor_id 0; column: its id),
    // clipped in the query before they cross the wire.
    expect(MSSQL_INTROSPECTION.comments).toContain('FROM sys.extended_properties ep');
    expect(MSSQL_INTROSPECTION.comments).toContain("ep.class = 1 AND ep.name = N'MS_Description'");
    expect(MSSQL_INTROSPECTION.comments).toContain('c.column_id = ep.minor_id');
    expect(MSSQL_INTROSPECTION.comments).toContain('LEFT(CAST(ep.value AS nvarchar(4000)), 1000)');
    // Every introspection statement is itself a read the guard accepts.
    for (const q of Object.values(MSSQL_INTROSPECTION))
      expect((await assertReadOnly('MSSQL', q)).kind).toBe('select');
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

describe('SQL Server adapter over TDS (real mssql/tedious client, test server)', () => {
  let tds: TdsWireServer;
  const itemColumns: TdsColumn[] = [
    { name: 'id', type: 'int' },
    { name: 'big', type: 'bigint' },
    { name: 'amount', type: 'decimal', precision: 30, scale: 10 },
    { name: 'at', type: 'datetime2', scale: 3 },
    { name: 'raw', type: 'varbinary' },
    { name: 'note', type: 'nvarchar' },
    { name: 'flag', type: 'bit' },
  ];
  const items = Array.from({ length: 3000 }, (_, i) => [
    i + 1,
    '9007199254740993',
    '12.5',
    '2024-03-01T10:20:30.123Z',
    Buffer.from([1, 2, 255]),
    'x'.repeat(50),
    i % 2 === 0,
  ]);
  const t = (over: Partial<ConnectionTarget> = {}): ConnectionTarget => ({
    ...target,
    id: `tds-${process.pid}`,
    host: '127.0.0.1',
    port: tds.port,
    sslEnabled: false,
    ...over,
  });
  const failure = async (p: Promise<unknown>) => {
    try {
      await p;
    } catch (e) {
      return e as AppError;
    }
    throw new Error('expected a failure');
  };
  const since = (n: number) => tds.requests.slice(n);
  let failReset = false;

  beforeAll(async () => {
    tds = await startTdsWire({
      users: { reporter: 'pw' },
      databases: ['sales'],
      respond: (q, params, info) => {
        if (info.reset && failReset) {
          failReset = false; // the next reset only
          return { error: { number: 50000, message: 'reset refused (test)', class: 16 } };
        }
        if (q.includes('SERVERPROPERTY'))
          return { columns: [{ name: 'v', type: 'nvarchar' }], rows: [['16.0.4165.4']] };
        if (q === 'SELECT SCHEMA_NAME() AS s')
          return { columns: [{ name: 's', type: 'nvarchar' }], rows: [['dbo']] };
        if (q === MSSQL_INTROSPECTION.columns.trim())
          return {
            columns: [
              { name: 'schema', type: 'nvarchar' },
              { name: 'name', type: 'nvarchar' },
              { name: 'kind', type: 'nvarchar' },
              { name: 'col', type: 'nvarchar' },
              { name: 'type', type: 'nvarchar' },
              { name: 'max_length', type: 'int' },
              { name: 'precision', type: 'int' },
              { name: 'scale', type: 'int' },
              { name: 'nullable', type: 'bit' },
              { name: 'estimate', type: 'bigint' },
            ],
            rows: [
              ['dbo', 'items', 'U ', 'id', 'int', 4, 10, 0, false, '3000'],
              ['dbo', 'items', 'U ', 'amount', 'decimal', 17, 30, 10, true, '3000'],
            ],
          };
        if (q === MSSQL_INTROSPECTION.primaryKeys.trim())
          return {
            columns: [
              { name: 'schema', type: 'nvarchar' },
              { name: 'name', type: 'nvarchar' },
              { name: 'col', type: 'nvarchar' },
            ],
            rows: [['dbo', 'items', 'id']],
          };
        if (q === MSSQL_INTROSPECTION.foreignKeys.trim())
          return { columns: [{ name: 'fk', type: 'nvarchar' }], rows: [] };
        if (q === MSSQL_INTROSPECTION.comments.trim())
          return {
            columns: [
              { name: 'schema', type: 'nvarchar' },
              { name: 'name', type: 'nvarchar' },
              { name: 'col', type: 'nvarchar' },
              { name: 'comment', type: 'nvarchar' },
            ],
            rows: [
              ['dbo', 'items', null, 'Line items of\r\ninvoices'],
              ['dbo', 'items', 'amount', `Net amount "EUR"\u0000 ${'x'.repeat(900)}`],
              ['dbo', 'gone', null, 'a table the login cannot read'],
            ],
          };
        if (q.includes('FROM items')) {
          const min = typeof params[0] === 'number' ? params[0] : 0;
          return { columns: itemColumns, rows: items.filter((r) => (r[0] as number) > min) };
        }
        if (q.includes('FROM docs')) {
          const size = Number(/size = (\d+)/.exec(q)?.[1] ?? 0);
          return {
            columns: [
              { name: 'id', type: 'int' },
              { name: 'body', type: 'nvarchar(max)' },
            ],
            rows: [
              [1, size ? 'é'.repeat(size) : null],
              [2, 'after'],
            ],
          };
        }
        if (q.includes('FROM slow')) return { hang: true };
        if (q.includes('FROM nope'))
          return { error: { number: 208, message: "Invalid object name 'nope'." } };
        if (q.includes('FROM secret'))
          return {
            error: {
              number: 229,
              message:
                "The SELECT permission was denied on the object 'secret', database 'sales', schema 'dbo'.",
              class: 14,
            },
          };
        return undefined;
      },
    });
  });
  afterAll(async () => {
    await closeAllDrivers();
    await tds.stop();
  });

  it('logs in with the user and database, pings and reports the version', async () => {
    const r = await (await driverFor(t())).ping();
    expect(r.serverVersion).toBe('16.0.4165.4');
    expect(tds.requests.find((x) => x.kind === 'login')).toMatchObject({
      user: 'reporter',
      database: 'sales',
    });
  });

  it('binds @p1 through sp_executesql, normalizes values, and rolls back the transaction it opened', async () => {
    const n = tds.requests.length;
    const r = await runReadOnly(t(), 'SELECT * FROM items WHERE id > @p1', { params: [2999] });
    expect(r.rows).toEqual([
      {
        id: 3000,
        big: '9007199254740993',
        amount: '12.5',
        at: '2024-03-01T10:20:30.123',
        raw: 'AQL/',
        note: 'x'.repeat(50),
        flag: false,
      },
    ]);
    const seen = since(n);
    expect(seen.find((x) => x.kind === 'rpc' && x.sql?.includes('FROM items'))).toMatchObject({
      declarations: '@p1 int',
      params: [2999],
    });
    expect(seen.filter((x) => x.kind === 'transaction').map((x) => x.transaction)).toEqual([
      'begin',
      'rollback',
    ]);
  });

  it('resets the session (TDS RESETCONNECTION, sp_reset_connection) on every checkout of a pooled connection', async () => {
    await runReadOnly(t({ id: 'tds-reset' }), 'SELECT 1');
    const n = tds.requests.length;
    const logins = tds.requests.filter((x) => x.kind === 'login').length;
    await runReadOnly(t({ id: 'tds-reset' }), 'SELECT 1');
    await runReadOnly(t({ id: 'tds-reset' }), 'SELECT 1');
    const seen = since(n);
    // Each read: the reset batch first (it replaces mssql's SELECT 1 validation), then BEGIN … ROLLBACK.
    const resets = seen.filter((x) => x.kind === 'batch' && x.reset);
    expect(resets).toHaveLength(2);
    expect(seen[0]).toMatchObject({ kind: 'batch', reset: true });
    expect(seen.some((x) => x.kind === 'batch' && /^select 1;$/i.test(x.sql ?? ''))).toBe(false);
    expect(tds.requests.filter((x) => x.kind === 'login').length).toBe(logins);
  });

  it('a connection whose reset fails is destroyed, and the read runs on a fresh login', async () => {
    await runReadOnly(t({ id: 'tds-reset-fail' }), 'SELECT 1');
    const logins = tds.requests.filter((x) => x.kind === 'login').length;
    failReset = true;
    const r = await runReadOnly(t({ id: 'tds-reset-fail' }), 'SELECT 1');
    expect(r.rows).toHaveLength(1);
    expect(failReset).toBe(false);
    expect(tds.requests.filter((x) => x.kind === 'login').length).toBe(logins + 1);
  });

  it('stops a large result at maxRows + 1 by cancelling the request (attention), and the pool keeps working', async () => {
    const n = tds.requests.length;
    const r = await runReadOnly(t(), 'SELECT * FROM items', { maxRows: 5 });
    expect(r.rows.map((x) => x.id)).toEqual([1, 2, 3, 4, 5]);
    expect(r.truncated).toBe(true);
    expect(since(n).some((x) => x.kind === 'attention')).toBe(true);
    expect(
      (await runReadOnly(t(), 'SELECT * FROM items WHERE id > @p1', { params: [2998] })).rows,
    ).toHaveLength(2);
  });

  it('(max) values: read whole up to the 8 MiB bound, NULL as null; past the bound 422 VALUE_TOO_LARGE, not buffered, and the pool keeps working', async () => {
    const small = await runReadOnly(t(), 'SELECT * FROM docs WHERE size = 100000');
    expect(small.rows).toEqual([
      { id: 1, body: 'é'.repeat(100_000) },
      { id: 2, body: 'after' },
    ]);
    expect((await runReadOnly(t(), 'SELECT * FROM docs WHERE size = 0')).rows[0]).toEqual({
      id: 1,
      body: null,
    });
    // 4.5 million UTF-16 characters: 9 MB on the wire, in PLP chunks of 8,000 bytes.
    const e = await failure(runReadOnly(t(), 'SELECT * FROM docs WHERE size = 4500000'));
    expect(e.status).toBe(422);
    expect(e.code).toBe('VALUE_TOO_LARGE');
    expect((await runReadOnly(t(), 'SELECT * FROM docs WHERE size = 10')).rows[0]).toEqual({
      id: 1,
      body: 'éééééééééé',
    });
  });

  it('stops at the byte cap', async () => {
    const r = await runReadOnly(t(), 'SELECT * FROM items', { maxBytes: 2000 });
    expect(r.rows.length).toBeGreaterThan(0);
    expect(r.rows.length).toBeLessThan(20);
    expect(r.truncated).toBe(true);
  });

  it('a request past the statement timeout is cancelled and answered 504 QUERY_TIMEOUT', async () => {
    const n = tds.requests.length;
    const e = await failure(runReadOnly(t(), 'SELECT * FROM slow', { timeoutMs: 300 }));
    expect(e).toMatchObject({ status: 504, code: 'QUERY_TIMEOUT' });
    expect(since(n).some((x) => x.kind === 'attention')).toBe(true);
    expect(
      (await runReadOnly(t(), 'SELECT * FROM items WHERE id > @p1', { params: [2999] })).rows,
    ).toHaveLength(1);
  });

  it('server errors become 422 QUERY_FAILED with the error number (208), and 229 diagnoses as PERMISSION', async () => {
    const e = await failure(runReadOnly(t(), 'SELECT * FROM nope'));
    expect(e).toMatchObject({ status: 422, code: 'QUERY_FAILED', details: { code: '208' } });
    expect(e.message).toContain("Invalid object name 'nope'");
    // Each failed request still rolls back and returns its connection: more failures than the pool
    // holds connections (3) leave it usable.
    for (let i = 0; i < 4; i++) await failure(runReadOnly(t(), 'SELECT * FROM nope'));
    expect(
      (await runReadOnly(t(), 'SELECT * FROM items WHERE id > @p1', { params: [2999] })).rows,
    ).toHaveLength(1);
    const d = await driverFor(t());
    const err = await d
      .query('SELECT * FROM secret', { maxRows: 1, maxBytes: 1e4, timeoutMs: 5000 })
      .catch((x) => x);
    const { diagnose } = await import('../../shared/databases/diagnosis');
    expect(diagnose(err, t(), 'QUERY')).toMatchObject({ stage: 'PERMISSION', fault: 'user' });
  });

  it('introspects through the catalog queries', async () => {
    const s = await (await driverFor(t())).introspect();
    expect(s.tables).toEqual([
      {
        name: 'items',
        schema: 'dbo',
        kind: 'table',
        columns: [
          { name: 'id', type: 'int', nullable: false, primaryKey: true },
          {
            name: 'amount',
            type: 'decimal(30,10)',
            nullable: true,
            primaryKey: false,
            // Control characters become spaces, whitespace collapses, 300 characters at most.
            comment: `Net amount "EUR" ${'x'.repeat(282)}…`,
          },
        ],
        primaryKey: ['id'],
        foreignKeys: [],
        rowEstimate: 3000,
        comment: 'Line items of invoices',
      },
    ]);
  });

  it('a write that slipped past the guard is still rolled back, never committed', async () => {
    const n = tds.requests.length;
    await (await driverFor(t())).query('DELETE FROM items', { maxRows: 1, maxBytes: 1e4, timeoutMs: 5000 });
    const tx = since(n)
      .filter((x) => x.kind === 'transaction')
      .map((x) => x.transaction);
    expect(tx).toEqual(['begin', 'rollback']);
  });

  it('login failures: wrong password is AUTH (18456), unknown database is DATABASE (4060)', async () => {
    const bad = await failure(runReadOnly(t({ id: 'tds-badpw', password: 'wrong' }), 'SELECT 1 AS x'));
    expect(bad.code).toBe('CONNECTION_FAILED');
    expect((bad.details as { diagnosis: Diagnosis }).diagnosis).toMatchObject({
      stage: 'AUTH',
      title: 'Login failed',
    });
    const db = await failure(runReadOnly(t({ id: 'tds-baddb', database: 'nosuch' }), 'SELECT 1 AS x'));
    expect((db.details as { diagnosis: Diagnosis }).diagnosis).toMatchObject({
      stage: 'DATABASE',
      title: 'Database not found',
    });
  });

  it('sslEnabled refuses a server that offers no TLS, before any credentials are sent', async () => {
    const logins = tds.requests.filter((x) => x.kind === 'login').length;
    const e = await failure(runReadOnly(t({ id: 'tds-tls', sslEnabled: true }), 'SELECT 1 AS x'));
    expect(e.code).toBe('CONNECTION_FAILED');
    expect((e.details as { diagnosis: Diagnosis }).diagnosis).toMatchObject({
      stage: 'TLS',
      title: 'The server does not accept TLS',
    });
    expect(tds.requests.filter((x) => x.kind === 'login').length).toBe(logins);
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
