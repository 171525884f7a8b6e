import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  BatchWriteCommand,
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTable } from '../../infra/local/store';
import {
  type DirectStore,
  openDirectStore,
  portStoreCall,
  serveStorePort,
} from '../../infra/local/store-client';
import { DocumentClient, type Operation } from '../../shared/platform/db/document';
import { httpStoreCall } from '../../shared/platform/db/http-call';

/**
 * The service's document client (shared/platform/db/document.ts) must answer exactly as the AWS SDK's
 * (@aws-sdk/lib-dynamodb) does against dynalite's own HTTP server, on each of its transports: signed
 * HTTP to another dynalite server (what AWS gets), the local runtime's direct in-process store, and that
 * store over a MessagePort. The same commands run through every path (each on its own fresh store with
 * the service's table) and their outputs and errors are compared. dynalite's own servers keep LevelDB;
 * the direct stores run on the local runtime's storage (infra/local/durable-level.cjs), so this also
 * compares the two storages. dynalite is imported after store-client (which must load first).
 */
const TABLE = 'loupe-transport-test';
const dirs: string[] = [];
let sdkServer: Server;
let sdk: DynamoDBDocumentClient;
let sdkLow: DynamoDBClient;
let sdkEndpoint: string;
let direct: DirectStore;
let viaPort: DirectStore;
let httpServer: Server;
let httpEndpoint: string;
const channel = new MessageChannel();

