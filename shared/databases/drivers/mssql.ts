/**
 * SQL Server adapter (mssql over tedious). SQL Server has no read-only transaction, so each read runs as:
 *   BEGIN TRANSACTION (READ COMMITTED)
 *   <statement>          streamed (request.stream, arrayRowMode); at maxRows + 1 rows or the byte cap the
 *                        request is cancelled (no session settings such as SET ROWCOUNT, which would
 *                        outlive the request on a pooled connection)
 *   ROLLBACK             (always: anything the statement changed is undone)
 * with the request timeout set to the statement timeout and ApplicationIntent=ReadOnly (routes to a
 * readable secondary in an availability group). Parameters are @p1, @p2, … bound as typed inputs.
 * Values: bigint and decimal/numeric/money as strings, datetime/datetime2 as ISO without zone,
 * datetimeoffset as ISO UTC, date as YYYY-MM-DD, binary as base64, uniqueidentifier as string.
 * Memory: rows are streamed into the row collector and the request is cancelled once it is full; tedious
 * builds each row whole, and a (max) value (varchar/nvarchar/varbinary(max), xml) longer than
 * VALUE_LIMIT_BYTES is not kept: its bytes are skipped as they arrive and the read fails with
 * VALUE_TOO_LARGE (boundPlpValues), so one read holds its capped result plus at most one bounded row.
 */
import sql from 'mssql';
import { connectInSequence } from 'tedious/lib/connector.js';
import * as valueParserModule from 'tedious/lib/value-parser.js';
import { checkedLookup } from '../host-policy';
import { normalizeValue, RowCollector, uniqueColumns } from '../values';
import { boundComments, COMMENT_READ_CHARS } from './comments';
import { dbDeadlines, dbPoolSize, serverLimitMs, withTimer } from './deadline';
import { ConnectTimeoutError, QueryTimeoutError } from './errors';
import { VALUE_LIMIT_BYTES, valueTooLarge } from './limits';
import type { ConnectionTarget, Driver, QueryOptions, QueryResult, SchemaSnapshot, TableInfo } from './types';

/** Set on a tedious connection's options when a value of the current row was too long to keep. */
const TOO_LARGE = Symbol('loupe.valueTooLarge');
type Flagged = { [TOO_LARGE]?: boolean };
const PLP_NULL = 0xffffffffffffffffn;
const UNKNOWN_PLP_LEN = 0xfffffffffffffffen;

interface PlpParser {
  buffer: Buffer;
  position: number;
  options: Flagged;
  waitForChunk(): Promise<void>;
}

/**
 * tedious reads a (max) value (PLP: a total length, then chunks, then a 0 terminator) into memory whole
 * before the row reaches us. This replaces its reader (module-level, once; tedious's row parsers look it
 * up at each call): the same wire reading and the same result up to VALUE_LIMIT_BYTES; past it the bytes
 * are skipped as they arrive, the value is given as NULL, and the connection's options are flagged so
 * that the read fails with VALUE_TOO_LARGE instead of answering that NULL (queryOn checks each row).
 */
