/**
 * MySQL and MariaDB adapter (mysql2). Each read runs on a pooled connection as:
 *   SET SESSION max_statement_time = s (MariaDB) | max_execution_time = ms (MySQL), time_zone = '+00:00'
 *   START TRANSACTION READ ONLY
 *   <statement>            streamed row by row; at maxRows + 1 rows or the byte cap the connection
 *                          is destroyed (the server rolls back and stops sending)
 *   COM_RESET_CONNECTION   (rolls back and clears the session: GET_LOCK locks, variables, temporary
 *                          tables; a connection whose reset fails is destroyed, see resetSession)
 * multipleStatements stays off, so the server refuses stacked statements too.
 * Memory: rows are streamed into the row collector one by one; once the result is full the connection
 * is destroyed (the server stops sending). mysql2 buffers one whole packet (a row) at a time; a row
 * longer than MESSAGE_LIMIT_BYTES (8 MiB + 64 KiB) ends the connection with VALUE_TOO_LARGE as its
 * header arrives (limitMysqlPackets), so one read holds its capped result plus at most one bounded row.
 * Values: BIGINT/DECIMAL as strings, DATE as YYYY-MM-DD, DATETIME as ISO without zone, TIMESTAMP as
 * ISO UTC (Z), JSON as objects, binary as base64.
 */
import mysql from 'mysql2';
import { checkedSocket } from '../host-policy';
import { RowCollector, rowOf, uniqueColumns } from '../values';
import { boundComments, COMMENT_READ_CHARS } from './comments';
import { dbDeadlines, dbPoolSize, serverLimitMs, withTimer } from './deadline';
import { ConnectTimeoutError, QueryTimeoutError } from './errors';
import { limitMysqlPackets, valueTooLarge } from './limits';
import type { ConnectionTarget, Driver, QueryOptions, QueryResult, SchemaSnapshot, TableInfo } from './types';

type Conn = mysql.PoolConnection & { loupeBroken?: Error };

/** How long the reset that ends a session may take before the connection is destroyed instead. */
const CLEANUP_MS = 2_000;

interface Flavor {
  mariadb: boolean;
  version: string;
}

/** `2024-01-02 03:04:05.123` → `2024-01-02T03:04:05.123` (+ `Z` for TIMESTAMP, which we read in UTC). */
export function isoDateTime(text: string | null, utc: boolean): string | null {
  if (text === null) return null;
  if (!/^\d{4}-\d\d-\d\d \d/.test(text) || text.startsWith('0000-00-00')) return text;
  return text.replace(' ', 'T') + (utc ? 'Z' : '');
}

const typeCast: mysql.TypeCast = (field, next) => {
  if (field.type === 'DATETIME') return isoDateTime(field.string(), false);
  if (field.type === 'TIMESTAMP') return isoDateTime(field.string(), true);
  if (field.type === 'DATE' || field.type === 'NEWDATE') return field.string();
  return next();
};

/** The statements that set up one read (exported for tests). */
export function sessionSetup(flavor: Flavor, timeoutMs: number): string {
  const limit = flavor.mariadb
    ? `max_statement_time = ${Math.max(0.001, timeoutMs / 1000).toFixed(3)}`
    : `max_execution_time = ${Math.max(1, Math.floor(timeoutMs))}`;
  return `SET SESSION ${limit}, time_zone = '+00:00'`;
}

/**
 * COM_RESET_CONNECTION (mysql2 `reset`): rolls back an open transaction and clears the session (user
 * locks taken with GET_LOCK, user variables, temporary tables, prepared statements, session variables)
 * without a new login. A connection is reset before it goes back to the pool; one whose reset fails is
 * destroyed.
 */
export const resetSession = (c: Conn) =>
  new Promise<void>((resolve, reject) =>
    (c as unknown as { reset(cb: (err: Error | null) => void): void }).reset((err) =>
      err ? reject(err) : resolve(),
    ),
  );

async function resetAndRelease(c: Conn): Promise<void> {
  if (c.loupeBroken) return c.destroy();
  try {
    await withTimer(
      resetSession(c),
      CLEANUP_MS,
      () => new Error('reset timed out'),
      () => c.destroy(),
    );
    if (c.loupeBroken) c.destroy();
    else c.release();
  } catch {
    c.destroy();
  }
}

