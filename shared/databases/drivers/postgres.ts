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
 * Past a read's deadline (the server could not end it: frozen, black-holed, or compiling its plan with
 * LLVM, which checks for no interrupt) the answer is given at once and the socket destroyed; then, in the
 * background and bounded, the backend is cancelled and, still there after a grace, terminated, from
 * another session of the same role, and the client dropped from the pool (endBackend; "Past the
 * deadline" in docs/internals/database-sessions.md).
 *
 * Writes (readOnly: false, approved statements) await COMMIT, and their session is closed, not pooled.
 * Values: int8/numeric as strings, date/time as ISO strings (kept at full precision), bytea as base64, json as objects.
 */
import pg from 'pg';
import { logger } from '../../platform/logger';
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
 * The reset after an open-mode read (opts.lightReset): owner code may have run, but only inside a
 * read-only transaction that ended with ROLLBACK, which already undid every setting, dropped the
 * cursors it declared (a holdable cursor survives only a COMMIT), its LISTENs and NOTIFYs, and could not
 * create a temporary table. What a rolled-back read can still leave on the session is a session-level
 * advisory lock and a prepared statement: this releases and drops them, in one message that the
 * answer does not wait for (docs/internals/read-modes.md), with JIT off (our own text).
 */
export const LIGHT_RESET =
  'BEGIN; SET LOCAL jit = off; SELECT pg_catalog.pg_advisory_unlock_all(); DEALLOCATE ALL; COMMIT';

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

/**
 * The first message of a transaction: BEGIN (READ ONLY for a read) and the statement timeout; for a read
 * also `standard_conforming_strings` on (the guard reads strings as the server does with it on: a role
 * or database that turns it off cannot make the server read the statement differently) and the pinned
 * search_path and the pre-check, all with JIT off (our own text must never be compiled by LLVM: a
 * compile can take seconds and ignores cancellation), then JIT restored to the database's own setting
 * for the user's statement (`SET LOCAL jit TO DEFAULT`: the value the session would have without it,
 * role and database settings included). Loupe's own reads (`ownQuery`) keep JIT off throughout.
 */
export function beginText(
  readOnly: boolean,
  timeoutMs: number,
  preCheck: string | undefined,
  ownQuery: boolean,
): string {
  const parts = [readOnly ? 'BEGIN READ ONLY' : 'BEGIN', `SET LOCAL statement_timeout = ${timeoutMs}`];
  if (!readOnly) return parts.join('; ');
  // JIT off before anything of ours (on a role with jit_above_cost 0 even the pin would be compiled).
  parts.push('SET LOCAL standard_conforming_strings = on', JIT_OFF, PIN_SEARCH_PATH);
  if (preCheck) parts.push(preCheck);
  if (!ownQuery) parts.push('SET LOCAL jit TO DEFAULT');
  return parts.join('; ');
}

/** JIT off for the rest of the transaction (the setting exists on every supported server, with or without LLVM). */
export const JIT_OFF = 'SET LOCAL jit = off';

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

/** Past a deadline: how long a cancelled backend has to end before it is terminated. */
export const BACKEND_GRACE_MS = 1_000;
/** Past a deadline: the most each statement that signals the backend may take. */
const BACKEND_STEP_MS = 2_000;

/**
 * Cancels the backend `$1` when it is still there (one of the role's own: pg_stat_activity shows a
 * role its own sessions), answering its start time, which names it with its pid. Our own text, qualified.
 */
const CANCEL_BACKEND =
  'SELECT pg_catalog.pg_cancel_backend(a.pid) AS cancelled, a.backend_start::pg_catalog.text AS started FROM pg_catalog.pg_stat_activity a WHERE a.pid = $1';
/** Terminates the backend `$1` when it is still there and is the one that started at `$2`. */
const TERMINATE_BACKEND =
  'SELECT pg_catalog.pg_terminate_backend(a.pid) AS terminated FROM pg_catalog.pg_stat_activity a WHERE a.pid = $1 AND a.backend_start::pg_catalog.text = $2';

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

  /** Set once the role was refused the right to signal its own backends (42501): logged once per driver. */
  let signalRefused = false;
  /** The short-lived session the cleanups in progress share (signallingSession), while one is open. */
  let shortLived: { client: pg.Client; users: number; broken: boolean; ready: Promise<unknown> } | undefined;

  /**
   * A session to signal a backend from (docs/internals/database-sessions.md, "Past the deadline"): an idle
   * pooled one when there is one, else a short-lived one opened like the pool's (same credentials, TLS, the
   * host policy's checked socket and the bounded connect timeout). `done(broken)` gives it back.
   */
  async function signallingSession(): Promise<{
    client: pg.ClientBase;
    pooled: boolean;
    done(broken?: boolean): void;
  }> {
    if (pool.idleCount > 0 && !pool.ending) {
      // pg-pool hands out an idle client at once; bounded all the same (it may queue behind a waiter).
      const got = pool.connect() as Promise<Client>;
      const client = await withTimer(
        got,
        deadlines.connectMs,
        () => new ConnectTimeoutError(deadlines.connectMs),
        () =>
          void got.then(
            (c) => c.release(),
            () => {},
          ),
      ).catch(() => undefined);
      if (client && !client.loupeBroken)
        return {
          client,
          pooled: true,
          done: (broken) => {
            if (broken) destroy(client);
            client.release(client.loupeBroken ? true : undefined);
          },
        };
      client?.release(true);
    }
    // One short-lived session, shared by the cleanups that run at once (a pg client runs its queries in
    // turn; each statement is a few ms), so many reads timing out together open one more session, not many.
    let s = shortLived;
    if (!s || s.broken) {
      const options = (pool as unknown as { options: pg.ClientConfig }).options;
      // The pool's own options (host, TLS, checked socket, connect timeout); pg-pool keeps the password
      // out of their enumerable keys.
      const client = new pg.Client({
        ...options,
        password: target.password,
        application_name: 'loupe-cleanup',
      } as pg.ClientConfig);
      client.on('error', () => {});
      // pg's connectionTimeoutMillis (the pool's connect timeout) bounds the connect and ends the socket.
      s = { client, users: 0, broken: false, ready: client.connect() };
      shortLived = s;
    }
    const session = s;
    session.users++;
    const leave = (broken: boolean) => {
      session.users--;
      if (broken) session.broken = true;
      if (session.users > 0 && !session.broken) return;
      if (shortLived === session) shortLived = undefined;
      if (session.users > 0) return; // the last user of a broken one ends it
      const socket = (session.client as unknown as { connection?: { stream?: { destroy?(): void } } })
        .connection?.stream;
      session.client.end().catch(() => {});
      // A polite end the server does not answer is not waited for.
      setTimeout(() => socket?.destroy?.(), CLEANUP_MS).unref();
    };
    try {
      await session.ready;
    } catch (e) {
      leave(true);
      throw e;
    }
    return { client: session.client, pooled: false, done: (broken) => leave(broken === true) };
  }

  /**
   * Past a deadline: the backend `pid` is cancelled (pg_cancel_backend), then, when it is still there after
   * BACKEND_GRACE_MS, terminated (pg_terminate_backend), from another session of the same role. Each step
   * is bounded (the connect timeout, BACKEND_STEP_MS per statement); nothing waits for the backend to obey
   * (a JIT compile checks for no interrupt: it ends, and then its backend, when the compile is over). The
   * backend is named by pid and start time, so a pid the server gave again to a new session is left alone.
   * Never throws.
   */
  async function endBackend(pid: number): Promise<void> {
    let session: Awaited<ReturnType<typeof signallingSession>> | undefined;
    let broken = false;
    const step = <T>(p: Promise<T>) =>
      withTimer(
        p,
        BACKEND_STEP_MS,
        () => new Error('signalling the backend timed out'),
        () => {
          broken = true;
        },
      );
    try {
      session = await signallingSession();
      const cancelled = await step(session.client.query<{ started: string }>(CANCEL_BACKEND, [pid]));
      const started = cancelled.rows[0]?.started;
      if (started === undefined) return; // already gone
      // A pooled session goes back to the pool for the grace; a short-lived one is kept for the next step.
      if (session.pooled) {
        session.done();
        session = undefined;
      }
      await new Promise((r) => setTimeout(r, BACKEND_GRACE_MS));
      session ??= await signallingSession();
      await step(session.client.query(TERMINATE_BACKEND, [pid, started]));
    } catch (e) {
      if ((e as { code?: unknown })?.code === '42501' && !signalRefused) {
        signalRefused = true;
        logger().warn(
          "The database role may not signal its own backends (42501): a read past its deadline is not cancelled or terminated by Loupe; the server's statement_timeout still ends it (after a JIT compile, when the compile ends).",
          { connectionId: target.id },
        );
      }
    } finally {
      session?.done(broken);
    }
  }

  /**
   * Releases a client whose read ran past its deadline (its socket already destroyed, the answer already
   * given): its backend is ended first (endBackend), then the client is dropped from the pool. Until then
   * it holds its place in the pool, so a database still busy with it is not given a replacement at once.
   */
  const dropPastDeadline = (client: Client) => {
    // The backend's pid, from its BackendKeyData (pg sets it when the session opens).
    const pid = (client as unknown as { processID?: number | null }).processID;
    const ended = typeof pid === 'number' && pid > 0 ? endBackend(pid) : Promise.resolve();
    // Dropped when the steps are done, and at the latest when they could have been done (each is bounded).
    const most = 2 * deadlines.connectMs + BACKEND_GRACE_MS + 2 * BACKEND_STEP_MS;
    void withTimer(
      ended,
      most,
      () => new Error('backend cleanup took too long'),
      () => {},
    )
      .catch(() => {})
      .finally(() => client.release(true));
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
    limit: { deadline: number; timeout: () => Error; endBackend?: boolean },
    reset: boolean,
    fn: (c: Client) => Promise<{ value: T; closing?: Promise<unknown> }>,
  ): Promise<T> {
    const connectStarted = Date.now();
    const client = (await pool.connect()) as Client;
    let out: { value: T; closing?: Promise<unknown> };
    let timedOut = false;
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
      out = await withTimer(work, limit.deadline - Date.now(), limit.timeout, () => {
        timedOut = true;
        destroy(client);
      });
    } catch (e) {
      // Past the deadline: answered now; the backend is cancelled, then terminated, and the client dropped
      // from the pool, in the background (dropPastDeadline). An approved write's is only destroyed.
      if (timedOut && limit.endBackend !== false) {
        dropPastDeadline(client);
        throw e;
      }
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
      // Closing statements of a session already broken (e.g. ended at the byte cap) fail with it: unawaited.
      out.closing?.catch(() => {});
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
      // Catalog reads of our own text: built-in code only, nothing outlives the ROLLBACK. JIT off: on a large
      // catalog their plans cost past jit_above_cost, and a compile takes seconds and ignores cancellation.
      return withClient({ deadline, timeout: () => new QueryTimeoutError(ms) }, false, async (c) => {
        await c.query(
          `BEGIN READ ONLY; SET LOCAL statement_timeout = ${serverLimitMs(deadline)}; ${JIT_OFF}; ${PIN_SEARCH_PATH}`,
        );
        const snapshot = await introspect(c, opts?.maxColumns);
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
      // Past the deadline a read's backend is ended too (cancel, terminate); an approved write's is not.
      const limit = { deadline, timeout: () => new QueryTimeoutError(opts.timeoutMs), endBackend: readOnly };
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
        const begin = beginText(readOnly, serverLimitMs(deadline), preCheck?.sql, opts.ownQuery === true);
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
          if (readOnly && reset && opts.lightReset) closing.push(c.query(LIGHT_RESET));
          else if (readOnly && reset) closing.push(c.query(RESET_SESSION), c.query(SESSION_SETUP));
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
            // The check's row: the last result, or the one before a statement that restores JIT.
            const results = Array.isArray(opened) ? opened : [opened];
            const checked = results.findLast((r) => (r as { command?: string })?.command === 'SELECT');
            preCheck.onRow((checked?.rows?.[0] ?? {}) as Record<string, unknown>);
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

/**
 * Bounds of one schema sync, so that its memory is bounded whatever the catalog (docs/internals/read-modes.md):
 * at most this many columns (the tables past them are left out, the last one whole or not at all) and
 * foreign and primary keys. A column row is under 1.5 KB in the service (names, type, a comment of at
 * most 1,000 characters read), so the columns' result is at most about 75 MB and usually a few MB.
 */
export const MAX_SCHEMA_COLUMNS = 50_000;
export const MAX_SCHEMA_CONSTRAINTS = 50_000;

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
  ORDER BY n.nspname, c.relname, a.attnum
  LIMIT $1`,
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
  ORDER BY n.nspname, c.relname, k.conname
  LIMIT ${MAX_SCHEMA_CONSTRAINTS}`,
  /** Comments on tables and views (COMMENT ON TABLE / VIEW …; what obj_description reads), clipped. */
  tableComments: `SELECT n.nspname AS schema, c.relname AS name, left(d.description, ${COMMENT_READ_CHARS}) AS comment
  FROM pg_catalog.pg_description d
  JOIN pg_class c ON c.oid = d.objoid
  JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE d.classoid = 'pg_catalog.pg_class'::regclass AND d.objsubid = 0
    AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND ${SYSTEM_SCHEMA}`,
};

async function introspect(c: pg.PoolClient, maxColumns = MAX_SCHEMA_COLUMNS): Promise<SchemaSnapshot> {
  const current =
    (await c.query<{ s: string | null }>('SELECT current_schema() AS s')).rows[0]?.s ?? 'public';
  const display = (schema: string, name: string) => (schema === current ? name : `${schema}.${name}`);
  const tables = new Map<string, TableInfo>();
  const cols = await c.query(PG_INTROSPECTION.columns, [maxColumns + 1]);
  // Past the bound: the last table (whose columns may be cut) is left out, and so are those after it.
  const cut = cols.rows.length > maxColumns;
  const kept = cut ? cols.rows.slice(0, maxColumns) : cols.rows;
  if (cut) {
    const last = kept[kept.length - 1];
    while (
      kept.length &&
      kept[kept.length - 1].schema === last.schema &&
      kept[kept.length - 1].name === last.name
    )
      kept.pop();
    logger().warn(
      'schema sync: the catalog has more columns than one sync reads; the tables past them are left out',
      {
        columnsRead: kept.length,
        bound: maxColumns,
      },
    );
  }
  for (const r of kept) {
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