export function boundPlpValues(limit = VALUE_LIMIT_BYTES): void {
  // The module's own exports object (what tedious's row parsers read): the default of the namespace in
  // Node's ES module interop and in the esbuild bundle alike.
  const parser = ((valueParserModule as { default?: unknown }).default ?? valueParserModule) as {
    readPLPStream: (p: PlpParser) => Promise<Buffer[] | null>;
    __loupeBounded?: boolean;
  };
  if (parser.__loupeBounded) return;
  parser.__loupeBounded = true;
  parser.readPLPStream = async (p: PlpParser) => {
    while (p.buffer.length < p.position + 8) await p.waitForChunk();
    const expected = p.buffer.readBigUInt64LE(p.position);
    p.position += 8;
    if (expected === PLP_NULL) return null;
    const chunks: Buffer[] = [];
    let length = 0;
    let over = expected !== UNKNOWN_PLP_LEN && expected > BigInt(limit);
    for (;;) {
      while (p.buffer.length < p.position + 4) await p.waitForChunk();
      const n = p.buffer.readUInt32LE(p.position);
      p.position += 4;
      if (!n) break;
      if (!over && length + n > limit) {
        over = true;
        chunks.length = 0;
      }
      if (over) {
        // Skipped as it arrives: nothing of it is kept.
        let left = n;
        while (left > 0) {
          if (p.position >= p.buffer.length) await p.waitForChunk();
          const k = Math.min(left, p.buffer.length - p.position);
          p.position += k;
          left -= k;
        }
      } else {
        while (p.buffer.length < p.position + n) await p.waitForChunk();
        chunks.push(p.buffer.slice(p.position, p.position + n));
        p.position += n;
      }
      length += n;
    }
    if (over) {
      p.options[TOO_LARGE] = true;
      return null;
    }
    if (expected !== UNKNOWN_PLP_LEN && length !== Number(expected))
      throw new Error(
        `Partially Length-prefixed Bytes unmatched lengths : expected ${expected}, but got ${length} bytes`,
      );
    return chunks;
  };
}
boundPlpValues();

export interface MssqlColumn {
  name: string;
  type?: { declaration?: string };
  scale?: number;
}

export class TlsNotOfferedError extends Error {
  readonly code = 'ENOTLS';
  constructor(host: string) {
    super(`The server does not support encryption: ${host} offered no TLS, and sslEnabled requires it.`);
    this.name = 'TlsNotOfferedError';
  }
}

/**
 * tedious treats `encrypt: true` as a request: when the server's PRELOGIN answers ENCRYPT_NOT_SUP it
 * logs in without TLS (credentials in clear, open to a downgrade by anyone on the path). With
 * sslEnabled we refuse that: before TLS negotiation each connection checks what the server offered
 * and fails unless it is ON or REQ. If tedious ever renames the hook, connecting fails closed.
 */
export function requireTls(connection: unknown, host: string): void {
  const c = connection as {
    performTlsNegotiation?: (payload: { encryptionString?: string }, signal: unknown) => Promise<void>;
  };
  const original = c.performTlsNegotiation;
  if (typeof original !== 'function') {
    c.performTlsNegotiation = async () => {
      throw new Error('Cannot verify TLS with this version of tedious; refusing to connect with sslEnabled.');
    };
    return;
  }
  c.performTlsNegotiation = async function (this: unknown, payload, signal) {
    if (payload?.encryptionString !== 'ON' && payload?.encryptionString !== 'REQ')
      throw new TlsNotOfferedError(host);
    return original.call(this, payload, signal);
  };
}

/** The pool configuration for a target (exported for tests; never logged: it holds the password). */
export function mssqlConfig(target: ConnectionTarget): sql.config {
  const deadlines = dbDeadlines();
  return {
    ...(target.sslEnabled ? { beforeConnect: (conn: unknown) => requireTls(conn, target.host) } : {}),
    server: target.host,
    port: target.port ?? 1433,
    database: target.database || undefined,
    user: target.username,
    password: target.password,
    connectionTimeout: deadlines.connectMs,
    // tedious's own client-side timer (SQL Server has no server-side statement limit): at the timeout it
    // sends an attention and, when the server does not acknowledge it within cancelTimeout (5 s, its default), closes the
    // connection. Reads set their own, from the time left (query below).
    requestTimeout: deadlines.statementMs,
    // Waiting for a free pooled connection is part of connecting. Sessions per database in this process:
    // LOUPE_DB_POOL_SIZE (default 20).
    pool: { max: dbPoolSize(), min: 0, idleTimeoutMillis: 60_000, acquireTimeoutMillis: deadlines.connectMs },
    options: {
      encrypt: target.sslEnabled,
      trustServerCertificate: false,
      readOnlyIntent: true,
      appName: 'loupe',
      useUTC: true,
      abortTransactionOnError: true,
      enableArithAbort: true,
      // tedious's own sequential connector, resolving through the host policy (checked at every connect).
      connector: (opts: unknown, _lookup: unknown, signal: unknown) =>
        (connectInSequence as (o: unknown, l: unknown, s: unknown) => Promise<unknown>)(
          opts,
          checkedLookup,
          signal,
        ),
    } as sql.config['options'],
  };
}

