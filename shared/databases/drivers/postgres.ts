/**
 * PostgreSQL adapter (pg). A read is one transaction, sent in one socket write and answered in order:
 *   BEGIN READ ONLY; SET LOCAL statement_timeout = …;         (one simple-query message, our own text)
 *     set_config('search_path', <the role's path without pg_catalog>, true)   (PIN_SEARCH_PATH: pg_catalog first)
 *     [the guard's catalog check]                              (opts.preCheck: fails, and the statement
 *                                                               never runs, when the catalog changed)
 *   DECLARE loupe_cursor NO SCROLL CURSOR FOR <statement>      (SELECT / VALUES; extended protocol: one
 *                                                               statement only, parameters bound)
 *   FETCH <maxRows + 1> FROM loupe_cursor; ROLLBACK            (rows streamed as they arrive, see below)
 *   DISCARD ALL; <session settings>                            (only when the read may have left session
 *                                                               state: it may run code an admin allowed)
 * EXPLAIN and SHOW run as one extended-protocol statement between the same BEGIN and ROLLBACK.
 *
 * Session settings (TimeZone UTC, IntervalStyle ISO 8601; SESSION_SETTINGS) are sent once per connection,
 * right after it opens, and again after each DISCARD ALL (which resets them). A read cannot change them
 * for the reads that follow: it is a transaction that ends with ROLLBACK, and PostgreSQL undoes every SET
 * and set_config made inside a transaction that rolls back. What outlives a ROLLBACK (session advisory
 * locks, prepared statements, holdable cursors, dblink connections…) can only be made by code the guard
 * does not admit unless an admin allowed it by name; a read of a connection that allows functions is
 * followed by DISCARD ALL and the settings (docs/internals/database-sessions.md).
 *
 * Memory: rows are handed to the row collector one by one as pg parses them, never kept in a batch.
 * Once the result is full (row or byte cap), the DataRows still arriving are dropped unparsed by the
 * stream watcher (limits.ts), and when more than another byte cap's worth would follow, the connection is
 * closed instead (the server stops at its next write). One read therefore holds its capped result plus at
 * most one row in flight, and one row is at most MESSAGE_LIMIT_BYTES on the wire (8 MiB + 64 KiB).
 *
 * Writes (readOnly: false, approved statements) await COMMIT, and their session is closed, not pooled.
 * Values: int8/numeric as strings, date/time as ISO strings (kept at full precision), bytea as base64, json as objects.
 */
import pg from 'pg';
import { checkedSocket } from '../host-policy';
import { RowCollector, rowOf, uniqueColumns } from '../values';
import { boundComments, COMMENT_READ_CHARS } from './comments';
import { dbDeadlines, dbPoolSize, serverLimitMs, withTimer } from './deadline';
import { ConnectTimeoutError, QueryTimeoutError } from './errors';
import { limitPostgresMessages, type PostgresMessageWatch } from './limits';
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
 * Sent, when a read may have left session state, before its client returns to the pool: closes cursors,
 * drops temporary tables and prepared statements, resets every setting and releases every session-level
 * advisory lock (pg_advisory_unlock_all), so nothing such a read did outlives it on the pooled connection.
 */
export const RESET_SESSION = 'DISCARD ALL';

/**
 * Settings every pooled session has, set once per connection (after it opens, and after each DISCARD
 * ALL, which resets them). A read cannot change them for later reads: it ends with ROLLBACK, which undoes
 * every SET and set_config of its transaction. Sent as one simple-query message, so each entry is one
 * statement of our own text (a setting that depends on the role, such as a pinned search_path, can be
 * computed by the server: `SELECT pg_catalog.set_config('search_path', …, false)`).
 */
export const SESSION_SETTINGS: readonly string[] = ["SET TimeZone = 'UTC'", "SET IntervalStyle = 'iso_8601'"];
const SESSION_SETUP = SESSION_SETTINGS.join('; ');

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

type Client = pg.PoolClient & {
  loupeBroken?: Error;
  /** The stream watcher of this connection (limits.ts). */
  loupeWatch?: PostgresMessageWatch;
  /** The session settings sent when the connection opened; awaited by its first checkout. */
  loupeSetup?: Promise<unknown>;
};

