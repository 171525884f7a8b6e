/**
 * SQLite adapter (node:sqlite). `database` is a file path (local mode only) or `s3://bucket/key`,
 * copied to the function's temporary disk (cached by ETag, re-checked at most once a minute).
 *
 * node:sqlite is synchronous, so statements run in a worker thread that owns the open database:
 * a statement past its time budget is stopped by terminating the worker (a new one opens on the
 * next call). Reads open the file read-only (`readOnly: true`), set `PRAGMA query_only`, and install
 * an authorizer that allows only reading tables, calling functions outside a denylist, recursive
 * CTEs and read-only pragmas: a write that slipped past the guard fails in SQLite itself. Approved
 * writes (`readOnly: false`) open the file for writing (never creating it) and run as BEGIN IMMEDIATE,
 * the statement to its end, COMMIT (ROLLBACK on any failure; a worker stopped at the timeout leaves a
 * journal that SQLite rolls back on the next open), with an authorizer that refuses ATTACH/DETACH,
 * transaction control, denied functions and setting pragmas. They run in a child process (see
 * runInChild), so that a write stopped at the timeout releases its lock.
 * Integers come back as numbers when they fit a double exactly, otherwise as strings; BLOBs as base64.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { config } from '../../platform/config';
import { RowCollector, rowOf, uniqueColumns } from '../values';
import { QueryTimeoutError } from './errors';
import type { ConnectionTarget, Driver, QueryOptions, QueryResult, SchemaSnapshot } from './types';

/** Runs inside the worker (CommonJS, no imports but Node built-ins). */
const WORKER_SOURCE = String.raw`
const { parentPort } = require('node:worker_threads');
const { DatabaseSync, constants: C } = require('node:sqlite');
const READ_PRAGMAS = new Set(['table_info','table_xinfo','table_list','index_list','index_info','index_xinfo',
  'foreign_key_list','database_list','collation_list','function_list','module_list','pragma_list','compile_options',
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
    throw Object.assign(new Error('unable to open database file: ' + path + ' does not exist'), { errcode: 14, errstr: 'unable to open database file' });
  const d = new DatabaseSync(path, { readOnly, timeout: 5000 });
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
        for (const v of row) bytes += size(v);
        rows.push(row);
        if (bytes > m.maxBytes * 2 + 65536) more = true;
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
function size(v) {
  if (v == null) return 4;
  if (typeof v === 'string') return v.length + 2;
  if (v instanceof Uint8Array) return Math.ceil(v.byteLength * 4 / 3) + 2;
  return 24;
}
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
  const rows = []; let bytes = 0; let more = false;
  for (const row of st.iterate(...m.params)) {
    if (rows.length >= m.maxRows) { more = true; break; }
    for (const v of row) bytes += size(v);
    rows.push(row);
    if (bytes > m.maxBytes * 2 + 65536) { more = true; break; }
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
parentPort.on('message', (m) => {
  try {
    let result;
    if (m.op === 'query') result = m.readOnly ? query(m) : write(m);
    else if (m.op === 'introspect') result = introspect(m);
    else { const d = open(m.path, true); result = d.prepare('SELECT sqlite_version() AS v').get(); }
    parentPort.postMessage({ id: m.id, ok: true, result });
  } catch (e) {
    parentPort.postMessage({ id: m.id, ok: false, error: { message: String(e && e.message || e), code: e && e.code, errcode: e && e.errcode, errstr: e && e.errstr } });
  }
});
`;

/**
 * Approved writes run in a child process, not the worker thread: a thread stopped at the timeout
 * keeps its SQLite handle (and the file lock of BEGIN IMMEDIATE) open for the life of this process,
 * while a killed process releases its locks and leaves a journal that the next open rolls back.
 */
const CHILD_SOURCE = WORKER_SOURCE.replace(
  "const { parentPort } = require('node:worker_threads');",
  `const parentPort = {
  on(_event, fn) {
    let input = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (d) => { input += d; });
    process.stdin.on('end', () => fn(JSON.parse(input)));
  },
  postMessage(m) {
    const json = JSON.stringify(m, (_k, v) => typeof v === 'bigint' ? { $bigint: v.toString() }
      : v instanceof Uint8Array ? { $b64: Buffer.from(v).toString('base64') } : v);
    process.stdout.write(json, () => process.exit(0));
  },
};`,
);

const revive = (_k: string, v: unknown) => {
  if (v && typeof v === 'object') {
    const o = v as { $bigint?: unknown; $b64?: unknown };
    if (typeof o.$bigint === 'string') return BigInt(o.$bigint);
    if (typeof o.$b64 === 'string') return Buffer.from(o.$b64, 'base64');
  }
  return v;
};

