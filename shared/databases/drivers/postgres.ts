/**
 * PostgreSQL adapter (pg). Each read runs as:
 *   BEGIN READ ONLY; SET LOCAL statement_timeout = …; SET LOCAL TimeZone = 'UTC'; SET LOCAL IntervalStyle = 'iso_8601';
 *   set_config('search_path', <the role's path without pg_catalog>, true)   (PIN_SEARCH_PATH: pg_catalog first)
 *   DECLARE loupe_cursor NO SCROLL CURSOR FOR <statement>   (SELECT / VALUES; extended protocol: one statement only)
 *   FETCH n FROM loupe_cursor …                             (until maxRows + 1 rows or the byte cap)
 * The first three are pipelined (sent together, one round trip); later FETCHes follow one at a time.
 *   ROLLBACK                                                (sent before the answer returns; not awaited, see below)
 *   DISCARD ALL                                             (pipelined behind ROLLBACK: the session is reset
 *                                                            before the client is reused; a failed reset discards it)
 * EXPLAIN and SHOW run as one extended-protocol query inside the same transaction.
 * The ROLLBACK that ends a read is written to the socket at once (pg sends it synchronously when the
 * client is idle, which it is after the last FETCH) but the result does not wait for its reply: the client
 * returns to the pool when the reply arrives, or is discarded if ROLLBACK fails. Nothing was written, so
 * the rows are final either way. A frozen Lambda instance holds at most a pending reply; the database
 * has already received ROLLBACK. Writes (readOnly: false) await COMMIT.
 * Values: int8/numeric as strings, date/time as ISO strings (kept at full precision), bytea as base64, json as objects.
 */
import pg from 'pg';
import { checkedSocket } from '../host-policy';
import { RowCollector, rowOf, uniqueColumns } from '../values';
import { boundComments, COMMENT_READ_CHARS } from './comments';
import { dbDeadlines, serverLimitMs, withTimer } from './deadline';
import { ConnectTimeoutError, QueryTimeoutError } from './errors';
import { limitPostgresMessages } from './limits';
import type { ConnectionTarget, Driver, QueryOptions, QueryResult, SchemaSnapshot, TableInfo } from './types';

const { Pool, types } = pg;

/** `2024-01-02 03:04:05.123456+00` (session TimeZone UTC) → `2024-01-02T03:04:05.123456Z`. */
export function isoTimestamp(text: string): string {
  // Hot path (every timestamp cell): `YYYY-MM-DD hh:mm:ss[.ffffff]` followed by `+00` or by no offset,
  // answered with one concatenation; the same result as the general rules below.
  const n = text.length;
  if (n >= 19 && hasDatePrefix(text)) {
    if (text.charCodeAt(n - 3) === 43 && text.charCodeAt(n - 2) === 48 && text.charCodeAt(n - 1) === 48)
      return `${text.slice(0, 10)}T${text.slice(11, n - 3)}Z`;
    if (text.indexOf('+', 11) === -1 && text.indexOf('-', 11) === -1)
      return `${text.slice(0, 10)}T${text.slice(11)}`;
  }
  if (!/^\d{4,}-\d\d-\d\d \d/.test(text)) return text; // infinity, -infinity, BC dates stay as written
  const t = text.replace(' ', 'T');
  return t.replace(/\+00(:00)?$/, 'Z').replace(/([+-]\d\d)$/, '$1:00');
}

const isDigit = (c: number) => c >= 48 && c <= 57;
/** `dddd-dd-dd d`: a four-digit year, the date, a space and the first digit of the time. */
const hasDatePrefix = (t: string) =>
  isDigit(t.charCodeAt(0)) &&
  isDigit(t.charCodeAt(1)) &&
  isDigit(t.charCodeAt(2)) &&
  isDigit(t.charCodeAt(3)) &&
  t.charCodeAt(4) === 45 &&
  isDigit(t.charCodeAt(5)) &&
  isDigit(t.charCodeAt(6)) &&
  t.charCodeAt(7) === 45 &&
  isDigit(t.charCodeAt(8)) &&
  isDigit(t.charCodeAt(9)) &&
  t.charCodeAt(10) === 32 &&
  isDigit(t.charCodeAt(11));

const arrayParser = types.arrayParser as unknown as {
  create(source: string, transform: (s: string) => unknown): { parse(): unknown[] };
};
const parseArray = (transform: (s: string) => unknown) => (value: string) =>
  arrayParser.create(value, transform).parse();
const asText = (s: string) => s;

