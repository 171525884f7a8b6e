import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { MessagePort } from 'node:worker_threads';
import { crc32 } from 'node:zlib';
import type { StoreAnswer, StoreCall, StoreFailure } from '../../shared/platform/db/document';

/**
 * The local store without HTTP: DynamoDB operations executed by dynalite's own validation and action
 * modules in this process. Only the local runtime uses it (AWS always goes through signed HTTPS).
 *
 *  - `openDirectStore` opens dynalite's store (in memory with a write log: durable-level.cjs) and answers `StoreCall`s (the wire form of a
 *    DynamoDB request: operation name and JSON input, as the protocol sends them), which the service's
 *    document client (shared/platform/db/document.ts) uses directly. It also serves the same calls over
 *    HTTP (the DynamoDB JSON protocol) for the operator tool and the AWS SDK. The answers are the same on
 *    every path (test/integration/local-store-transport.test.ts compares them with the SDK's).
 *  - `serveStorePort` / `portStoreCall` carry calls over a MessagePort (handler instances in worker
 *    threads reach the store of the main thread).
 */

export type { StoreAnswer, StoreCall, StoreFailure };

const require = createRequire(import.meta.url);
// Before dynalite/db loads: the storage of the store opened here (memory and a write log, not LevelDB).
const { withDurableStorage } = require('./durable-level.cjs') as {
  withDurableStorage<T>(fn: () => T): T;
};
require('./dynalite-iterators.cjs'); // closes the iterators dynalite leaves open (see the file)
require('./dynalite-expressions.cjs'); // keeps parsed expressions instead of parsing them on every call
// dynalite's type checks with each descriptor read once (same results, errors and mutations; see the file).
const { checkTypes } = require('./dynalite-types.cjs') as {
  checkTypes(data: unknown, types: unknown): Record<string, unknown>;
};
const dynaliteDb = require('dynalite/db') as { create(options: Record<string, unknown>): DynaliteStore };
const validations = require('dynalite/validations') as {
  checkValidations(data: unknown, types: unknown, custom: unknown, store: DynaliteStore): void;
};

interface DynaliteStore {
  db: { close(cb: (err?: Error) => void): void; open(): Promise<void> };
  getTable(name: string, checkStatus: unknown, cb?: (err: Error | null, table?: DynaliteTable) => void): void;
  lifecycleManager?: { gracefulClose(cb: (err?: Error) => void): void };
}
interface DynaliteTable {
  TableStatus: string;
  GlobalSecondaryIndexes?: { IndexStatus?: string }[];
}
type Action = (
  store: DynaliteStore,
  data: Record<string, unknown>,
  cb: (err: (Error & Partial<StoreFailure>) | null, out?: Record<string, unknown>) => void,
) => void;

const OPERATIONS = [
  'BatchGetItem',
  'BatchWriteItem',
  'CreateTable',
  'DeleteItem',
  'DeleteTable',
  'DescribeTable',
  'DescribeTimeToLive',
  'GetItem',
  'ListTables',
  'PutItem',
  'Query',
  'Scan',
  'TagResource',
  'UntagResource',
  'ListTagsOfResource',
  'UpdateItem',
  'UpdateTable',
];
const lowerFirst = (s: string) => s[0].toLowerCase() + s.slice(1);
const actions = new Map<string, { action: Action; types: unknown; custom: unknown }>();
for (const op of OPERATIONS) {
  const v = require(`dynalite/validations/${lowerFirst(op)}`) as { types: unknown; custom: unknown };
  actions.set(op, { action: require(`dynalite/actions/${lowerFirst(op)}`) as Action, ...v });
}

export interface DirectStore {
  call: StoreCall;
  /** The HTTP endpoint serving the same store (DynamoDB JSON protocol), for the SDK and the operator tool. */
  endpoint: string;
  close(): Promise<void>;
}

/** Opens dynalite's store on `<dataDir>/dynamodb` in this process and serves it directly and over HTTP. */
export async function openDirectStore(dataDir: string, port = 0): Promise<DirectStore> {
  mkdirSync(join(dataDir, 'dynamodb'), { recursive: true });
  const store = withDurableStorage(() =>
    dynaliteDb.create({
      path: join(dataDir, 'dynamodb'),
      createTableMs: 0,
      deleteTableMs: 0,
      updateTableMs: 0,
    }),
  );
  try {
    await store.db.open(); // its lock, the files read back (a store in use by another process fails here)
  } catch (e) {
    throw (e as { cause?: Error }).cause ?? e;
  }
  const tables = cacheTables(store);
  const call = directCall(store, tables);
  const server = httpFront(call);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  let closed: Promise<void> | undefined;
  return {
    call,
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close() {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }).then(
        () =>
          new Promise<void>((resolve, reject) => {
            const done = (err?: Error) => (err ? reject(err) : resolve());
            if (store.lifecycleManager) store.lifecycleManager.gracefulClose(done);
            else store.db.close(done);
          }),
      );
      return closed;
    },
  };
}

/**
 * dynalite reads the table's definition from LevelDB on every item operation (one more LevelDB read per
 * call, and LevelDB reads contend for its lock with the writes). Active definitions are kept in memory;
 * any table operation (create, update, delete, tags) forgets them.
 */