/** Runs one message of the worker protocol in a fresh child process, killed at the timeout. */
function runInChild<T>(msg: Record<string, unknown>, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolvePromise, reject) => {
    const child = spawn(process.execPath, ['--no-warnings', '-e', CHILD_SOURCE], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: {},
    });
    let out = '';
    let err = '';
    let settled = false;
    const settle = (f: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      f();
    };
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      settle(() => reject(new QueryTimeoutError(timeoutMs)));
    }, timeoutMs);
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      if (err.length < 4000) err += d;
    });
    child.on('error', (e) => settle(() => reject(e)));
    child.on('close', (code) =>
      settle(() => {
        let m: { ok?: boolean; result?: T; error?: Record<string, unknown> } | undefined;
        try {
          m = JSON.parse(out, revive);
        } catch {
          m = undefined;
        }
        if (m?.ok) resolvePromise(m.result as T);
        else if (m?.error) reject(Object.assign(new Error(String(m.error.message)), m.error));
        else
          reject(
            new Error(`The SQLite write process ended (${code}) without an answer. ${err.slice(0, 300)}`),
          );
      }),
    );
    child.stdin.end(JSON.stringify({ ...msg, id: 1 }));
  });
}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  timer?: NodeJS.Timeout;
}

const S3_RECHECK_MS = 60_000;
const s3Cache = new Map<string, { etag: string; path: string; checkedAt: number }>();

/** Downloads s3://bucket/key to the temporary disk unless the cached copy has the same ETag. */
async function s3File(url: string): Promise<string> {
  const m = /^s3:\/\/([^/]+)\/(.+)$/.exec(url);
  if (!m) throw Object.assign(new Error(`Not an S3 URL: ${url}`), { code: 'NoSuchKey' });
  const [, bucket, key] = m;
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

export async function sqliteFilePath(database: string): Promise<string> {
  if (database.startsWith('s3://')) return s3File(database);
  if (config().runtime === 'aws')
    throw Object.assign(
      new Error(`SQLite file paths work only in local mode; use s3://bucket/key (got "${database}").`),
      {
        code: 'LOUPE_SQLITE_LOCAL_PATH',
      },
    );
  const path = resolve(database);
  // Opening read-only never creates a file; a missing file fails with SQLITE_CANTOPEN.
  try {
    if (statSync(path).isDirectory())
      throw Object.assign(new Error(`unable to open database file: ${path} is a directory`), { errcode: 14 });
  } catch (e) {
    if ((e as { errcode?: number }).errcode) throw e;
  }
  return path;
}

export function sqliteDriver(target: ConnectionTarget): Driver {
  let worker: Worker | undefined;
  let seq = 0;
  const pending = new Map<number, Pending>();

  const failAll = (err: unknown) => {
    for (const p of pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    pending.clear();
  };

  const ensureWorker = () => {
    if (worker) return worker;
    const w = new Worker(WORKER_SOURCE, { eval: true });
    w.unref();
    w.on('message', (m: { id: number; ok: boolean; result?: unknown; error?: Record<string, unknown> }) => {
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      clearTimeout(p.timer);
      if (m.ok) p.resolve(m.result);
      else p.reject(Object.assign(new Error(String(m.error?.message)), m.error));
    });
    w.on('error', (e) => {
      if (worker === w) worker = undefined;
      failAll(e);
    });
    w.on('exit', () => {
      if (worker === w) worker = undefined;
      failAll(new Error('The SQLite worker stopped.'));
    });
    worker = w;
    return w;
  };

  const call = <T>(msg: Record<string, unknown>, timeoutMs: number): Promise<T> =>
    new Promise<T>((resolvePromise, reject) => {
      const w = ensureWorker();
      const id = ++seq;
      const p: Pending = { resolve: resolvePromise as (v: unknown) => void, reject };
      p.timer = setTimeout(() => {
        pending.delete(id);
        reject(new QueryTimeoutError(timeoutMs));
        // The worker may be stuck in a long statement: stop it; the next call starts a fresh one.
        if (worker === w) worker = undefined;
        void w.terminate();
      }, timeoutMs);
      pending.set(id, p);
      w.postMessage({ ...msg, id });
    });

  return {
    async ping() {
      const started = performance.now();
      const path = await sqliteFilePath(target.database);
      const r = await call<{ v: string }>({ op: 'ping', path }, 15_000);
      return { latencyMs: Math.round((performance.now() - started) * 100) / 100, serverVersion: r?.v };
    },

    async introspect(): Promise<SchemaSnapshot> {
      const path = await sqliteFilePath(target.database);
      return call<SchemaSnapshot>({ op: 'introspect', path }, 60_000);
    },

    async query(text: string, opts: QueryOptions): Promise<QueryResult> {
      const started = performance.now();
      const path = await sqliteFilePath(target.database);
      const msg = {
        op: 'query',
        path,
        text,
        params: opts.params ?? [],
        maxRows: opts.maxRows,
        maxBytes: opts.maxBytes,
        readOnly: opts.readOnly !== false,
      };
      const run = opts.readOnly === false ? runInChild : call;
      const r = await run<{
        columns: string[];
        rows: unknown[][];
        more: boolean;
        changes?: number;
        returning?: boolean;
      }>(msg, opts.timeoutMs);
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
      const w = worker;
      worker = undefined;
      failAll(new Error('The connection was closed.'));
      await w?.terminate();
    },
  };
}
