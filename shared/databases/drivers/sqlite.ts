/**
 * SQLite adapter (node:sqlite). `database` is a file in the organization's folder (local mode) or an
 * object under the organization's S3 prefix (sqlite-source.ts), copied to the function's temporary
 * disk (cached by ETag, re-checked at most once a minute).
 *
 * node:sqlite is synchronous and has no interrupt or progress handler, so statements run in a child
 * process that owns the open database: a statement past its time budget is stopped by killing that
 * process (SIGKILL; terminating a worker thread cannot interrupt SQLite's native loop, the thread kept
 * a core busy), and a new one starts on the next call. Double-quoted string literals are enabled. Reads open the file read-only (`readOnly: true`), set `PRAGMA query_only`, and install
 * an authorizer that allows only reading tables, calling functions outside a denylist, recursive
 * CTEs and read-only pragmas: a write that slipped past the guard fails in SQLite itself. Approved
 * writes (`readOnly: false`) open the file for writing (never creating it) and run as BEGIN IMMEDIATE,
 * the statement to its end, COMMIT (ROLLBACK on any failure; a child killed at the timeout takes its
 * lock with it and leaves a journal that the next open rolls back), with an authorizer that refuses
 * ATTACH/DETACH, transaction control, denied functions and setting pragmas.
 * Integers come back as numbers when they fit a double exactly, otherwise as strings; BLOBs as base64.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppError } from '../../platform/errors';
import { realSqlitePath, sqliteSource } from '../sqlite-source';
import { RowCollector, rowOf, uniqueColumns } from '../values';
import { dbDeadlines } from './deadline';
import { QueryTimeoutError } from './errors';
import { memoryLimit, VALUE_LIMIT_BYTES, valueTooLarge } from './limits';
import type { ConnectionTarget, Driver, QueryOptions, QueryResult, SchemaSnapshot } from './types';

/** Runs in the child process (CommonJS, no imports but Node built-ins; messages over the IPC channel). */
const CHILD_SOURCE = String.raw`
const { DatabaseSync, constants: C } = require('node:sqlite');
const LIMITS = JSON.parse(process.argv[process.argv.length - 1]);
const READ_PRAGMAS = new Set(['table_info','table_xinfo','table_list','index_list','index_info','index_xinfo',
  'foreign_key_list','collation_list','function_list','module_list','pragma_list','compile_options',
  'page_count','page_size','freelist_count','encoding','user_version','schema_version','application_id','data_version']);
const PRAGMAS_WITH_ARGUMENT = new Set(['table_info','table_xinfo','table_list','index_list','index_info','index_xinfo','foreign_key_list']);
const DENIED_FUNCTIONS = new Set(['load_extension','readfile','writefile','edit','fts3_tokenizer','zipfile']);
let db, dbKey;
function authorize(action, a1, a2) {
  switch (action) {
    case C.SQLITE_SELECT: case C.SQLITE_READ: case C.SQLITE_RECURSIVE: return C.SQLITE_OK;
    case C.SQLITE_FUNCTION: return DENIED_FUNCTIONS.has(String(a2).toLowerCase()) ? C.SQLITE_DENY : C.SQLITE_OK;
    case C.SQLITE_PRAGMA: {
      const name = String(a1).toLowerCase();
      if (!READ_PRAGMAS.has(name)) return C.SQLITE_DENY;
      return a2 == null || PRAGMAS_WITH_ARGUMENT.has(name) ? C.SQLITE_OK : C.SQLITE_DENY;
    }
    default: return C.SQLITE_DENY;
  }
}
// Approved writes: everything but attaching files, transaction control (ours only), denied functions and
// pragmas that change settings.
let own = false;
function authorizeWrite(action, a1, a2) {
  switch (action) {
    case C.SQLITE_ATTACH: case C.SQLITE_DETACH: return C.SQLITE_DENY;
    case C.SQLITE_TRANSACTION: case C.SQLITE_SAVEPOINT: return own ? C.SQLITE_OK : C.SQLITE_DENY;
    case C.SQLITE_FUNCTION: return DENIED_FUNCTIONS.has(String(a2).toLowerCase()) ? C.SQLITE_DENY : C.SQLITE_OK;
    case C.SQLITE_PRAGMA: return authorize(action, a1, a2);
    default: return C.SQLITE_OK;
  }
}
function open(path, readOnly) {
  const key = path + '|' + readOnly;
  if (db && dbKey === key) return db;
  if (db) { try { db.close(); } catch {} db = undefined; }
  // Opening for writing would create a missing file: refuse instead, as a read-only open does.
  if (!readOnly && !require('node:fs').existsSync(path))
    throw Object.assign(new Error('unable to open database file'), { errcode: 14, errstr: 'unable to open database file' });
  // Double-quoted string literals as the sqlite3 shell accepts them (WHERE name = "x"): an identifier
  // that exists still wins; only a name that is no column becomes a string.
  // The engine's own bounds, set by the service (never by a statement): no string or BLOB, built or
  // read, longer than LIMITS.length, and SQLite's heap (this process only) capped at LIMITS.heap.
  const d = new DatabaseSync(path, { readOnly, timeout: 5000, enableDoubleQuotedStringLiterals: true,
    limits: { length: LIMITS.length } });
  d.exec('PRAGMA hard_heap_limit = ' + LIMITS.heap);
  // Reads the schema now, so a file that is no database fails here (opening), not in the statement.
  d.prepare('SELECT count(*) FROM sqlite_schema').get();
  if (readOnly) {
    d.exec('PRAGMA query_only = ON');
    d.setAuthorizer(authorize);
  } else d.setAuthorizer(authorizeWrite);
  db = d; dbKey = key;
  return d;
}
function ownExec(d, sql) { own = true; try { d.exec(sql); } finally { own = false; } }
/** One approved write: BEGIN IMMEDIATE, the statement run to its end, COMMIT; any failure rolls back. */
function write(m) {
  const d = open(m.path, false);
  ownExec(d, 'BEGIN IMMEDIATE');
  try {
    const st = d.prepare(m.text);
    st.setReadBigInts(true);
    st.setReturnArrays(true);
    const columns = st.columns().map((c) => c.name);
    let out;
    if (columns.length === 0) {
      const r = st.run(...m.params);
      out = { columns, rows: [], more: false, changes: Number(r.changes) };
    } else {
      const rows = []; let bytes = 0; let more = false; let count = 0;
      for (const row of st.iterate(...m.params)) {
        count++;
        if (more || rows.length >= m.maxRows) { more = true; continue; }
        bytes += rowSize(row);
        if (bytes > m.maxBytes) { more = true; continue; }
        rows.push(row);
      }
      out = { columns, rows, more, changes: count, returning: true };
    }
    ownExec(d, 'COMMIT');
    return out;
  } catch (e) {
    try { ownExec(d, 'ROLLBACK'); } catch {}
    throw e;
  }
}
/** A lower bound of the JSON bytes of one value as the service returns it (strings, base64 BLOBs). */
function size(v) {
  if (v == null) return 4;
  if (typeof v === 'string') return v.length + 2;
  if (v instanceof Uint8Array) return Math.ceil(v.byteLength / 3) * 4 + 2;
  return 1;
}
const rowSize = (row) => { let n = 2; for (const v of row) n += size(v) + 1; return n; };
function query(m) {
  const d = open(m.path, m.readOnly);
  const st = d.prepare(m.text);
  st.setReadBigInts(true);
  st.setReturnArrays(true);
  const columns = st.columns().map((c) => c.name);
  if (columns.length === 0) {
    const r = st.run(...m.params);
    return { columns, rows: [], more: false, changes: Number(r.changes) };
  }
  // Rows stream from the statement; a row that would take the result past the byte cap (by a lower
  // bound of its JSON size, so never one the caller would have kept) stays here, and the statement stops.
  const rows = []; let bytes = 2; let more = false;
  for (const row of st.iterate(...m.params)) {
    if (rows.length >= m.maxRows) { more = true; break; }
    bytes += rowSize(row);
    if (bytes > m.maxBytes) { more = true; break; }
    rows.push(row);
  }
  return { columns, rows, more };
}
const q = (s) => '"' + String(s).replace(/"/g, '""') + '"';
function introspect(m) {
  const d = open(m.path, true);
  const objects = d.prepare("SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name").all();
  const stat = d.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'sqlite_stat1'").get();
  const tables = [];
  for (const o of objects) {
    const cols = d.prepare('SELECT name, type, "notnull" AS nn, pk FROM pragma_table_info(?) ORDER BY cid').all(o.name);
    const pk = cols.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name);
    const fkRows = d.prepare('SELECT id, "table" AS rt, "from" AS c, "to" AS rc FROM pragma_foreign_key_list(?) ORDER BY id, seq').all(o.name);
    const fks = new Map();
    for (const r of fkRows) {
      if (!fks.has(r.id)) fks.set(r.id, { columns: [], referencedTable: r.rt, referencedColumns: [] });
      const fk = fks.get(r.id); fk.columns.push(r.c); fk.referencedColumns.push(r.rc);
    }
    let estimate = null;
    if (o.type === 'table') {
      const s = stat ? d.prepare('SELECT stat FROM sqlite_stat1 WHERE tbl = ? LIMIT 1').get(o.name) : undefined;
      estimate = s ? Number(String(s.stat).split(' ')[0]) : Number(d.prepare('SELECT count(*) AS n FROM ' + q(o.name)).get().n);
    }
    tables.push({
      name: o.name, kind: o.type === 'view' ? 'view' : 'table',
      columns: cols.map((c) => ({ name: c.name, type: c.type || 'ANY', nullable: !c.nn && !(c.pk > 0 && /^integer$/i.test(c.type)), primaryKey: c.pk > 0 })),
      primaryKey: pk, foreignKeys: [...fks.values()], rowEstimate: estimate,
    });
  }
  return { tables };
}
process.on('disconnect', () => process.exit(0));
process.on('message', (m) => {
  let phase = 'open';
  try {
    let result;
    if (m.path) open(m.path, m.op === 'query' ? m.readOnly : true);
    phase = 'statement';
    if (m.op === 'query') result = m.readOnly ? query(m) : write(m);
    else if (m.op === 'introspect') result = introspect(m);
    else { const d = open(m.path, true); result = d.prepare('SELECT sqlite_version() AS v').get(); }
    process.send({ id: m.id, ok: true, result });
  } catch (e) {
    process.send({ id: m.id, ok: false, error: { message: String(e && e.message || e), code: e && e.code, errcode: e && e.errcode, errstr: e && e.errstr, phase } });
  }
});
`;

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  timer?: NodeJS.Timeout;
}