export function mysqlDriver(target: ConnectionTarget): Driver {
  const deadlines = dbDeadlines();
  const pool = mysql.createPool({
    host: target.host,
    port: target.port ?? 3306,
    user: target.username,
    password: target.password,
    database: target.database || undefined,
    // verifyIdentity: the certificate must name the host (mysql2 checks only the chain without it).
    ssl: target.sslEnabled ? { rejectUnauthorized: true, verifyIdentity: true } : undefined,
    // Every new connection resolves the host through the host policy and connects to the checked address
    // (the host name stays the TLS server name).
    stream: () => checkedSocket().connect(target.port ?? 3306, target.host),
    // Connections per database in this process (LOUPE_DB_POOL_SIZE, default 20), opened as reads need them.
    connectionLimit: dbPoolSize(),
    maxIdle: dbPoolSize(),
    idleTimeout: 60_000,
    connectTimeout: deadlines.connectMs,
    supportBigNumbers: true,
    bigNumberStrings: true,
    dateStrings: true,
    timezone: 'Z',
    multipleStatements: false,
    charset: 'utf8mb4',
    typeCast,
  });
  let flavor: Flavor | undefined;
  // mysql2's pool listens for a connection's first 'error' only (once), and a connection can emit more
  // (a write after the server closed it: "Can't write in closed state"); an unheard 'error' would end the
  // process. Every connection gets a listener for its whole life, which marks it broken: the checkout
  // that holds it destroys it instead of returning it to the pool.
  pool.on('connection', (c) => {
    c.on('error', (e: Error) => {
      (c as Conn).loupeBroken ??= e;
    });
    limitMysqlPackets(c as unknown as Parameters<typeof limitMysqlPackets>[0]);
  });

  /**
   * A pooled connection within the connect timeout: a new connection's handshake (mysql2 connectTimeout)
   * and the wait for a free one when all are busy (mysql2's pool would wait forever). One that arrives
   * after we gave up goes back to the pool.
   */
  const getConnection = (): Promise<Conn> => {
    let abandoned = false;
    const p = new Promise<Conn>((resolve, reject) =>
      pool.getConnection((err, c) => (err ? reject(err) : resolve(c))),
    );
    p.then(
      (c) => {
        if (abandoned) c.release();
      },
      () => {},
    );
    const ms = deadlines.connectMs;
    return withTimer(
      p,
      ms,
      () => new ConnectTimeoutError(ms, 'waiting for a connection'),
      () => {
        abandoned = true;
      },
    );
  };

  /** `work(c)` within `deadline`; when it runs out the connection is destroyed and `timeout()` thrown. */
  const bounded = <T>(c: Conn, deadline: number, timeout: () => Error, work: () => Promise<T>) =>
    withTimer(Promise.resolve().then(work), deadline - Date.now(), timeout, () => {
      c.loupeBroken ??= new Error('destroyed');
      c.destroy();
    });
  const run = (c: Conn, sql: string, values?: unknown[]) =>
    new Promise<unknown[]>((resolve, reject) =>
      c.query({ sql, values }, (err, rows) => (err ? reject(err) : resolve(rows as unknown[]))),
    );
  const flavorOf = async (c: Conn) => {
    if (flavor) return flavor;
    const rows = (await run(c, 'SELECT VERSION() AS v')) as { v: string }[];
    const version = String(rows[0]?.v ?? '');
    flavor = { version, mariadb: /mariadb/i.test(version) || target.type === 'MARIADB' };
    return flavor;
  };

  async function withConnection<T>(
    limit: { deadline: number; timeout: () => Error },
    fn: (c: Conn) => Promise<T>,
  ): Promise<T> {
    const c = await getConnection();
    let destroy = false;
    try {
      return await bounded(c, limit.deadline, limit.timeout, () => fn(c));
    } catch (e) {
      destroy = true;
      throw e;
    } finally {
      if (destroy) c.destroy();
      else await resetAndRelease(c);
    }
  }

  return {
    async ping() {
      const started = performance.now();
      const ms = deadlines.testMs;
      const limit = {
        deadline: Date.now() + ms,
        timeout: () => new ConnectTimeoutError(ms, 'answering the connection test'),
      };
      const f = await withConnection(limit, async (c) => {
        await run(c, 'SELECT 1');
        return flavorOf(c);
      });
      return { latencyMs: Math.round((performance.now() - started) * 100) / 100, serverVersion: f.version };
    },

    async introspect(opts) {
      const ms = opts?.timeoutMs ?? deadlines.statementMs;
      const deadline = Date.now() + ms;
      return withConnection({ deadline, timeout: () => new QueryTimeoutError(ms) }, async (c) => {
        await run(c, sessionSetup(await flavorOf(c), serverLimitMs(deadline)));
        await run(c, 'START TRANSACTION READ ONLY');
        const snapshot = await introspect(c, run, target.database);
        await run(c, 'ROLLBACK');
        return snapshot;
      });
    },

    async query(text: string, opts: QueryOptions): Promise<QueryResult> {
      const started = performance.now();
      const readOnly = opts.readOnly !== false;
      const deadline = Date.now() + opts.timeoutMs;
      const c = await getConnection();
      const collector = new RowCollector(opts.maxRows, opts.maxBytes);
      let columns: string[] = [];
      let affected: number | undefined;
      let returned = 0;
      let reusable = false;
      let warnings = 0;
      try {
        await bounded(
          c,
          deadline,
          () => new QueryTimeoutError(opts.timeoutMs),
          async () => {
            await run(c, sessionSetup(await flavorOf(c), serverLimitMs(deadline)));
            await run(c, readOnly ? 'START TRANSACTION READ ONLY' : 'START TRANSACTION');
            let done = () => {};
            const stoppedEarly = await new Promise<boolean>((resolve, reject) => {
              let settled = false;
              // With parameters: a server-side prepared statement (values bound, never spliced into the text).
              const command = {
                sql: text,
                values: opts.params,
                rowsAsArray: true,
              };
              const q = opts.params?.length ? c.execute(command) : c.query(command);
              countWarnings(q, (n) => {
                warnings = Math.max(warnings, n);
              });
              q.on('fields', (fields: { name: string }[] | undefined) => {
                if (fields) columns = uniqueColumns(fields.map((f) => f.name));
              });
              q.on('result', (row: unknown) => {
                if (settled) return;
                if (!Array.isArray(row)) {
                  affected = (row as { affectedRows?: number }).affectedRows;
                  return;
                }
                returned++;
                // A write (RETURNING) runs to its end so that it can commit; only the kept rows are capped.
                if (!collector.add(rowOf(columns, row)) && readOnly) {
                  settled = true;
                  c.pause();
                  resolve(true);
                }
              });
              q.on('error', (err: Error) => {
                if (!settled) {
                  settled = true;
                  reject(err);
                }
              });
              q.on('end', () => {
                if (!settled) {
                  settled = true;
                  resolve(false);
                }
              });
              // mysql2 tells a streaming query (no callback) nothing when the connection fails: the
              // failure is emitted on the connection only. Without this the read would wait for the timer.
              const lost = (err?: Error) => {
                if (settled) return;
                settled = true;
                reject(
                  err ??
                    Object.assign(new Error('Connection lost: The server closed the connection.'), {
                      code: 'PROTOCOL_CONNECTION_LOST',
                    }),
                );
              };
              const onEnd = () => lost();
              c.on('error', lost);
              c.on('end', onEnd);
              done = () => {
                c.off('error', lost);
                c.off('end', onEnd);
              };
            }).finally(() => done());
            // A value past max_allowed_packet comes back as NULL with warning 1301: a 4xx, not a silent NULL.
            if (!stoppedEarly && readOnly && warnings > 0) {
              const shown = (await run(c, 'SHOW WARNINGS')) as { Code?: number }[];
              if (shown.some((w) => Number(w.Code) === ER_WARN_ALLOWED_PACKET_OVERFLOWED)) {
                reusable = true;
                throw valueTooLarge();
              }
            }
            if (!stoppedEarly) {
              // A read ends with the reset alone (it rolls the transaction back); a write commits first. The
              // session that ran an approved write may carry its changes (SET, USE, locks): closed, not pooled.
              if (!readOnly) await run(c, 'COMMIT');
              reusable = readOnly;
            }
          },
        );
      } finally {
        // A connection with unread rows or an unknown state is closed; the server then rolls back. A
        // reusable one is reset (which also rolls back) before the answer: what a stored function left
        // (a GET_LOCK lock) is gone when the caller has the rows, and the next read reuses the session.
        if (reusable) await resetAndRelease(c);
        else c.destroy();
      }
      return {
        columns,
        rows: collector.rows,
        rowCount:
          !readOnly && affected !== undefined && columns.length === 0 ? affected : collector.rows.length,
        ...(!readOnly ? { rowsAffected: affected ?? returned } : {}),
        executionTime: Math.round((performance.now() - started) * 100) / 100,
        ...(collector.truncated ? { truncated: true } : {}),
      };
    },

    async close() {
      await new Promise<void>((resolve) => pool.end(() => resolve()));
    },
  };
}