/** Type parsers for this pool only (the global pg defaults are left alone). */
const overrides: Record<number, (value: string) => unknown> = {
  20: asText, // int8
  1700: asText, // numeric
  1082: asText, // date
  1083: asText, // time
  1266: asText, // timetz
  1114: isoTimestamp, // timestamp
  1184: isoTimestamp, // timestamptz
  1186: asText, // interval (ISO 8601 via IntervalStyle)
  790: asText, // money
  1016: parseArray(asText), // int8[]
  1231: parseArray(asText), // numeric[]
  1182: parseArray(asText), // date[]
  1115: parseArray(isoTimestamp), // timestamp[]
  1185: parseArray(isoTimestamp), // timestamptz[]
  1187: parseArray(asText), // interval[]
};

const typeParsers = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if ((format ?? 'text') === 'text' && overrides[oid]) return overrides[oid];
    return (types.getTypeParser as (o: number, f?: string) => (v: string) => unknown)(oid, format);
  },
};

/**
 * Sent before a client returns to the pool: closes cursors, drops temporary tables and prepared
 * statements, resets every setting and releases every session-level advisory lock (pg_advisory_unlock_all),
 * so nothing a read did (through a function, say) outlives it on the pooled connection.
 */
export const RESET_SESSION = 'DISCARD ALL';

/**
 * Runs `fn`, which issues pipelined queries synchronously, with the client's socket corked: pg writes each
 * message on its own (one system call, and one wake-up of the server, each); corked, they leave in one.
 */
function corked<T>(c: pg.PoolClient, fn: () => T): T {
  const stream = (c as unknown as { connection?: { stream?: { cork?(): void; uncork?(): void } } }).connection
    ?.stream;
  stream?.cork?.();
  try {
    return fn();
  } finally {
    stream?.uncork?.();
  }
}

const CURSOR_PREFIX = 'DECLARE loupe_cursor NO SCROLL CURSOR FOR ';

/**
 * Sent in every read's transaction, before the statement: pg_catalog comes first in the search_path
 * whatever the role or database sets. PostgreSQL searches pg_catalog first unless the path lists it
 * later (`public, pg_catalog`), so every listing of it is removed from the role's path (SET LOCAL,
 * undone by the transaction's end): unqualified names still find the owner's tables and
 * current_schema() is unchanged, but a built-in function, operator or type can never be shadowed by
 * an owner's object of the same signature. The guard's catalog rule resolves names under this same
 * path. The text qualifies every name, applies no operator and needs no backslash, so neither the
 * role's path nor standard_conforming_strings can change what it does.
 */
export const PIN_SEARCH_PATH =
  "SELECT pg_catalog.set_config('search_path', pg_catalog.btrim(pg_catalog.regexp_replace(pg_catalog.current_setting('search_path'), '(^|,)[[:space:]]*(pg_catalog|\"pg_catalog\")[[:space:]]*(?=,|$)', '', 'gi'), ', '), true)";

/** Removes trailing semicolons (and whitespace) so the statement can follow DECLARE … FOR. */
export const withoutTrailingSemicolons = (text: string) => text.replace(/[\s;]+$/, '');

/** Postgres faults after which a session cannot be reused: the server ended it, or the socket failed. */
const isFatal = (e: unknown) => {
  const err = e as { severity?: unknown; code?: unknown; message?: unknown };
  return (
    err?.severity === 'FATAL' ||
    err?.severity === 'PANIC' ||
    (typeof err?.code === 'string' && /^(08|57P)/.test(err.code)) ||
    /Query read timeout|Connection terminated|not queryable|ECONNRESET|EPIPE/i.test(String(err?.message))
  );
};

type Client = pg.PoolClient & { loupeBroken?: Error };

/** How long the statements that close a session (ROLLBACK, DISCARD ALL) may take before it is destroyed. */
const CLEANUP_MS = 2_000;