beforeAll(async () => {
  const a = mkdtempSync(join(tmpdir(), 'loupe-transport-sdk-'));
  const b = mkdtempSync(join(tmpdir(), 'loupe-transport-direct-'));
  const c = mkdtempSync(join(tmpdir(), 'loupe-transport-port-'));
  const d = mkdtempSync(join(tmpdir(), 'loupe-transport-http-'));
  dirs.push(a, b, c, d);
  const { default: dynalite } = await import('dynalite');
  httpServer = dynalite({ path: d, createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((r) => httpServer.listen(0, '127.0.0.1', () => r()));
  httpEndpoint = `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}`;
  await ensureTable(httpEndpoint, TABLE);
  sdkServer = dynalite({ path: a, createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((r) => sdkServer.listen(0, '127.0.0.1', () => r()));
  const endpoint = `http://127.0.0.1:${(sdkServer.address() as AddressInfo).port}`;
  sdkEndpoint = endpoint;
  await ensureTable(endpoint, TABLE);
  sdkLow = new DynamoDBClient({
    endpoint,
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  sdk = DynamoDBDocumentClient.from(sdkLow, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
  direct = await openDirectStore(b);
  await ensureTable(direct.endpoint, TABLE);
  viaPort = await openDirectStore(c);
  await ensureTable(viaPort.endpoint, TABLE);
  serveStorePort(channel.port1, viaPort.call);
});

afterAll(async () => {
  sdk?.destroy();
  channel.port1.close();
  await new Promise<void>((r) => sdkServer.close(() => r()));
  await new Promise<void>((r) => httpServer.close(() => r()));
  await direct?.close();
  await viaPort?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

type Outcome = { ok: unknown } | { error: Record<string, unknown> };

/** What a caller can observe of an answer: the output (request ids differ), or the error's class and fields. */
function outcome(p: Promise<unknown>): Promise<Outcome> {
  return p.then(
    (out) => {
      const { $metadata, ...rest } = out as { $metadata: Record<string, unknown> };
      return {
        ok: {
          ...rest,
          $metadata: { httpStatusCode: $metadata.httpStatusCode, attempts: $metadata.attempts },
        },
      };
    },
    (e) => {
      const err = e as Error & Record<string, any>;
      const members: Record<string, unknown> = {};
      for (const k of Object.keys(err))
        if (!['$metadata', '$response', 'stack'].includes(k)) members[k] = err[k];
      return {
        error: {
          name: err.name,
          message: err.message,
          fault: err.$fault,
          status: err.$metadata?.httpStatusCode,
          isError: err instanceof Error,
          members,
        },
      };
    },
  );
}

/** The operation and document input of a lib-dynamodb (or client-dynamodb) command object. */
function asCall(command: { input: Record<string, unknown>; constructor: { name: string } }) {
  return [
    command.constructor.name
      .replace(/Command$/, '')
      .replace(/^(Get|Put|Update|Delete)$/, '$1Item')
      .replace(/^BatchWrite$/, 'BatchWriteItem') as Operation,
    command.input,
  ] as const;
}

const clients = () => ({
  direct: new DocumentClient(direct.call),
  port: new DocumentClient(portStoreCall(channel.port2)),
  http: new DocumentClient(
    httpStoreCall({
      endpoint: httpEndpoint,
      region: 'local',
      credentials: async () => ({ accessKeyId: 'local', secretAccessKey: 'local' }),
      maxAttempts: 1,
    }),
  ),
});

/**
 * Runs `command()` (a fresh command object each time) through the SDK, and through the service's
 * document client on the direct store, over the port, and over signed HTTP.
 */
async function same(command: () => any): Promise<Outcome> {
  const bySdk = await outcome(sdk.send(command()));
  for (const [path, client] of Object.entries(clients())) {
    const got = await outcome(client.send(...asCall(command())));
    expect({ path, ...got }).toEqual({ path, ...bySdk });
  }
  return bySdk;
}

const item = {
  pk: 'ORG#1',
  sk: 'ITEM#1',
  gsi1pk: 'G#1',
  gsi1sk: 'A',
  name: 'Ünïcødé ✓',
  count: 3,
  ratio: 0.125,
  big: 9007199254740991,
  negative: -42,
  yes: true,
  no: false,
  nothing: null,
  list: [1, 'two', { three: [3] }, null],
  map: { nested: { deep: 'x', n: 1.5 }, empty: {} },
  emptyList: [],
  tags: new Set(['a', 'b']),
  numbers: new Set([1, 2]),
  bytes: new Uint8Array([0, 1, 2, 250, 255]),
  byteSet: new Set([new Uint8Array([1]), new Uint8Array([2, 3])]),
  skipped: undefined,
};

describe('document client (signed HTTP, direct store, over a MessagePort) vs the AWS SDK over HTTP', () => {
  it('puts and gets items with every attribute type, and a missing item', async () => {
    await same(() => new PutCommand({ TableName: TABLE, Item: item }));
    const got = await same(
      () => new GetCommand({ TableName: TABLE, Key: { pk: 'ORG#1', sk: 'ITEM#1' }, ConsistentRead: true }),
    );
    expect((got as { ok: { Item: Record<string, unknown> } }).ok.Item.bytes).toEqual(
      new Uint8Array([0, 1, 2, 250, 255]),
    );
    await same(
      () => new GetCommand({ TableName: TABLE, Key: { pk: 'ORG#1', sk: 'none' }, ConsistentRead: true }),
    );
    await same(
      () =>
        new GetCommand({
          TableName: TABLE,
          Key: { pk: 'ORG#1', sk: 'ITEM#1' },
          ProjectionExpression: '#n, #m.nested.deep, #l[2]',
          ExpressionAttributeNames: { '#n': 'name', '#m': 'map', '#l': 'list' },
        }),
    );
  });

  it('reports failed conditions as ConditionalCheckFailedException, with the item when asked', async () => {
    const failed = await same(
      () => new PutCommand({ TableName: TABLE, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }),
    );
    expect((failed as { error: { name: string } }).error.name).toBe('ConditionalCheckFailedException');
    await same(
      () =>
        new PutCommand({
          TableName: TABLE,
          Item: { pk: 'ORG#1', sk: 'ITEM#1', v: 1 },
          ConditionExpression: 'attribute_not_exists(pk)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
    );
    await same(
      () =>
        new DeleteCommand({
          TableName: TABLE,
          Key: { pk: 'ORG#1', sk: 'gone' },
          ConditionExpression: 'attribute_exists(pk)',
        }),
    );
    await same(
      () =>
        new UpdateCommand({
          TableName: TABLE,
          Key: { pk: 'ORG#1', sk: 'ITEM#1' },
          UpdateExpression: 'SET #c = :c',
          ConditionExpression: '#c = :old',
          ExpressionAttributeNames: { '#c': 'count' },
          ExpressionAttributeValues: { ':c': 4, ':old': 99 },
          ReturnValues: 'ALL_NEW',
        }),
    );
  });

  it('updates: counters, ALL_NEW / UPDATED_NEW / ALL_OLD, REMOVE, list append', async () => {
    for (let i = 0; i < 2; i++)
      await same(
        () =>
          new UpdateCommand({
            TableName: TABLE,
            Key: { pk: 'ORG#1', sk: 'COUNTER' },
            UpdateExpression: 'ADD #a :by SET #t = if_not_exists(#t, :t)',
            ExpressionAttributeNames: { '#a': 'n', '#t': 'ttl' },
            ExpressionAttributeValues: { ':by': 1, ':t': 1700000000 },
            ReturnValues: 'UPDATED_NEW',
          }),
      );
    await same(
      () =>
        new UpdateCommand({
          TableName: TABLE,
          Key: { pk: 'ORG#1', sk: 'ITEM#1' },
          UpdateExpression: 'SET #l = list_append(#l, :x), #m.nested.deep = :d REMOVE #no',
          ExpressionAttributeNames: { '#l': 'list', '#m': 'map', '#no': 'no' },
          ExpressionAttributeValues: { ':x': ['more'], ':d': 'y' },
          ReturnValues: 'ALL_NEW',
        }),
    );
    await same(
      () =>
        new PutCommand({
          TableName: TABLE,
          Item: { pk: 'ORG#1', sk: 'ITEM#1', v: 2 },
          ReturnValues: 'ALL_OLD',
        }),
    );
    await same(
      () =>
        new DeleteCommand({ TableName: TABLE, Key: { pk: 'ORG#1', sk: 'ITEM#1' }, ReturnValues: 'ALL_OLD' }),
    );
  });

  it('queries: prefix, order, limit and pagination, filters, the index; batch writes; scan', async () => {
    const puts = Array.from({ length: 12 }, (_, i) => ({
      PutRequest: {
        Item: {
          pk: 'ORG#2',
          sk: `H#${String(i).padStart(3, '0')}`,
          gsi1pk: 'G#2',
          gsi1sk: `S#${i % 3}`,
          i,
          odd: i % 2 === 1,
        },
      },
    }));
    await same(() => new BatchWriteCommand({ RequestItems: { [TABLE]: puts } }));
    const page = await same(
      () =>
        new QueryCommand({
          TableName: TABLE,
          KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :p)',
          ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk' },
          ExpressionAttributeValues: { ':pk': 'ORG#2', ':p': 'H#' },
          ScanIndexForward: false,
          Limit: 5,
          ConsistentRead: true,
        }),
    );
    const last = (page as { ok: { LastEvaluatedKey: Record<string, unknown> } }).ok.LastEvaluatedKey;
    expect(last).toBeDefined();
    await same(
      () =>
        new QueryCommand({
          TableName: TABLE,
          KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :lo AND :hi',
          FilterExpression: '#odd = :t',
          ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk', '#odd': 'odd' },
          ExpressionAttributeValues: { ':pk': 'ORG#2', ':lo': 'H#002', ':hi': 'H#010', ':t': true },
          ExclusiveStartKey: last,
        }),
    );
    await same(
      () =>
        new QueryCommand({
          TableName: TABLE,
          IndexName: 'gsi1',
          KeyConditionExpression: 'gsi1pk = :g',
          ExpressionAttributeValues: { ':g': 'G#2' },
        }),
    );
    await same(
      () =>
        new BatchWriteCommand({
          RequestItems: {
            [TABLE]: puts.slice(0, 4).map((p) => ({
              DeleteRequest: { Key: { pk: p.PutRequest.Item.pk, sk: p.PutRequest.Item.sk } },
            })),
          },
        }),
    );
    await same(() => new ScanCommand({ TableName: TABLE }));
  });

  it('answers invalid requests with the same errors (validation, missing table, item too large)', async () => {
    const bad = await same(
      () =>
        new UpdateCommand({
          TableName: TABLE,
          Key: { pk: 'ORG#1', sk: 'X' },
          UpdateExpression: 'SET #a = :missing',
          ExpressionAttributeNames: { '#a': 'a' },
          ExpressionAttributeValues: { ':other': 1 },
        }),
    );
    expect((bad as { error: { name: string; fault: string } }).error).toMatchObject({
      name: 'ValidationException',
      fault: 'client',
    });
    await same(() => new GetCommand({ TableName: TABLE, Key: { pk: 'ORG#1' } }));
    await same(
      () =>
        new GetCommand({
          TableName: TABLE,
          Key: { pk: 'ORG#1', sk: 'ITEM#1' },
          ProjectionExpression: 'list[2]',
        }),
    );
    await same(() => new GetCommand({ TableName: TABLE, Key: { pk: '', sk: 'x' } }));
    const missing = await same(
      () => new GetCommand({ TableName: 'no-such-table', Key: { pk: 'a', sk: 'b' } }),
    );
    expect((missing as { error: { name: string } }).error.name).toBe('ResourceNotFoundException');
    await same(
      () =>
        new PutCommand({ TableName: TABLE, Item: { pk: 'ORG#1', sk: 'BIG', blob: 'x'.repeat(410 * 1024) } }),
    );
    await same(
      () =>
        new QueryCommand({
          TableName: TABLE,
          KeyConditionExpression: 'nope = :g',
          ExpressionAttributeValues: { ':g': 'G#2' },
        }),
    );
  });

  it('forgets a table deleted after it was used (the direct store keeps active table definitions in memory)', async () => {
    const extra = 'loupe-transport-extra';
    for (const endpoint of [sdkEndpoint, direct.endpoint, viaPort.endpoint, httpEndpoint])
      await ensureTable(endpoint, extra);
    await same(() => new PutCommand({ TableName: extra, Item: { pk: 'a', sk: 'b' } }));
    await same(() => new GetCommand({ TableName: extra, Key: { pk: 'a', sk: 'b' } }));
    // Table operations answer timestamps the SDK turns into Dates: the service sends them only through the
    // SDK (ensureTable), so they are compared on their effect only.
    await sdkLow.send(new DeleteTableCommand({ TableName: extra }));
    for (const client of Object.values(clients())) await client.send('DeleteTable', { TableName: extra });
    const gone = await same(() => new GetCommand({ TableName: extra, Key: { pk: 'a', sk: 'b' } }));
    expect((gone as { error: { name: string } }).error.name).toBe('ResourceNotFoundException');
  });
});