/** @p1 … @pn input names for positional parameters. */
export const paramNames = (params: unknown[]) => params.map((_, i) => `p${i + 1}`);

const decimalTypes = new Set(['decimal', 'numeric', 'money', 'smallmoney', 'bigint']);
const naiveDateTimes = new Set(['datetime', 'datetime2', 'smalldatetime']);

export function normalizeMssqlValue(value: unknown, column: MssqlColumn): unknown {
  if (value === null || value === undefined) return null;
  const decl = column.type?.declaration;
  if (decl && decimalTypes.has(decl) && (typeof value === 'number' || typeof value === 'bigint'))
    return String(value);
  if (value instanceof Date && !Number.isNaN(value.getTime())) {
    const iso = value.toISOString();
    if (decl === 'date') return iso.slice(0, 10);
    if (decl === 'time') return iso.slice(11, 23);
    if (decl && naiveDateTimes.has(decl)) return iso.slice(0, -1);
  }
  return normalizeValue(value);
}

/** Introspection SQL (user tables and views; system schemas and shipped objects skipped). */
export const MSSQL_INTROSPECTION = {
  columns: `SELECT s.name AS [schema], o.name AS name, o.type AS kind, c.name AS col, TYPE_NAME(c.user_type_id) AS type,
  c.max_length AS max_length, c.precision AS precision, c.scale AS scale, c.is_nullable AS nullable,
  (SELECT SUM(p.rows) FROM sys.partitions p WHERE p.object_id = o.object_id AND p.index_id IN (0, 1)) AS estimate
FROM sys.objects o
JOIN sys.schemas s ON s.schema_id = o.schema_id
JOIN sys.columns c ON c.object_id = o.object_id
WHERE o.type IN ('U', 'V') AND o.is_ms_shipped = 0 AND s.name NOT IN ('sys', 'INFORMATION_SCHEMA', 'guest')
  AND HAS_PERMS_BY_NAME(QUOTENAME(s.name) + '.' + QUOTENAME(o.name), 'OBJECT', 'SELECT') = 1
ORDER BY s.name, o.name, c.column_id`,
  primaryKeys: `SELECT s.name AS [schema], t.name AS name, c.name AS col
FROM sys.indexes i
JOIN sys.index_columns ic ON ic.object_id = i.object_id AND ic.index_id = i.index_id
JOIN sys.columns c ON c.object_id = ic.object_id AND c.column_id = ic.column_id
JOIN sys.tables t ON t.object_id = i.object_id
JOIN sys.schemas s ON s.schema_id = t.schema_id
WHERE i.is_primary_key = 1
ORDER BY s.name, t.name, ic.key_ordinal`,
  foreignKeys: `SELECT fk.name AS fk, s.name AS [schema], t.name AS name, c.name AS col, rs.name AS ref_schema, rt.name AS ref_name, rc.name AS ref_col
FROM sys.foreign_keys fk
JOIN sys.foreign_key_columns fkc ON fkc.constraint_object_id = fk.object_id
JOIN sys.tables t ON t.object_id = fk.parent_object_id
JOIN sys.schemas s ON s.schema_id = t.schema_id
JOIN sys.columns c ON c.object_id = fkc.parent_object_id AND c.column_id = fkc.parent_column_id
JOIN sys.tables rt ON rt.object_id = fk.referenced_object_id
JOIN sys.schemas rs ON rs.schema_id = rt.schema_id
JOIN sys.columns rc ON rc.object_id = fkc.referenced_object_id AND rc.column_id = fkc.referenced_column_id
ORDER BY s.name, t.name, fk.name, fkc.constraint_column_id`,
  /** MS_Description extended properties of user tables and views (minor_id 0) and of their columns, clipped. */
  comments: `SELECT s.name AS [schema], o.name AS name, c.name AS col,
  LEFT(CAST(ep.value AS nvarchar(4000)), ${COMMENT_READ_CHARS}) AS comment
FROM sys.extended_properties ep
JOIN sys.objects o ON o.object_id = ep.major_id
JOIN sys.schemas s ON s.schema_id = o.schema_id
LEFT JOIN sys.columns c ON c.object_id = ep.major_id AND c.column_id = ep.minor_id
WHERE ep.class = 1 AND ep.name = N'MS_Description' AND o.type IN ('U', 'V') AND o.is_ms_shipped = 0
  AND (ep.minor_id = 0 OR c.column_id IS NOT NULL)
ORDER BY s.name, o.name, ep.minor_id`,
};