export function postgresDriver(target: ConnectionTarget): Driver {
  const deadlines = dbDeadlines();
  const pool = new Pool({
    host: target.host,
    port: target.port ?? 5432,
    database: target.database || undefined,
    user: target.username,
    password: target.password,
    ssl: target.sslEnabled ? { rejectUnauthorized: true, servername: target.host } : false,
    // Every new connection resolves the host through the host policy and connects to the checked address.
    stream: () => checkedSocket(),
    max: 3,
    idleTimeoutMillis: 60_000,
    // Connecting, and waiting for a free client when all are busy (pg-pool: "timeout exceeded when trying
    // to connect"): both are connect-stage timeouts (422 CONNECTION_FAILED, TIMEOUT diagnosis).
    connectionTimeoutMillis: deadlines.connectMs,
    application_name: 'loupe',
    types: typeParsers,
    // Queries are written as soon as they are issued (a read's first three go out together, see query).
    pipeline: true,
  } as pg.PoolConfig);
  // An idle client that loses its server must not crash the process; the next checkout reconnects.
  pool.on('error', () => {});
  // pg emits 'error' on a client whose socket fails or whose server ends the session (57P01 on shutdown),
  // checked out or not, and after it was destroyed: without a listener that is an uncaught exception that
  // ends the process. Every client gets one for its whole life; it marks the client broken, so the
  // checkout that holds it destroys it instead of returning it to the pool. One read also holds at most
  // one bounded message: a longer row (a huge value) ends the connection with VALUE_TOO_LARGE before it
  // is buffered (limits.ts).
  pool.on('connect', (client) => {
    const stream = (
      client as unknown as { connection?: { stream?: Parameters<typeof limitPostgresMessages>[0] } }
    ).connection?.stream;
    if (stream) limitPostgresMessages(stream);
    client.on('error', (e) => {
      (client as Client).loupeBroken ??= e;
    });
  });

  /** Ends a client's socket at once (a frozen server would never answer pg's polite Terminate). */
  const destroy = (client: Client) => {
    client.loupeBroken ??= new Error('destroyed');
    (client as unknown as { connection?: { stream?: { destroy?(): void } } }).connection?.stream?.destroy?.();
  };

  /**
   * Runs `fn` on a pooled client. `fn` may hand over the statement that ends its transaction with
   * `releaseAfter` (its last step) instead of awaiting it: the client then returns to the pool when that
   * statement completes, and is discarded if it fails.
   */
  /**
   * `fn` on a pooled client, within `limit`: when it runs out (a frozen server, a black hole) the
   * client's socket is destroyed, `limit.timeout()` is thrown, and the client is discarded.
   */
  async function withClient<T>(
    limit: { deadline: number; timeout: () => Error },
    fn: (c: pg.PoolClient, releaseAfter: (closing: Promise<unknown>) => void) => Promise<T>,
  ): Promise<T> {
    const connectStarted = Date.now();
    const client = (await pool.connect()) as Client;
    let broken: Error | undefined;
    let closing: Promise<unknown> | undefined;
    let reset: Promise<unknown> | undefined;
    // Within the deadline, statements that end a session are bounded too: a session that cannot be closed
    // in time is destroyed.
    const bounded = (p: Promise<unknown>) =>
      withTimer(
        p,
        CLEANUP_MS,
        () => new Error('cleanup timed out'),
        () => destroy(client),
      );
    try {
      if (Date.now() >= limit.deadline) throw new ConnectTimeoutError(Date.now() - connectStarted);
      const work = Promise.resolve().then(() =>
        fn(client, (p) => {
          closing = p;
          // Pipelined behind the statement that closes the transaction (in the same socket write when the
          // caller corks): no extra round trip.
          reset = client.query(RESET_SESSION);
          reset.catch(() => {});
        }),
      );
      return await withTimer(work, limit.deadline - Date.now(), limit.timeout, () => destroy(client));
    } catch (e) {
      broken = e as Error;
      throw e;
    } finally {
      // A client whose session failed (socket error, server shutdown, our timer) is destroyed, not returned
      // to the pool. A client whose transaction could not be closed is discarded too. Every other client is
      // reset before it goes back (DISCARD ALL: advisory locks, settings, temporary tables, prepared
      // statements, LISTEN); one whose reset fails is discarded.
      if (client.loupeBroken || (broken && isFatal(broken))) {
        destroy(client);
        client.release(true);
      } else if (broken) {
        try {
          await bounded(client.query('ROLLBACK'));
          await bounded(client.query(RESET_SESSION));
          client.release();
        } catch {
          client.release(true);
        }
      } else if (closing) {
        bounded(Promise.all([closing, reset])).then(
          () => (client.loupeBroken ? client.release(true) : client.release()),
          () => client.release(true),
        );
      } else {
        try {
          await bounded(client.query(RESET_SESSION));
          if (client.loupeBroken) client.release(true);
          else client.release();
        } catch {
          client.release(true);
        }
      }
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
      const version = await withClient(limit, async (c) => {
        const r = await c.query<{ server_version: string }>('SHOW server_version');
        return r.rows[0]?.server_version;
      });
      return { latencyMs: Math.round((performance.now() - started) * 100) / 100, serverVersion: version };
    },

    async introspect(opts) {
      const ms = opts?.timeoutMs ?? deadlines.statementMs;
      const deadline = Date.now() + ms;
      return withClient({ deadline, timeout: () => new QueryTimeoutError(ms) }, async (c) => {
        await c.query('BEGIN READ ONLY');
        await c.query(`SET LOCAL statement_timeout = ${serverLimitMs(deadline)}; ${PIN_SEARCH_PATH}`);
        const snapshot = await introspect(c);
        await c.query('ROLLBACK');
        return snapshot;
      });
    },

    async query(text: string, opts: QueryOptions): Promise<QueryResult> {
      const started = performance.now();
      const readOnly = opts.readOnly !== false;
      const deadline = Date.now() + opts.timeoutMs;
      const statement = withoutTrailingSemicolons(text);
      const values = opts.params ?? [];
      const limit = { deadline, timeout: () => new QueryTimeoutError(opts.timeoutMs) };
      const result = await withClient(limit, async (c, releaseAfter) => {
        const kind = opts.kind ?? 'select';
        const collector = new RowCollector(opts.maxRows, opts.maxBytes);
        let columns: string[] = [];
        let rowCount: number | undefined;
        // Our own fixed text, one simple-query message (never user SQL).
        const beginText =
          `${readOnly ? 'BEGIN READ ONLY' : 'BEGIN'}; SET LOCAL statement_timeout = ${serverLimitMs(deadline)}; ` +
          `SET LOCAL TimeZone = 'UTC'; SET LOCAL IntervalStyle = 'iso_8601'${readOnly ? `; ${PIN_SEARCH_PATH}` : ''}`;
        if (readOnly && (kind === 'select' || kind === 'values')) {
          const fetch = (want: number) =>
            c.query({
              text: `FETCH ${want} FROM loupe_cursor`,
              rowMode: 'array',
            } as pg.QueryConfig);
          let batch = 50;
          let want = Math.min(batch, opts.maxRows + 1);
          // The pool's clients pipeline: BEGIN, DECLARE (the user's statement, extended protocol with its
          // parameters) and the first FETCH go out together, in one socket write, and are answered in order,
          // in one round trip. Should BEGIN fail, DECLARE fails too (a cursor needs a transaction block):
          // nothing runs outside the read-only transaction. Each reply is awaited in order; the first failure
          // is the one reported.
          const [begin, declare, first] = corked(c, () => [
            c.query(beginText),
            c.query({
              text: CURSOR_PREFIX + statement,
              values,
              queryMode: 'extended',
            } as pg.QueryConfig),
            fetch(want),
          ]);
          let next = first;
          for (const p of [begin, declare, next]) p.catch(() => {}); // each is awaited below, in order
          await begin;
          await declare;
          for (;;) {
            const r = await next;
            if (columns.length === 0) columns = uniqueColumns(r.fields.map((f) => f.name));
            let full = false;
            for (const row of r.rows as unknown[][]) if (!collector.add(rowOf(columns, row))) full = true;
            if (full || r.rows.length < want) break;
            if (Date.now() > deadline) throw new QueryTimeoutError(opts.timeoutMs);
            batch = Math.min(batch * 4, 2000);
            want = Math.min(batch, opts.maxRows + 1 - collector.rows.length);
            next = fetch(want);
          }
        } else {
          await c.query(beginText);
          const r = await c.query({
            text: statement,
            values,
            rowMode: 'array',
            queryMode: 'extended',
          } as pg.QueryConfig);
          columns = uniqueColumns((r.fields ?? []).map((f) => f.name));
          for (const row of (r.rows ?? []) as unknown[][]) if (!collector.add(rowOf(columns, row))) break;
          if (!readOnly) rowCount = r.rowCount ?? 0;
        }
        if (readOnly) corked(c, () => releaseAfter(c.query('ROLLBACK')));
        else {
          await c.query('COMMIT');
          // An approved statement may have changed the session (SET ROLE, set_config, session locks…):
          // the client is closed rather than returned to the pool.
          const discard = Promise.reject(new Error('discard the session after a write'));
          discard.catch(() => {});
          releaseAfter(discard);
        }
        return { columns, collector, rowCount };
      }).catch((e) => {
        throw adjustPosition(
          e,
          readOnly && (opts.kind ?? 'select') !== 'explain' && (opts.kind ?? 'select') !== 'show',
        );
      });
      const { columns, collector } = result;
      return {
        columns,
        rows: collector.rows,
        rowCount:
          columns.length === 0 && result.rowCount !== undefined ? result.rowCount : collector.rows.length,
        ...(result.rowCount !== undefined ? { rowsAffected: result.rowCount } : {}),
        executionTime: Math.round((performance.now() - started) * 100) / 100,
        ...(collector.truncated ? { truncated: true } : {}),
      };
    },

    async close() {
      await pool.end().catch(() => {});
    },
  };
}

