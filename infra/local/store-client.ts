import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { MessagePort } from 'node:worker_threads';
import { crc32 } from 'node:zlib';
import * as ddb from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';

/**
 * The local store without HTTP: DynamoDB commands executed by dynalite's own validation and action
 * modules in this process. Only the local runtime uses it (AWS always goes through the SDK).
 *
 *  - `openDirectStore` opens dynalite's LevelDB store and answers `StoreCall`s (the wire form of a
 *    DynamoDB request: operation name and JSON input, as the SDK would have sent them). It also serves
 *    the same calls over HTTP (the DynamoDB JSON protocol) for the operator tool and the SDK.
 *  - `storeDocumentClient(call)` is a document client (`send(command)` of @aws-sdk/lib-dynamodb
 *    commands) that marshals like lib-dynamodb and returns what the SDK returns: the same output
 *    shapes, and the SDK's own exception classes with the same `name`, `message` and `$fault`
 *    (test/integration/local-store-transport.test.ts runs the same commands through both paths).
 *  - `serveStorePort` / `portStoreCall` carry calls over a MessagePort (handler instances in worker
 *    threads reach the store of the main thread).
 */

/** A DynamoDB error as the service answers it: HTTP status and JSON body (`__type`, `message`). */
export interface StoreFailure {
  statusCode: number;
  body: { __type: string; message?: string; Message?: string; [k: string]: unknown };
}
export type StoreAnswer = { output: Record<string, unknown> } | { error: StoreFailure };
/** Executes one DynamoDB operation (e.g. `GetItem`) on its wire-form input. */
export type StoreCall = (operation: string, input: Record<string, unknown>) => Promise<StoreAnswer>;

const require = createRequire(import.meta.url);
const dynaliteDb = require('dynalite/db') as { create(options: Record<string, unknown>): DynaliteStore };
const validations = require('dynalite/validations') as {
  checkTypes(data: unknown, types: unknown): Record<string, unknown>;
  checkValidations(data: unknown, types: unknown, custom: unknown, store: DynaliteStore): void;
};

interface DynaliteStore {
  db: { close(cb: (err?: Error) => void): void };
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
  const store = dynaliteDb.create({
    path: join(dataDir, 'dynamodb'),
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
  });
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
        data = validations.checkTypes(toWire(input), a.types);
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

/** Binary attribute values travel as base64 in the JSON protocol (the SDK's serializer does this). */
function toWire(v: unknown): any {
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
  if (Array.isArray(v)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < v.length; i++) {
      const w = toWire(v[i]);
      if (w === v[i]) continue;
      out ??= v.slice();
      out[i] = w;
    }
    return out ?? v;
  }
  if (v && typeof v === 'object') {
    let out: Record<string, unknown> | undefined;
    for (const k in v as Record<string, unknown>) {
      const x = (v as Record<string, unknown>)[k];
      const w = toWire(x);
      if (w === x) continue;
      out ??= { ...(v as Record<string, unknown>) };
      out[k] = w;
    }
    return out ?? v;
  }
  return v;
}

/** The SDK's deserializer turns `B`/`BS` base64 back into bytes; everything else is plain JSON already. */
function fromWireValue(av: any): any {
  if (!av || typeof av !== 'object') return av;
  if (typeof av.B === 'string') return { B: new Uint8Array(Buffer.from(av.B, 'base64')) };
  if (Array.isArray(av.BS)) return { BS: av.BS.map((b: string) => new Uint8Array(Buffer.from(b, 'base64'))) };
  if (Array.isArray(av.L)) {
    const l = fromWireList(av.L);
    return l === av.L ? av : { L: l };
  }
  if (av.M && typeof av.M === 'object') {
    const m = fromWireMap(av.M);
    return m === av.M ? av : { M: m };
  }
  return av;
}
/** Copies only what changes (answers without binary values are returned as they are). */
function fromWireList(l: unknown[]): unknown[] {
  let out: unknown[] | undefined;
  for (let i = 0; i < l.length; i++) {
    const w = fromWireValue(l[i]);
    if (w === l[i]) continue;
    out ??= l.slice();
    out[i] = w;
  }
  return out ?? l;
}
function fromWireMap(m: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  for (const k in m) {
    const w = fromWireValue(m[k]);
    if (w === m[k]) continue;
    out ??= { ...m };
    out[k] = w;
  }
  return out ?? m;
}
/** Output members holding attribute maps (the ones @aws-sdk/lib-dynamodb unmarshals). */
function fromWire(out: Record<string, unknown>): Record<string, unknown> {
  const r: Record<string, unknown> = { ...out };
  for (const k of ['Item', 'Attributes', 'LastEvaluatedKey'])
    if (r[k]) r[k] = fromWireMap(r[k] as Record<string, unknown>);
  if (Array.isArray(r.Items)) r.Items = r.Items.map((i) => fromWireMap(i as Record<string, unknown>));
  if (r.Responses) {
    const resp: Record<string, unknown> = {};
    for (const [t, items] of Object.entries(r.Responses as Record<string, Record<string, unknown>[]>))
      resp[t] = items.map(fromWireMap);
    r.Responses = resp;
  }
  return r;
}