/** "Result of repeat() was larger than max_allowed_packet (…) - truncated": the value became NULL. */
const ER_WARN_ALLOWED_PACKET_OVERFLOWED = 1301;

/**
 * Calls `onCount` with the warning count of each EOF packet of a running query (mysql2 reads it from the
 * end of a result set but does not report it for SELECTs).
 */
function countWarnings(q: unknown, onCount: (n: number) => void): void {
  type Packet = { isEOF?: () => boolean; eofWarningCount?: () => number };
  const cmd = q as { execute?: (packet: Packet | null, conn: unknown) => unknown };
  const execute = cmd.execute;
  if (typeof execute !== 'function') return;
  cmd.execute = function (this: unknown, packet: Packet | null, conn: unknown) {
    if (packet?.isEOF?.() && typeof packet.eofWarningCount === 'function') onCount(packet.eofWarningCount());
    return execute.call(this, packet, conn);
  };
}

const SYSTEM_SCHEMAS = `('mysql', 'information_schema', 'performance_schema', 'sys')`;

/** Introspection SQL, scoped to the connection's database (or every non-system schema when none is set). */
export const MYSQL_INTROSPECTION = {
  scope: (database: string) =>
    database ? 'TABLE_SCHEMA = DATABASE()' : `TABLE_SCHEMA NOT IN ${SYSTEM_SCHEMAS}`,
  tables: (scope: string) =>
    `SELECT TABLE_SCHEMA AS s, TABLE_NAME AS t, TABLE_TYPE AS kind, TABLE_ROWS AS estimate, LEFT(TABLE_COMMENT, ${COMMENT_READ_CHARS}) AS comment FROM information_schema.TABLES WHERE ${scope} ORDER BY TABLE_SCHEMA, TABLE_NAME`,
  columns: (scope: string) =>
    `SELECT TABLE_SCHEMA AS s, TABLE_NAME AS t, COLUMN_NAME AS c, COLUMN_TYPE AS type, IS_NULLABLE AS nullable, COLUMN_KEY AS k, LEFT(COLUMN_COMMENT, ${COMMENT_READ_CHARS}) AS comment FROM information_schema.COLUMNS WHERE ${scope} ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION`,
  keys: (scope: string) =>
    `SELECT TABLE_SCHEMA AS s, TABLE_NAME AS t, CONSTRAINT_NAME AS name, COLUMN_NAME AS c, REFERENCED_TABLE_SCHEMA AS rs, REFERENCED_TABLE_NAME AS rt, REFERENCED_COLUMN_NAME AS rc FROM information_schema.KEY_COLUMN_USAGE WHERE ${scope} AND (CONSTRAINT_NAME = 'PRIMARY' OR REFERENCED_TABLE_NAME IS NOT NULL) ORDER BY TABLE_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION`,
};