const S3_RECHECK_MS = 60_000;
const s3Cache = new Map<string, { etag: string; path: string; checkedAt: number }>();

/** Downloads s3://bucket/key to the temporary disk unless the cached copy has the same ETag. */
async function s3File(bucket: string, key: string): Promise<string> {
  const url = `s3://${bucket}/${key}`;
  const cached = s3Cache.get(url);
  if (cached && Date.now() - cached.checkedAt < S3_RECHECK_MS) return cached.path;
  const { S3Client, GetObjectCommand } = await import('@aws-sdk/client-s3');
  const client = new S3Client({});
  try {
    const res = await client.send(
      new GetObjectCommand({ Bucket: bucket, Key: key, IfNoneMatch: cached?.etag }),
    );
    const etag = String(res.ETag ?? Date.now()).replace(/"/g, '');
    const dir = join(tmpdir(), 'loupe-sqlite');
    mkdirSync(dir, { recursive: true });
    const hash = createHash('sha256').update(url).digest('hex').slice(0, 24);
    const path = join(dir, `${hash}-${etag.replace(/[^\w-]/g, '')}.db`);
    const bytes = await res.Body?.transformToByteArray();
    await writeFile(`${path}.part`, bytes ?? new Uint8Array());
    renameSync(`${path}.part`, path);
    if (cached && cached.path !== path) rmSync(cached.path, { force: true });
    s3Cache.set(url, { etag, path, checkedAt: Date.now() });
    return path;
  } catch (e) {
    const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (status === 304 && cached) {
      cached.checkedAt = Date.now();
      return cached.path;
    }
    throw e;
  } finally {
    client.destroy();
  }
}

/**
 * The local file a connection reads: its source checked against the organization's area first
 * (sqlite-source.ts), then a local path resolved through symlinks, or an S3 object copied locally.
 */
export async function sqliteFilePath(database: string, orgId: string | undefined): Promise<string> {
  const source = sqliteSource(orgId, database);
  if (source.kind === 's3') return s3File(source.bucket, source.key);
  const path = await realSqlitePath(orgId as string, source.path);
  // Opening read-only never creates a file; a missing file fails with SQLITE_CANTOPEN.
  if (statSync(path).isDirectory())
    throw Object.assign(new Error('unable to open database file: it is a directory'), { errcode: 14 });
  return path;
}

/**
 * The engine's bounds for every database the SQLite process opens: the longest string or BLOB a
 * statement may build or read (SQLITE_LIMIT_LENGTH; nothing longer than the 5 MiB result cap can be
 * returned anyway) and SQLite's hard heap limit (sorts and temporary tables past it spill to disk or fail
 * with SQLITE_NOMEM). The process's JavaScript heap is capped too.
 */
export const SQLITE_LIMITS = { length: VALUE_LIMIT_BYTES, heap: 64 * 1024 * 1024, jsHeapMb: 256 } as const;

/** SQLite result codes that describe the file rather than the statement (diagnosed as connection problems). */
const FILE_ERRCODES = new Set([11, 14, 26]); // CORRUPT, CANTOPEN, NOTADB

/**
 * A failure of the statement itself (the file opened) is about the statement, whatever its message says
 * (`pragma_journal_mode('wal')` fails with "unknown database 'wal'", which is no connection problem): a
 * refusal by the authorizer is 400 READ_ONLY_VIOLATION, anything else 422 QUERY_FAILED.
 */
function statementError(e: unknown, text: string, write = false): unknown {
  const err = e as { phase?: string; errcode?: number; code?: string; message?: string };
  if (err?.phase !== 'statement' || (err.errcode !== undefined && FILE_ERRCODES.has(err.errcode))) return e;
  const message = String(err.message ?? e);
  if ((err.errcode === 23 || /not authorized/i.test(message)) && write)
    return new AppError(
      400,
      'READ_ONLY_VIOLATION',
      'SQLite refused this statement (not authorized): approved writes cannot attach databases, control the transaction, call file or extension functions, or change settings with PRAGMA.',
      { statementType: /\bpragma/i.test(text) ? 'PRAGMA' : 'AUTHORIZER' },
    );
  if (err.errcode === 23 || /not authorized/i.test(message))
    return new AppError(
      400,
      'READ_ONLY_VIOLATION',
      'SQLite refused this statement (not authorized): only reads of tables and views, read-only PRAGMA functions and built-in functions can run here.',
      { statementType: /\bpragma/i.test(text) ? 'PRAGMA' : 'AUTHORIZER' },
    );
  if (err.errcode === 18) return valueTooLarge(SQLITE_LIMITS.length); // SQLITE_TOOBIG
  if (err.errcode === 7 || err.code === 'LOUPE_SQLITE_MEMORY')
    return memoryLimit(
      err.code === 'LOUPE_SQLITE_MEMORY' ? SQLITE_LIMITS.jsHeapMb * 1024 * 1024 : SQLITE_LIMITS.heap,
    );
  // Not SQLite's own failure (a JavaScript error while reading rows): no internal text reaches the caller.
  if (err.errcode === undefined)
    return new AppError(
      422,
      'QUERY_FAILED',
      'SQLite could not return the result of this statement. Narrow it (filters, LIMIT, fewer or smaller columns).',
      { code: 'SQLITE_RESULT' },
    );
  return new AppError(422, 'QUERY_FAILED', `The database rejected the statement: ${message}`, {
    code: typeof err.code === 'string' ? err.code : `SQLITE_${err.errcode}`,
  });
}

/** Every live child, killed when this process exits (a child inside a native SQLite loop cannot notice). */
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

/** A connection's SQLite process exits after this long without a call (a node process costs ~40 MB). */
export const SQLITE_IDLE_MS = 60_000;

export function sqliteDriver(target: ConnectionTarget, opts: { idleMs?: number } = {}): Driver {
  const idleMs = opts.idleMs ?? SQLITE_IDLE_MS;
  let child: ChildProcess | undefined;
  let idleTimer: NodeJS.Timeout | undefined;
  let seq = 0;
  const pending = new Map<number, Pending>();

  const failAll = (err: unknown) => {
    for (const p of pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    pending.clear();
  };

  const stop = (c: ChildProcess) => {
    if (child === c) child = undefined;
    children.delete(c);
    // SIGKILL: a statement in SQLite's native loop never returns to JavaScript, so only the OS stops it.
    c.kill('SIGKILL');
  };

  const ensureChild = () => {
    if (child) return child;
    const env = { ...process.env };
    delete env.NODE_OPTIONS; // no loaders or inspector flags of the parent
    const limits = JSON.stringify({ length: SQLITE_LIMITS.length, heap: SQLITE_LIMITS.heap });
    const c = spawn(
      process.execPath,
      ['--no-warnings', `--max-old-space-size=${SQLITE_LIMITS.jsHeapMb}`, '-e', CHILD_SOURCE, limits],
      {
        stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
        serialization: 'advanced', // BigInt and Uint8Array values cross intact
        env,
      },
    );
    children.add(c);
    c.unref();
    (c.channel as { unref?: () => void } | undefined)?.unref?.();
    c.on('message', (m: { id: number; ok: boolean; result?: unknown; error?: Record<string, unknown> }) => {
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      clearTimeout(p.timer);
      if (pending.size === 0) {
        (c.channel as { unref?: () => void } | undefined)?.unref?.();
        clearTimeout(idleTimer);
        idleTimer = setTimeout(() => {
          if (child === c && pending.size === 0) stop(c);
        }, idleMs);
        idleTimer.unref();
      }
      if (m.ok) p.resolve(m.result);
      else p.reject(Object.assign(new Error(String(m.error?.message)), m.error));
    });
    c.on('error', (e) => {
      stop(c);
      failAll(e);
    });
    c.on('exit', (code, signal) => {
      children.delete(c);
      if (child === c) {
        child = undefined;
        // Not killed by our timer or close (they forget it first). V8 aborts the child when a read passes
        // its JavaScript heap cap (SQLITE_LIMITS.jsHeapMb): SIGABRT, or exit code 134. Any other end (killed
        // from outside, crashed) loses the statement's session.
        const outOfMemory = signal === 'SIGABRT' || code === 134;
        failAll(
          Object.assign(
            new Error('The SQLite process stopped.'),
            outOfMemory
              ? { phase: 'statement', code: 'LOUPE_SQLITE_MEMORY' }
              : { code: 'LOUPE_SQLITE_STOPPED' },
          ),
        );
      }
    });
    child = c;
    return c;
  };

  const call = <T>(msg: Record<string, unknown>, timeoutMs: number): Promise<T> =>
    new Promise<T>((resolvePromise, reject) => {
      clearTimeout(idleTimer);
      const c = ensureChild();
      const id = ++seq;
      const p: Pending = { resolve: resolvePromise as (v: unknown) => void, reject };
      p.timer = setTimeout(() => {
        pending.delete(id);
        reject(new QueryTimeoutError(timeoutMs));
        // The statement may still be running: kill the process (other calls on it fail and are retried
        // by their callers; the next call starts a fresh one).
        stop(c);
        failAll(new QueryTimeoutError(timeoutMs));
      }, timeoutMs);
      pending.set(id, p);
      (c.channel as { ref?: () => void } | undefined)?.ref?.();
      c.send({ ...msg, id });
    });

  return {
    async ping() {
      const started = performance.now();
      const path = await sqliteFilePath(target.database, target.orgId);
      const r = await call<{ v: string }>({ op: 'ping', path }, dbDeadlines().testMs);
      return { latencyMs: Math.round((performance.now() - started) * 100) / 100, serverVersion: r?.v };
    },

    async introspect(opts): Promise<SchemaSnapshot> {
      const path = await sqliteFilePath(target.database, target.orgId);
      return call<SchemaSnapshot>({ op: 'introspect', path }, opts?.timeoutMs ?? dbDeadlines().statementMs);
    },

    async query(text: string, opts: QueryOptions): Promise<QueryResult> {
      const started = performance.now();
      const path = await sqliteFilePath(target.database, target.orgId);
      const r = await call<{
        columns: string[];
        rows: unknown[][];
        more: boolean;
        changes?: number;
        returning?: boolean;
      }>(
        {
          op: 'query',
          path,
          text,
          params: opts.params ?? [],
          maxRows: opts.maxRows,
          maxBytes: opts.maxBytes,
          readOnly: opts.readOnly !== false,
        },
        opts.timeoutMs,
      ).catch((e) => {
        throw statementError(e, text, opts.readOnly === false);
      });
      const columns = uniqueColumns(r.columns);
      const collector = new RowCollector(opts.maxRows, opts.maxBytes);
      for (const row of r.rows) if (!collector.add(rowOf(columns, row, { safeBigInts: true }))) break;
      const truncated = collector.truncated || r.more;
      return {
        columns,
        rows: collector.rows,
        rowCount: r.changes !== undefined && !r.returning ? r.changes : collector.rows.length,
        ...(opts.readOnly === false ? { rowsAffected: r.changes ?? 0 } : {}),
        executionTime: Math.round((performance.now() - started) * 100) / 100,
        ...(truncated ? { truncated: true } : {}),
      };
    },

    async close() {
      clearTimeout(idleTimer);
      const c = child;
      failAll(new Error('The connection was closed.'));
      if (c) stop(c);
    },
  };
}