/** Error positions refer to the user's text, not to our DECLARE prefix. */
function adjustPosition(e: unknown, cursor: boolean): unknown {
  const err = e as { position?: string };
  if (cursor && err && typeof err.position === 'string') {
    const p = Number(err.position) - CURSOR_PREFIX.length;
    err.position = p >= 1 ? String(p) : undefined;
  }
  return e;
}

const SYSTEM_SCHEMA = `n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%'`;

/** Tables, views and materialized views the login can read, outside system schemas. */
export const PG_INTROSPECTION = {
  columns: `SELECT n.nspname AS schema, c.relname AS name, c.relkind AS kind,
    CASE WHEN c.reltuples < 0 THEN NULL ELSE c.reltuples::bigint END AS estimate,
    a.attname AS column, format_type(a.atttypid, a.atttypmod) AS type, NOT a.attnotnull AS nullable,
    left(d.description, ${COMMENT_READ_CHARS}) AS comment
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
  LEFT JOIN pg_catalog.pg_description d ON d.objoid = c.oid AND d.classoid = 'pg_catalog.pg_class'::regclass AND d.objsubid = a.attnum
  WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition AND ${SYSTEM_SCHEMA}
    AND (has_table_privilege(c.oid, 'SELECT') OR has_any_column_privilege(c.oid, 'SELECT'))
  ORDER BY n.nspname, c.relname, a.attnum`,
  constraints: `SELECT n.nspname AS schema, c.relname AS name, k.contype AS type,
    ARRAY(SELECT a.attname FROM unnest(k.conkey) WITH ORDINALITY u(n, i) JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.n ORDER BY u.i)::text[] AS columns,
    rn.nspname AS ref_schema, rc.relname AS ref_name,
    ARRAY(SELECT a.attname FROM unnest(k.confkey) WITH ORDINALITY u(n, i) JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.n ORDER BY u.i)::text[] AS ref_columns
  FROM pg_constraint k
  JOIN pg_class c ON c.oid = k.conrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_class rc ON rc.oid = k.confrelid
  LEFT JOIN pg_namespace rn ON rn.oid = rc.relnamespace
  WHERE k.contype IN ('p', 'f') AND ${SYSTEM_SCHEMA}
  ORDER BY n.nspname, c.relname, k.conname`,
  /** Comments on tables and views (COMMENT ON TABLE / VIEW …; what obj_description reads), clipped. */
  tableComments: `SELECT n.nspname AS schema, c.relname AS name, left(d.description, ${COMMENT_READ_CHARS}) AS comment
  FROM pg_catalog.pg_description d
  JOIN pg_class c ON c.oid = d.objoid
  JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE d.classoid = 'pg_catalog.pg_class'::regclass AND d.objsubid = 0
    AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND ${SYSTEM_SCHEMA}`,
};