/** The exception the SDK throws for a DynamoDB error answer. */
export function sdkError(failure: StoreFailure, requestId: string): Error {
  const type = failure.body.__type ?? '';
  const name = type.slice(type.lastIndexOf('#') + 1) || 'UnknownError';
  const message = failure.body.message ?? failure.body.Message ?? name;
  const $metadata = { httpStatusCode: failure.statusCode, requestId, attempts: 1, totalRetryDelay: 0 };
  const $fault = failure.statusCode >= 500 ? 'server' : 'client';
  const { __type: _t, message: _m, Message: _M, ...members } = failure.body;
  const Modeled = (ddb as unknown as Record<string, unknown>)[name];
  const e =
    typeof Modeled === 'function' && name !== 'DynamoDBServiceException' && name.endsWith('Exception')
      ? new (Modeled as new (o: object) => Error)({ message, $metadata, ...members })
      : new ddb.DynamoDBServiceException({ name, $fault, message, $metadata } as never);
  // As the SDK's decorateServiceException: the answer's own fields become the error's, and its message.
  for (const [k, v] of Object.entries(failure.body))
    if (
      (e as unknown as Record<string, unknown>)[k] === undefined ||
      (e as unknown as Record<string, unknown>)[k] === ''
    )
      (e as unknown as Record<string, unknown>)[k] = v;
  Object.defineProperty(e, 'message', {
    value: message,
    enumerable: true,
    writable: true,
    configurable: true,
  });
  return e;
}

interface DocumentCommand {
  input: Record<string, unknown>;
  inputKeyNodes?: unknown;
  outputKeyNodes?: unknown;
  clientCommand?: { constructor: { name: string } };
  constructor: { name: string };
}

const marshallOptions = {
  removeUndefinedValues: true,
  convertClassInstanceToMap: false,
  convertTopLevelContainer: true,
};
const unmarshallOptions = { convertWithoutMapWrapper: true };

/** lib-dynamodb's key-node walk (marshallInput / unmarshallOutput), with the client's marshall options. */
function processKeys(obj: any, fn: (v: any) => any, keyNodes: any): any {
  if (obj === undefined) return undefined;
  if (keyNodes == null) return fn(obj);
  const keys = Object.keys(keyNodes);
  if (keys.length === 1 && keys[0] === '*') {
    const acc: any = Array.isArray(obj) ? [] : {};
    for (const [k, v] of Object.entries(obj ?? {}))
      if (typeof v !== 'function') acc[k] = processKeys(v, fn, keyNodes['*']);
    return acc;
  }
  if (keys.length === 0) {
    if (Array.isArray(obj))
      return obj.filter((x) => typeof x !== 'function').map((x) => processKeys(x, fn, null));
    const acc: any = {};
    for (const [k, v] of Object.entries(obj)) {
      if (typeof v === 'function') continue;
      const p = processKeys(v, fn, null);
      if (p !== undefined && typeof p !== 'function') acc[k] = p;
    }
    return acc;
  }
  const acc: any = Array.isArray(obj) ? obj.filter((x) => typeof x !== 'function') : {};
  if (!Array.isArray(obj)) for (const [k, v] of Object.entries(obj)) if (typeof v !== 'function') acc[k] = v;
  for (const [k, nodes] of Object.entries(keyNodes)) {
    if (typeof obj[k] === 'function') continue;
    const p = processKeys(obj[k], fn, nodes);
    if (p !== undefined && typeof p !== 'function') acc[k] = p;
  }
  return acc;
}
const marshallFn = (v: any) => marshall(v, marshallOptions);
const unmarshallFn = (v: any) => unmarshall(v, unmarshallOptions);
const dropUndefined = (o: Record<string, unknown>) => {
  for (const k in o) if (o[k] === undefined) delete o[k];
  return o;
};

/**
 * A document client on a StoreCall: accepts the @aws-sdk/lib-dynamodb commands the service sends
 * (and the low-level client-dynamodb ones), and answers as the SDK does.
 */
export function storeDocumentClient(call: StoreCall): DynamoDBDocumentClient {
  let seq = 0;
  const prefix = randomBytes(6).toString('hex').toUpperCase();
  const client = {
    async send(command: DocumentCommand) {
      const low = command.clientCommand ?? command;
      const operation = low.constructor.name.replace(/Command$/, '');
      const input = dropUndefined(
        command.clientCommand
          ? processKeys(command.input, marshallFn, command.inputKeyNodes)
          : { ...command.input },
      );
      const requestId = `${prefix}${(++seq).toString(36).toUpperCase()}`;
      const answer = await call(operation, input);
      if ('error' in answer) throw sdkError(answer.error, requestId);
      const out = fromWire(answer.output);
      const output = command.clientCommand ? processKeys(out, unmarshallFn, command.outputKeyNodes) : out;
      return {
        ...output,
        $metadata: { httpStatusCode: 200, requestId, attempts: 1, totalRetryDelay: 0 },
      };
    },
    destroy() {},
  };
  return client as unknown as DynamoDBDocumentClient;
}

type PortRequest = { id: number; operation: string; input: Record<string, unknown> };
type PortReply = { id: number; answer?: StoreAnswer; crash?: string };

/** Answers the store calls arriving on `port` (the main thread's side of an instance's channel). */
export function serveStorePort(port: MessagePort, call: StoreCall): void {
  port.on('message', (m: PortRequest) => {
    call(m.operation, m.input).then(
      (answer) => port.postMessage({ id: m.id, answer } satisfies PortReply),
      (e) => port.postMessage({ id: m.id, crash: String((e as Error)?.stack ?? e) } satisfies PortReply),
    );
  });
}

/** A StoreCall that sends its calls over `port` to a `serveStorePort` (an instance's side). */
export function portStoreCall(port: MessagePort): StoreCall {
  let next = 0;
  const pending = new Map<number, { resolve(a: StoreAnswer): void; reject(e: Error): void }>();
  port.on('message', (m: PortReply) => {
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
      port.postMessage({ id, operation, input } satisfies PortRequest);
    });
}