/** nvarchar(50), decimal(10,2), varbinary(max), … from sys.columns facts. */
export function mssqlTypeName(type: string, maxLength: number, precision: number, scale: number): string {
  const t = type.toLowerCase();
  if (['varchar', 'char', 'varbinary', 'binary'].includes(t))
    return `${t}(${maxLength === -1 ? 'max' : maxLength})`;
  if (['nvarchar', 'nchar'].includes(t)) return `${t}(${maxLength === -1 ? 'max' : maxLength / 2})`;
  if (['decimal', 'numeric'].includes(t)) return `${t}(${precision},${scale})`;
  if (['datetime2', 'time', 'datetimeoffset'].includes(t)) return `${t}(${scale})`;
  return t;
}

export function buildMssqlSnapshot(
  defaultSchema: string,
  columns: Record<string, unknown>[],
  primaryKeys: Record<string, unknown>[],
  foreignKeys: Record<string, unknown>[],
  comments: Record<string, unknown>[] = [],
): SchemaSnapshot {
  const display = (s: unknown, n: unknown) => (s === defaultSchema ? String(n) : `${s}.${n}`);
  const tables = new Map<string, TableInfo>();
  for (const r of columns) {
    const key = `${r.schema}.${r.name}`;
    let t = tables.get(key);
    if (!t) {
      t = {
        name: display(r.schema, r.name),
        schema: String(r.schema),
        kind: String(r.kind).trim() === 'V' ? 'view' : 'table',
        columns: [],
        primaryKey: [],
        foreignKeys: [],
        rowEstimate: r.estimate === null || r.estimate === undefined ? null : Number(r.estimate),
      };
      tables.set(key, t);
    }
    t.columns.push({
      name: String(r.col),
      type: mssqlTypeName(String(r.type), Number(r.max_length), Number(r.precision), Number(r.scale)),
      nullable: Boolean(r.nullable),
      primaryKey: false,
    });
  }
  for (const r of comments) {
    const t = tables.get(`${r.schema}.${r.name}`);
    if (!t || r.comment === null || r.comment === undefined) continue;
    if (r.col === null || r.col === undefined) t.comment = String(r.comment);
    else {
      const col = t.columns.find((c) => c.name === r.col);
      if (col) col.comment = String(r.comment);
    }
  }
  for (const r of primaryKeys) {
    const t = tables.get(`${r.schema}.${r.name}`);
    if (!t) continue;
    t.primaryKey.push(String(r.col));
    const col = t.columns.find((c) => c.name === r.col);
    if (col) col.primaryKey = true;
  }
  const fks = new Map<string, { t: TableInfo; columns: string[]; ref: string; refColumns: string[] }>();
  for (const r of foreignKeys) {
    const t = tables.get(`${r.schema}.${r.name}`);
    if (!t) continue;
    const key = `${r.schema}.${r.name}.${r.fk}`;
    let fk = fks.get(key);
    if (!fk) {
      fk = { t, columns: [], ref: display(r.ref_schema, r.ref_name), refColumns: [] };
      fks.set(key, fk);
    }
    fk.columns.push(String(r.col));
    fk.refColumns.push(String(r.ref_col));
  }
  for (const fk of fks.values())
    fk.t.foreignKeys.push({ columns: fk.columns, referencedTable: fk.ref, referencedColumns: fk.refColumns });
  return boundComments({ tables: [...tables.values()] });
}