async function introspect(c: pg.PoolClient): Promise<SchemaSnapshot> {
  const current =
    (await c.query<{ s: string | null }>('SELECT current_schema() AS s')).rows[0]?.s ?? 'public';
  const display = (schema: string, name: string) => (schema === current ? name : `${schema}.${name}`);
  const tables = new Map<string, TableInfo>();
  const cols = await c.query(PG_INTROSPECTION.columns);
  for (const r of cols.rows) {
    const key = `${r.schema}.${r.name}`;
    let t = tables.get(key);
    if (!t) {
      t = {
        name: display(r.schema, r.name),
        schema: r.schema,
        kind: r.kind === 'v' || r.kind === 'm' ? 'view' : 'table',
        columns: [],
        primaryKey: [],
        foreignKeys: [],
        rowEstimate: r.estimate === null ? null : Number(r.estimate),
      };
      tables.set(key, t);
    }
    t.columns.push({
      name: r.column,
      type: r.type,
      nullable: r.nullable,
      primaryKey: false,
      ...(r.comment ? { comment: r.comment } : {}),
    });
  }
  for (const r of (await c.query(PG_INTROSPECTION.tableComments)).rows) {
    const t = tables.get(`${r.schema}.${r.name}`);
    if (t && r.comment) t.comment = r.comment;
  }
  const cons = await c.query(PG_INTROSPECTION.constraints);
  for (const r of cons.rows) {
    const t = tables.get(`${r.schema}.${r.name}`);
    if (!t) continue;
    if (r.type === 'p') {
      t.primaryKey = r.columns;
      for (const col of t.columns) if (r.columns.includes(col.name)) col.primaryKey = true;
    } else {
      t.foreignKeys.push({
        columns: r.columns,
        referencedTable: display(r.ref_schema, r.ref_name),
        referencedColumns: r.ref_columns,
      });
    }
  }
  return boundComments({ tables: [...tables.values()] });
}