async function introspect(
  c: Conn,
  run: (c: Conn, sql: string) => Promise<unknown[]>,
  database: string,
): Promise<SchemaSnapshot> {
  const scope = MYSQL_INTROSPECTION.scope(database);
  const display = (s: string, t: string) => (database ? t : `${s}.${t}`);
  const tables = new Map<string, TableInfo>();
  for (const r of (await run(c, MYSQL_INTROSPECTION.tables(scope))) as Record<string, string | null>[]) {
    tables.set(`${r.s}.${r.t}`, {
      name: display(String(r.s), String(r.t)),
      schema: String(r.s),
      kind: String(r.kind).includes('VIEW') ? 'view' : 'table',
      columns: [],
      primaryKey: [],
      foreignKeys: [],
      rowEstimate: r.estimate === null ? null : Number(r.estimate),
      // A view's TABLE_COMMENT is the word VIEW on MySQL and MariaDB, not a comment anyone wrote.
      ...(r.comment && !String(r.kind).includes('VIEW') ? { comment: String(r.comment) } : {}),
    });
  }
  for (const r of (await run(c, MYSQL_INTROSPECTION.columns(scope))) as Record<string, string>[]) {
    tables.get(`${r.s}.${r.t}`)?.columns.push({
      name: r.c,
      type: r.type,
      nullable: r.nullable === 'YES',
      primaryKey: r.k === 'PRI',
      ...(r.comment ? { comment: r.comment } : {}),
    });
  }
  const fks = new Map<string, { table: TableInfo; columns: string[]; ref: string; refColumns: string[] }>();
  for (const r of (await run(c, MYSQL_INTROSPECTION.keys(scope))) as Record<string, string | null>[]) {
    const t = tables.get(`${r.s}.${r.t}`);
    if (!t) continue;
    if (r.name === 'PRIMARY') {
      t.primaryKey.push(String(r.c));
      continue;
    }
    const key = `${r.s}.${r.t}.${r.name}`;
    let fk = fks.get(key);
    if (!fk) {
      fk = { table: t, columns: [], ref: display(String(r.rs), String(r.rt)), refColumns: [] };
      fks.set(key, fk);
    }
    fk.columns.push(String(r.c));
    fk.refColumns.push(String(r.rc));
  }
  for (const fk of fks.values())
    fk.table.foreignKeys.push({
      columns: fk.columns,
      referencedTable: fk.ref,
      referencedColumns: fk.refColumns,
    });
  return boundComments({ tables: [...tables.values()] });
}