/** How long the statements that close a session (ROLLBACK, DISCARD ALL) may take before it is destroyed. */
const CLEANUP_MS = 2_000;

type Field = { name: string };
type StreamedEnd = { fields: Field[]; rowCount: number | null };

/**
 * Sends one query whose rows go to `onRow` as pg parses them (a pg Query with a row listener and no
 * callback keeps none of them); resolves at its ReadyForQuery with the first statement's fields and
 * row count. A Query (not a custom submittable) is what pg allows on a pipelined client.
 */
function streamed(
  c: pg.PoolClient,
  config: { text: string; values?: unknown[]; queryMode?: 'extended' },
  onRow: (row: unknown[], fields: Field[]) => void,
): Promise<StreamedEnd> {
  const q = new pg.Query({ ...config, rowMode: 'array' } as pg.QueryConfig) as unknown as NodeJS.EventEmitter;
  const done = new Promise<StreamedEnd>((resolve, reject) => {
    q.on('row', (row: unknown[], result: { fields: Field[] }) => onRow(row, result.fields));
    q.on('end', (results: StreamedEnd | StreamedEnd[]) => {
      const first = Array.isArray(results) ? results[0] : results;
      resolve({ fields: first?.fields ?? [], rowCount: first?.rowCount ?? null });
    });
    q.on('error', reject);
  });
  c.query(q as unknown as pg.QueryConfig);
  return done;
}

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
    // Connections per database in this process (LOUPE_DB_POOL_SIZE, default 20), opened as reads need them.
    max: dbPoolSize(),
    idleTimeoutMillis: 60_000,
    // Connecting, and waiting for a free client when all are busy (pg-pool: "timeout exceeded when trying
    // to connect"): both are connect-stage timeouts (422 CONNECTION_FAILED, TIMEOUT diagnosis).
    connectionTimeoutMillis: deadlines.connectMs,
    application_name: 'loupe',
    types: typeParsers,
    // Queries are written as soon as they are issued (a read's statements go out together, see query).
    pipeline: true,
  } as pg.PoolConfig);
  // An idle client that loses its server must not crash the process; the next checkout reconnects.
  pool.on('error', () => {});
  // pg emits 'error' on a client whose socket fails or whose server ends the session (57P01 on shutdown),
  // checked out or not, and after it was destroyed: without a listener that is an uncaught exception that
  // ends the process. Every client gets one for its whole life; it marks the client broken, so the
  // checkout that holds it destroys it instead of returning it to the pool. One read also holds at most
  // one bounded message: a longer row (a huge value) ends the connection with VALUE_TOO_LARGE before it
  // is buffered (limits.ts). The session settings go out at once, ahead of the first read.
  pool.on('connect', (client) => {
    const c = client as Client;
    const stream = (
      client as unknown as { connection?: { stream?: Parameters<typeof limitPostgresMessages>[0] } }
    ).connection?.stream;
    if (stream) c.loupeWatch = limitPostgresMessages(stream);
    client.on('error', (e) => {
      c.loupeBroken ??= e;
    });
    c.loupeSetup = client.query(SESSION_SETUP);
    c.loupeSetup.catch((e) => {
      c.loupeBroken ??= e as Error;
    });
  });

  /** Ends a client's socket at once (a frozen server would never answer pg's polite Terminate). */
  const destroy = (client: Client) => {
    client.loupeBroken ??= new Error('destroyed');
    (client as unknown as { connection?: { stream?: { destroy?(): void } } }).connection?.stream?.destroy?.();
  };

  /** Statements that close a session, within CLEANUP_MS; past it the session is destroyed. */
  const bounded = (client: Client, p: Promise<unknown>) =>
    withTimer(
      p,
      CLEANUP_MS,
      () => new Error('cleanup timed out'),
      () => destroy(client),
    );

  /** ROLLBACK, and the reset with the session settings when `reset`: the statements that end a session. */
  const closeSession = (client: Client, reset: boolean) => {
    const all = [client.query('ROLLBACK')];
    if (reset) all.push(client.query(RESET_SESSION), client.query(SESSION_SETUP));
    for (const p of all) p.catch(() => {});
    return Promise.all(all);
  };

  /**
   * `fn` on a pooled client, within `limit`: when it runs out (a frozen server, a black hole) the client's
   * socket is destroyed, `limit.timeout()` is thrown, and the client is discarded. `fn` answers with its
   * value and `closing`, the statements it pipelined to end the session: the value is returned at once
   * and the client goes back to the pool when `closing` succeeds (destroyed when it fails or is slow).
   * When `fn` fails, the session is closed here (ROLLBACK, and the reset when `reset`), or destroyed.
   */
  async function withClient<T>(
    limit: { deadline: number; timeout: () => Error },
    reset: boolean,
    fn: (c: Client) => Promise<{ value: T; closing?: Promise<unknown> }>,
  ): Promise<T> {
    const connectStarted = Date.now();
    const client = (await pool.connect()) as Client;
    let out: { value: T; closing?: Promise<unknown> };
    try {
      if (Date.now() >= limit.deadline) throw new ConnectTimeoutError(Date.now() - connectStarted);
      const work = Promise.resolve().then(async () => {
        const setup = client.loupeSetup;
        const run = fn(client);
        if (setup) {
          // Answered before anything the read sent (one pipeline, in order).
          client.loupeSetup = undefined;
          run.catch(() => {});
          await setup;
        }
        return run;
      });
      out = await withTimer(work, limit.deadline - Date.now(), limit.timeout, () => destroy(client));
    } catch (e) {
      // A client whose session failed (socket error, server shutdown, our timer) is destroyed, not returned
      // to the pool. Any other is closed (ROLLBACK, and DISCARD ALL with the settings when the read may have
      // left state) and returned; one that cannot be closed is discarded.
      if (client.loupeBroken || isFatal(e)) {
        destroy(client);
        client.release(true);
      } else
        bounded(client, closeSession(client, reset)).then(
          () => (client.loupeBroken ? client.release(true) : client.release()),
          () => client.release(true),
        );
      throw e;
    }
    if (!out.closing || client.loupeBroken) {
      if (client.loupeBroken) destroy(client);
      client.release(client.loupeBroken ? true : undefined);
    } else
      bounded(client, out.closing).then(
        () => (client.loupeBroken ? client.release(true) : client.release()),
        () => client.release(true),
      );
    return out.value;
  }

  return {
    async ping() {
      const started = performance.now();
      const ms = deadlines.testMs;
      const limit = {
        deadline: Date.now() + ms,
        timeout: () => new ConnectTimeoutError(ms, 'answering the connection test'),
      };
      // SHOW outside a transaction changes nothing: the client goes back as it came.
      const version = await withClient(limit, false, async (c) => {
        const r = await c.query<{ server_version: string }>('SHOW server_version');
        return { value: r.rows[0]?.server_version };
      });
      return { latencyMs: Math.round((performance.now() - started) * 100) / 100, serverVersion: version };
    },

    async introspect(opts) {
      const ms = opts?.timeoutMs ?? deadlines.statementMs;
      const deadline = Date.now() + ms;
      // Catalog reads of our own text: built-in code only, nothing outlives the ROLLBACK.
      return withClient({ deadline, timeout: () => new QueryTimeoutError(ms) }, false, async (c) => {
        await c.query(
          `BEGIN READ ONLY; SET LOCAL statement_timeout = ${serverLimitMs(deadline)}; ${PIN_SEARCH_PATH}`,
        );
        const snapshot = await introspect(c);
        return { value: snapshot, closing: c.query('ROLLBACK') };
      });
    },

    async query(text: string, opts: QueryOptions): Promise<QueryResult> {
      const started = performance.now();
      const readOnly = opts.readOnly !== false;
      const kind = opts.kind ?? 'select';
      const cursor = readOnly && (kind === 'select' || kind === 'values');
      // A read is followed by the reset only when it may have left session state (see the file's head); a
      // write's session is closed after COMMIT, or reset when the write fails.
      const reset = !readOnly || opts.leavesNoSessionState !== true;
      const deadline = Date.now() + opts.timeoutMs;
      const statement = withoutTrailingSemicolons(text);
      const values = opts.params ?? [];
      const limit = { deadline, timeout: () => new QueryTimeoutError(opts.timeoutMs) };
      const collector = new RowCollector(opts.maxRows, opts.maxBytes);
      let columns: string[] | undefined;
      let end: StreamedEnd | undefined;
      await withClient(limit, reset, async (c) => {
        // Set when the result is full and more rows than a byte cap were still coming: the connection was
        // ended on purpose, the rows collected are the answer.
        let cut = false;
        const onRow = (row: unknown[], fields: Field[]) => {
          if (collector.truncated) return; // a row parsed in the same chunk as the one that filled the result
          columns ??= uniqueColumns(fields.map((f) => f.name));
          if (collector.add(rowOf(columns, row))) return;
          // Full: the rows still coming are dropped unparsed; a read stops the server when more than
          // another byte cap's worth would follow (a write runs to its end so that it can commit).
          c.loupeWatch?.dropRows(readOnly ? opts.maxBytes : Number.POSITIVE_INFINITY, () => {
            cut = true;
            destroy(c);
          });
        };
        const preCheck = readOnly ? opts.preCheck : undefined;
        const begin = `${readOnly ? 'BEGIN READ ONLY' : 'BEGIN'}; SET LOCAL statement_timeout = ${serverLimitMs(deadline)}${readOnly ? `; ${PIN_SEARCH_PATH}` : ''}${preCheck ? `; ${preCheck.sql}` : ''}`;
        // Our own fixed text in simple-query messages; the user's statement only ever in an extended-protocol
        // Parse (one statement, parameters bound). Should BEGIN fail, the statement fails too (a cursor
        // needs a transaction block): nothing runs outside the read-only transaction. Each reply is awaited
        // in order; the first failure is the one reported.
        const sent = corked(c, () => {
          const first = c.query(begin);
          const main = cursor
            ? [
                c.query({ text: CURSOR_PREFIX + statement, values, queryMode: 'extended' } as pg.QueryConfig),
                streamed(c, { text: `FETCH ${opts.maxRows + 1} FROM loupe_cursor; ROLLBACK` }, onRow),
              ]
            : [streamed(c, { text: statement, values, queryMode: 'extended' }, onRow)];
          const closing: Promise<unknown>[] = [];
          if (readOnly && !cursor) closing.push(c.query('ROLLBACK'));
          if (readOnly && reset) closing.push(c.query(RESET_SESSION), c.query(SESSION_SETUP));
          return { first, main, closing };
        });
        for (const p of [sent.first, ...sent.main, ...sent.closing]) p.catch(() => {});
        try {
          const opened = await sent.first.catch((e: unknown) => {
            // The first message is our own text: its failure is ours (the catalog check's), not the statement's.
            if (preCheck && e && typeof e === 'object') (e as { inPreCheck?: boolean }).inPreCheck = true;
            throw e;
          });
          if (preCheck) {
            const results = Array.isArray(opened) ? opened : [opened];
            preCheck.onRow((results[results.length - 1]?.rows?.[0] ?? {}) as Record<string, unknown>);
          }
          for (let k = 0; k < sent.main.length - 1; k++) await sent.main[k];
          end = (await sent.main[sent.main.length - 1]) as StreamedEnd;
        } catch (e) {
          if (!cut) throw e;
        }
        if (readOnly)
          return { value: undefined, closing: sent.closing.length ? Promise.all(sent.closing) : undefined };
        await c.query('COMMIT');
        // An approved statement may have changed the session (SET ROLE, set_config, session locks…): the
        // client is closed rather than returned to the pool.
        destroy(c);
        return { value: undefined };
      }).catch((e) => {
        throw adjustPosition(e, cursor);
      });
      const names = columns ?? uniqueColumns((end?.fields ?? []).map((f) => f.name));
      const rowCount = !readOnly ? (end?.rowCount ?? undefined) : undefined;
      return {
        columns: names,
        rows: collector.rows,
        rowCount: names.length === 0 && rowCount !== undefined ? rowCount : collector.rows.length,
        ...(rowCount !== undefined ? { rowsAffected: rowCount } : {}),
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