/**
 * sp_reset_connection semantics on every checkout. mssql's pool validates a free connection with
 * `SELECT 1` before handing it out and never resets it, so session state (SET options, temporary tables,
 * sp_getapplock session locks, open transactions) would carry over. This replaces that validation with
 * tedious's `reset()`: the connection's initial SQL sent with the TDS RESETCONNECTION flag, which makes
 * the server run sp_reset_connection first (same round trip as the SELECT 1 it replaces). A connection
 * whose reset fails is reported invalid, and the pool destroys it.
 */
export function resetOnCheckout(pool: sql.ConnectionPool): void {
  (pool as unknown as { _poolValidate: (t: unknown) => boolean | Promise<boolean> })._poolValidate = (
    tedious: unknown,
  ) => {
    const t = tedious as {
      closed?: boolean;
      hasError?: boolean;
      reset?: (cb: (err?: Error) => void) => void;
    } | null;
    if (!t || t.closed || t.hasError || typeof t.reset !== 'function') return false;
    const reset = t.reset.bind(t);
    return new Promise<boolean>((resolve) => reset((err) => resolve(!err)));
  };
}

export function mssqlDriver(target: ConnectionTarget): Driver {
  const pool = new sql.ConnectionPool(mssqlConfig(target));
  resetOnCheckout(pool);
  pool.on('error', () => {});
  const deadlines = dbDeadlines();
  let connecting: Promise<sql.ConnectionPool> | undefined;
  const ready = () => {
    if (!connecting)
      connecting = pool.connect().catch((e) => {
        connecting = undefined;
        throw e;
      });
    return connecting;
  };

  return {
    async ping() {
      const started = performance.now();
      const ms = deadlines.testMs;
      const r = await withTimer(
        ready().then((p) =>
          p
            .request()
            .query<{ v: string }>("SELECT CAST(SERVERPROPERTY('ProductVersion') AS nvarchar(128)) AS v"),
        ),
        ms,
        () => new ConnectTimeoutError(ms, 'answering the connection test'),
        () => {},
      );
      return {
        latencyMs: Math.round((performance.now() - started) * 100) / 100,
        serverVersion: r.recordset[0]?.v,
      };
    },

    async introspect(opts) {
      const ms = opts?.timeoutMs ?? deadlines.statementMs;
      return withTimer(
        introspectOn(ms),
        ms,
        () => new QueryTimeoutError(ms),
        () => {},
      );
    },

    async query(text: string, opts: QueryOptions): Promise<QueryResult> {
      // The client timer answers in time; tedious's requestTimeout (the time left) then cancels the
      // statement, and closes the connection when the server does not acknowledge the cancel.
      let tx: sql.Transaction | undefined;
      return withTimer(
        queryOn(text, opts, (t) => {
          tx = t;
        }),
        opts.timeoutMs,
        () => new QueryTimeoutError(opts.timeoutMs),
        () => closeConnectionOf(tx),
      );
    },

    async close() {
      await pool.close().catch(() => {});
    },
  };

  async function introspectOn(ms: number): Promise<SchemaSnapshot> {
    const p = await ready();
    const tx = new sql.Transaction(p);
    await tx.begin(sql.ISOLATION_LEVEL.READ_COMMITTED);
    try {
      const q = (text: string) =>
        new RequestWithTimeout(tx, { requestTimeout: ms })
          .query(text)
          .then((r) => r.recordset as Record<string, unknown>[]);
      const schema = String((await q('SELECT SCHEMA_NAME() AS s'))[0]?.s ?? 'dbo');
      return buildMssqlSnapshot(
        schema,
        await q(MSSQL_INTROSPECTION.columns),
        await q(MSSQL_INTROSPECTION.primaryKeys),
        await q(MSSQL_INTROSPECTION.foreignKeys),
        await q(MSSQL_INTROSPECTION.comments),
      );
    } finally {
      await tx.rollback().catch(() => {});
    }
  }

  async function queryOn(
    text: string,
    opts: QueryOptions,
    began: (tx: sql.Transaction) => void,
  ): Promise<QueryResult> {
    const started = performance.now();
    const deadline = Date.now() + opts.timeoutMs;
    const readOnly = opts.readOnly !== false;
    const p = await ready();
    const tx = new sql.Transaction(p);
    began(tx);
    await tx.begin(sql.ISOLATION_LEVEL.READ_COMMITTED);
    // The tedious connection's options: where boundPlpValues flags a value too long to keep.
    const flags = (tx as unknown as { _acquiredConnection?: { config?: { options?: Flagged } } })
      ._acquiredConnection?.config?.options;
    if (flags) flags[TOO_LARGE] = false;
    const collector = new RowCollector(opts.maxRows, opts.maxBytes);
    let columns: string[] = [];
    let meta: MssqlColumn[] = [];
    let affected: number | undefined;
    let committed = false;
    try {
      const req = new RequestWithTimeout(tx, { requestTimeout: serverLimitMs(deadline) });
      const names = paramNames(opts.params ?? []);
      (opts.params ?? []).forEach((v, i) => {
        req.input(names[i], v as never);
      });
      req.stream = true;
      req.arrayRowMode = true;
      await new Promise<void>((resolve, reject) => {
        let stopped = false;
        let failed: unknown;
        let settled = false;
        // The request is finished only at 'done' (which follows 'error' in stream mode): rolling back
        // earlier fails with "request in progress" and would leave the connection checked out.
        const settle = () => {
          if (settled) return;
          settled = true;
          if (failed) reject(failed);
          else resolve();
        };
        req.on('recordset', (cols: MssqlColumn[]) => {
          if (columns.length === 0) {
            meta = cols;
            columns = uniqueColumns(cols.map((c) => c.name));
          }
        });
        req.on('row', (row: unknown[]) => {
          if (stopped) return;
          if (flags?.[TOO_LARGE]) {
            // A value of this row was longer than the bound: the read fails rather than answer it NULL.
            stopped = true;
            failed ??= valueTooLarge();
            req.cancel();
            return;
          }
          const obj: Record<string, unknown> = {};
          columns.forEach((c, i) => {
            obj[c] = normalizeMssqlValue(row[i], meta[i] ?? { name: c });
          });
          // A write (OUTPUT) runs to its end so that it can commit; only the kept rows are capped.
          if (!collector.add(obj) && readOnly) {
            stopped = true;
            req.cancel();
          }
        });
        req.on('error', (e: { code?: string }) => {
          if (!(stopped && e?.code === 'ECANCEL')) failed ??= e;
          // Safety net: settle even if a broken connection never reports 'done'.
          setTimeout(settle, 2_000).unref();
        });
        req.on('done', (r: { rowsAffected?: number[] }) => {
          affected = r?.rowsAffected?.reduce((a, b) => a + b, 0);
          settle();
        });
        req.query(text);
      });
      if (!readOnly) {
        await tx.commit();
        committed = true;
      }
    } finally {
      if (!committed) await tx.rollback().catch(() => {});
    }
    return {
      columns,
      rows: collector.rows,
      rowCount:
        !readOnly && columns.length === 0 && affected !== undefined ? affected : collector.rows.length,
      ...(!readOnly ? { rowsAffected: affected ?? 0 } : {}),
      executionTime: Math.round((performance.now() - started) * 100) / 100,
      ...(collector.truncated ? { truncated: true } : {}),
    };
  }
}

/** mssql takes a per-request timeout as a second constructor argument (not in its type definitions). */
const RequestWithTimeout = sql.Request as unknown as new (
  parent: sql.Transaction,
  overrides: { requestTimeout: number },
) => sql.Request;

/** Closes the socket of the connection a transaction holds (the pool then discards it). */
function closeConnectionOf(tx: sql.Transaction | undefined): void {
  const conn = (tx as unknown as { _acquiredConnection?: { close?(): void } } | undefined)
    ?._acquiredConnection;
  try {
    conn?.close?.();
  } catch {
    // already closed
  }
}