function cacheTables(store: DynaliteStore): Map<string, DynaliteTable> {
  const cache = new Map<string, DynaliteTable>();
  const read = store.getTable.bind(store);
  store.getTable = (name, checkStatus, cb) => {
    if (typeof checkStatus !== 'function') return read(name, checkStatus, cb);
    const done = checkStatus as (err: Error | null, table?: DynaliteTable) => void;
    const hit = cache.get(name);
    if (hit) {
      queueMicrotask(() => done(null, hit));
      return;
    }
    read(name, (err: Error | null, table?: DynaliteTable) => {
      const active =
        table?.TableStatus === 'ACTIVE' &&
        (table.GlobalSecondaryIndexes ?? []).every((ix) => (ix.IndexStatus ?? 'ACTIVE') === 'ACTIVE');
      if (!err && table && active) cache.set(name, table);
      done(err, table);
    });
  };
  return cache;
}
const TABLE_OPERATIONS = new Set([
  'CreateTable',
  'UpdateTable',
  'DeleteTable',
  'TagResource',
  'UntagResource',
]);

/** dynalite's HTTP handler, minus the HTTP: type checks, validations, then the action. */
function directCall(store: DynaliteStore, tables: Map<string, DynaliteTable>): StoreCall {
  return (operation, input) =>
    new Promise<StoreAnswer>((resolve, reject) => {
      if (TABLE_OPERATIONS.has(operation)) tables.clear();
      const a = actions.get(operation);
      if (!a) {
        resolve({
          error: { statusCode: 400, body: { __type: 'com.amazon.coral.service#UnknownOperationException' } },
        });
        return;
      }
      let data: Record<string, unknown>;
      try {
        data = checkTypes(input, a.types);
        validations.checkValidations(data, a.types, a.custom, store);
      } catch (e) {
        const err = e as Error & Partial<StoreFailure>;
        if (err.statusCode && err.body) resolve({ error: { statusCode: err.statusCode, body: err.body } });
        else reject(err);
        return;
      }
      a.action(store, data, (err, out) => {
        if (TABLE_OPERATIONS.has(operation)) tables.clear();
        if (err?.statusCode && err.body) resolve({ error: { statusCode: err.statusCode, body: err.body } });
        else if (err) reject(err);
        else resolve({ output: out ?? {} });
      });
    });
}

/** The DynamoDB JSON protocol over HTTP on top of `call` (what dynalite's own server answers, minus signatures). */
function httpFront(call: StoreCall): Server {
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const send = (status: number, body: unknown) => {
        const text = JSON.stringify(body);
        res.statusCode = status;
        res.setHeader(
          'x-amzn-RequestId',
          randomBytes(39).toString('base64').toUpperCase().replace(/\+|\//g, '0'),
        );
        res.setHeader('x-amz-crc32', crc32(text));
        res.setHeader('Content-Type', 'application/x-amz-json-1.0');
        res.setHeader('Content-Length', Buffer.byteLength(text));
        res.end(text);
      };
      if (req.method !== 'POST') return send(200, {});
      const target = String(req.headers['x-amz-target'] ?? '').split('.');
      let input: Record<string, unknown>;
      try {
        input = JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null');
        if (!input || typeof input !== 'object') throw new Error('not an object');
      } catch {
        return send(400, { __type: 'com.amazon.coral.service#SerializationException' });
      }
      call(target[1] ?? '', input).then(
        (a) => ('error' in a ? send(a.error.statusCode, a.error.body) : send(200, a.output)),
        (e) =>
          send(500, {
            __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError',
            message: String(e?.message ?? e),
          }),
      );
    });
  });
}

type PortRequest = { id: number; operation: string; input: Record<string, unknown> };
type PortReply = { id: number; answer?: StoreAnswer; crash?: string };

// Calls and answers cross the MessagePort as JSON text: both are the DynamoDB JSON protocol's values
// (binary as base64), and a string is copied whole where an object graph is cloned member by member
// (the structured clone of each call and answer cost an instance's thread more than the rest of the
// call's transport).

/** Answers the store calls arriving on `port` (the main thread's side of an instance's channel). */
export function serveStorePort(port: MessagePort, call: StoreCall): void {
  port.on('message', (text: string) => {
    const m = JSON.parse(text) as PortRequest;
    call(m.operation, m.input).then(
      (answer) => port.postMessage(JSON.stringify({ id: m.id, answer } satisfies PortReply)),
      (e) =>
        port.postMessage(
          JSON.stringify({ id: m.id, crash: String((e as Error)?.stack ?? e) } satisfies PortReply),
        ),
    );
  });
}

/** A StoreCall that sends its calls over `port` to a `serveStorePort` (an instance's side). */
export function portStoreCall(port: MessagePort): StoreCall {
  let next = 0;
  const pending = new Map<number, { resolve(a: StoreAnswer): void; reject(e: Error): void }>();
  port.on('message', (text: string) => {
    const m = JSON.parse(text) as PortReply;
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.answer) p.resolve(m.answer);
    else p.reject(new Error(`local store: ${m.crash}`));
    if (!pending.size) port.unref();
  });
  port.unref();
  return (operation, input) =>
    new Promise<StoreAnswer>((resolve, reject) => {
      const id = ++next;
      pending.set(id, { resolve, reject });
      port.ref(); // an outstanding call keeps the thread alive, an idle channel does not
      port.postMessage(JSON.stringify({ id, operation, input } satisfies PortRequest));
    });
}
