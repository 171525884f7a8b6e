/**
 * The local store's storage (infra/local/durable-level.cjs): items in memory, every write in a log file
 * before it applies. What LevelDB guaranteed must still hold: what was answered survives a stop, a killed
 * process and a reopen; a write cut short by a crash is dropped, damage elsewhere is reported; one process
 * at a time; the log is compacted into snapshots without losing a write made meanwhile; a store written
 * by LevelDB (before this storage) is read once and kept aside. (That the answers equal dynalite's on
 * LevelDB, operation by operation, is test/integration/local-store-transport.test.ts.)
 */
import {
  appendFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureTable, startStoreProcess } from '../../infra/local/store';
import { type DirectStore, openDirectStore } from '../../infra/local/store-client';
import { DocumentClient } from '../../shared/platform/db/document';
import { httpStoreCall } from '../../shared/platform/db/http-call';

const require = createRequire(import.meta.url);
const { settings, LOCK, IN_TURN } = require('../../infra/local/durable-level.cjs') as {
  settings: { compactMinBytes: number };
  LOCK: string;
  IN_TURN: number;
};

const TABLE = 'loupe-storage-test';
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'loupe-storage-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function open(dir: string): Promise<{ store: DirectStore; doc: DocumentClient }> {
  const store = await openDirectStore(dir);
  await ensureTable(store.endpoint, TABLE);
  return { store, doc: new DocumentClient(store.call) };
}
const get = async (doc: DocumentClient, pk: string, sk: string) =>
  (await doc.send('GetItem', { TableName: TABLE, Key: { pk, sk }, ConsistentRead: true })).Item;
const page = async (doc: DocumentClient, pk: string) =>
  (
    await doc.send('Query', {
      TableName: TABLE,
      KeyConditionExpression: 'pk = :p',
      ExpressionAttributeValues: { ':p': pk },
    })
  ).Items as Record<string, unknown>[];
const files = (dir: string) => readdirSync(join(dir, 'dynamodb')).sort();
const until = async (check: () => boolean) => {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  return check();
};

describe('local store storage', () => {
  it('keeps every answered write across a stop and a reopen: puts, updates, deletes, batches', async () => {
    const dir = tempDir();
    let { store, doc } = await open(dir);
    await doc.send('PutItem', { TableName: TABLE, Item: { pk: 'A', sk: '1', n: 1, tags: new Set(['x']) } });
    await doc.send('PutItem', { TableName: TABLE, Item: { pk: 'A', sk: '2', gone: true } });
    await doc.send('UpdateItem', {
      TableName: TABLE,
      Key: { pk: 'A', sk: '1' },
      UpdateExpression: 'ADD n :one SET label = :l',
      ExpressionAttributeValues: { ':one': 41, ':l': 'é "quoted"\n line' },
    });
    await doc.send('DeleteItem', { TableName: TABLE, Key: { pk: 'A', sk: '2' } });
    await doc.send('BatchWriteItem', {
      RequestItems: {
        [TABLE]: Array.from({ length: 20 }, (_, i) => ({
          PutRequest: { Item: { pk: 'B', sk: String(i).padStart(3, '0'), i } },
        })),
      },
    });
    const before = { a: await page(doc, 'A'), b: await page(doc, 'B') };
    await store.close();
    ({ store, doc } = await open(dir));
    expect(await page(doc, 'A')).toEqual(before.a);
    expect(await page(doc, 'B')).toEqual(before.b);
    expect(await get(doc, 'A', '1')).toEqual({
      pk: 'A',
      sk: '1',
      n: 42,
      tags: new Set(['x']),
      label: 'é "quoted"\n line',
    });
    expect(await get(doc, 'A', '2')).toBeUndefined();
    expect((await page(doc, 'B')).map((x) => x.i)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    await store.close();
  });

  it('answers item operations without waiting for turns of the event loop, with the same results and errors', async () => {
    const { store, doc } = await open(tempDir());
    // Resolves with whether `op` settled before a setImmediate queued with it ran (no loop turn taken).
    const inTurn = async (op: () => Promise<unknown>) => {
      let turned = false;
      setImmediate(() => {
        turned = true;
      });
      const out = await op().then(
        (v) => ({ ok: v }),
        (e: Error) => ({ err: e.name }),
      );
      return { turned, out };
    };
    const item = { pk: 'T', sk: '1', gsi1pk: 'ACTIVE', gsi1sk: 'T#1', n: 1 };
    await doc.send('PutItem', { TableName: TABLE, Item: item }); // the table's definition cached
    // A put, an update that rewrites the index entry, a failed condition, a get, a delete and a batch.
    const ops: [string, () => Promise<unknown>][] = [
      ['put', () => doc.send('PutItem', { TableName: TABLE, Item: { ...item, sk: '2' } })],
      [
        'update',
        () =>
          doc.send('UpdateItem', {
            TableName: TABLE,
            Key: { pk: 'T', sk: '1' },
            UpdateExpression: 'ADD n :one',
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeValues: { ':one': 1 },
            ReturnValues: 'ALL_NEW',
          }),
      ],
      [
        'failed condition',
        () =>
          doc.send('PutItem', {
            TableName: TABLE,
            Item: item,
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
      ],
      ['get', () => get(doc, 'T', '1')],
      ['delete', () => doc.send('DeleteItem', { TableName: TABLE, Key: { pk: 'T', sk: '2' } })],
      [
        'batch',
        () =>
          doc.send('BatchWriteItem', {
            RequestItems: { [TABLE]: [{ PutRequest: { Item: { pk: 'T', sk: '3' } } }] },
          }),
      ],
    ];
    const seen: Record<string, unknown> = {};
    for (const [name, op] of ops) {
      const { turned, out } = await inTurn(op);
      expect(turned, name).toBe(false);
      seen[name] = out;
    }
    expect((seen.update as { ok: { Attributes: unknown } }).ok.Attributes).toEqual({ ...item, n: 2 });
    expect(seen['failed condition']).toEqual({ err: 'ConditionalCheckFailedException' });
    expect(seen.get).toEqual({ ok: { ...item, n: 2 } });
    const byIndex = await doc.send('Query', {
      TableName: TABLE,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :p',
      ExpressionAttributeValues: { ':p': 'ACTIVE' },
    });
    expect(byIndex.Items).toEqual([{ ...item, n: 2 }]);
    await store.close();
  });

  it('lets the event loop turn during a long run of operations (a caller cannot hold the thread)', async () => {
    const { store, doc } = await open(tempDir());
    await doc.send('PutItem', { TableName: TABLE, Item: { pk: 'L', sk: 'warm' } });
    let turns = 0;
    let done = false;
    const count = () => {
      if (done) return;
      turns++;
      setImmediate(count);
    };
    setImmediate(count);
    for (let i = 0; i < 10 * IN_TURN; i++)
      await doc.send('PutItem', { TableName: TABLE, Item: { pk: 'L', sk: String(i).padStart(4, '0') } });
    done = true;
    // Each turn of the loop lets at most IN_TURN answers through without another: 10 × IN_TURN puts (two
    // or three answers each) take more than ten turns.
    expect(turns).toBeGreaterThanOrEqual(10);
    expect(await page(doc, 'L')).toHaveLength(10 * IN_TURN + 1);
    await store.close();
  });

  it('keeps what was answered when its process is killed, and takes over the lock it left', async () => {
    const dir = tempDir();
    const child = await startStoreProcess(dir, TABLE);
    const doc = new DocumentClient(
      httpStoreCall({
        endpoint: child.endpoint,
        region: 'local',
        credentials: async () => ({ accessKeyId: 'local', secretAccessKey: 'local' }),
      }),
    );
    for (let i = 0; i < 50; i++)
      await doc.send('UpdateItem', {
        TableName: TABLE,
        Key: { pk: 'C', sk: 'counter' },
        UpdateExpression: 'ADD n :one',
        ExpressionAttributeValues: { ':one': 1 },
      });
    // While it lives, the store is its own: another open fails and names the process.
    await expect(openDirectStore(dir)).rejects.toThrow(new RegExp(`in use by process ${child.pid}`));
    process.kill(child.pid!, 'SIGKILL'); // no close: the lock file stays, the log is not synced
    await until(() => {
      try {
        process.kill(child.pid!, 0);
        return false;
      } catch {
        return true;
      }
    });
    await child.close();
    expect(existsSync(join(dir, 'dynamodb', LOCK))).toBe(true);
    const { store, doc: again } = await open(dir);
    expect(await get(again, 'C', 'counter')).toEqual({ pk: 'C', sk: 'counter', n: 50 });
    await store.close();
    expect(existsSync(join(dir, 'dynamodb', LOCK))).toBe(false);
  });

  it('opens once per process at a time', async () => {
    const dir = tempDir();
    const { store } = await open(dir);
    await expect(openDirectStore(dir)).rejects.toThrow(/already open in this process/);
    await store.close();
    const { store: again } = await open(dir);
    await again.close();
  });

  it('drops a last write cut short by a crash, and refuses to open a log damaged anywhere else', async () => {
    const dir = tempDir();
    let { store, doc } = await open(dir);
    await doc.send('PutItem', { TableName: TABLE, Item: { pk: 'D', sk: '1', ok: true } });
    await store.close();
    const log = join(dir, 'dynamodb', files(dir).find((f) => f.startsWith('log-'))!);
    const whole = readFileSync(log, 'utf8');
    appendFileSync(log, '["p","item-loupe-storage-test~half'); // what a process killed mid-write leaves
    ({ store, doc } = await open(dir));
    expect(await get(doc, 'D', '1')).toEqual({ pk: 'D', sk: '1', ok: true });
    expect(readFileSync(log, 'utf8')).toBe(whole); // the cut line is gone, appends start clean
    await doc.send('PutItem', { TableName: TABLE, Item: { pk: 'D', sk: '2', ok: true } });
    await store.close();
    ({ store, doc } = await open(dir));
    expect(await get(doc, 'D', '2')).toEqual({ pk: 'D', sk: '2', ok: true });
    await store.close();

    const lines = readFileSync(log, 'utf8').split('\n');
    lines[1] = '{not json';
    writeFileSync(log, lines.join('\n'));
    await expect(openDirectStore(dir)).rejects.toThrow(/damaged at line 2/);
    // The failed open released the store.
    expect(existsSync(join(dir, 'dynamodb', LOCK))).toBe(false);
  });

  it('compacts the log into a snapshot while writes go on, and loses none of them', async () => {
    const dir = tempDir();
    const was = settings.compactMinBytes;
    settings.compactMinBytes = 64 * 1024;
    try {
      let { store, doc } = await open(dir);
      const writes: Promise<unknown>[] = [];
      for (let i = 0; i < 600; i++) {
        writes.push(
          doc.send('PutItem', {
            TableName: TABLE,
            Item: { pk: 'E', sk: String(i).padStart(4, '0'), body: 'x'.repeat(200 + (i % 7)) },
          }),
        );
        if (i % 50 === 49) await Promise.all(writes.splice(0));
      }
      await Promise.all(writes);
      await store.close(); // waits for a snapshot under way
      const names = files(dir);
      expect(names.some((n) => /^snapshot-\d+\.jsonl$/.test(n))).toBe(true);
      expect(names.filter((n) => n.endsWith('.tmp'))).toEqual([]);
      // Only the newest snapshot and the logs from its number on are kept.
      const snapshot = Math.max(
        ...names
          .map((n) => /^snapshot-(\d+)/.exec(n)?.[1])
          .filter(Boolean)
          .map(Number),
      );
      expect(names.filter((n) => /^log-/.test(n)).every((n) => Number(/\d+/.exec(n)![0]) >= snapshot)).toBe(
        true,
      );
      ({ store, doc } = await open(dir));
      const items = await page(doc, 'E');
      expect(items.length).toBe(600);
      expect(items[599]).toEqual({ pk: 'E', sk: '0599', body: 'x'.repeat(200 + (599 % 7)) });
      await store.close();
    } finally {
      settings.compactMinBytes = was;
    }
  });

  it("reads a store LevelDB wrote (before this storage) once, and keeps LevelDB's files aside", async () => {
    const dir = tempDir();
    const { default: dynalite } = await import('dynalite');
    const server = dynalite({
      path: join(dir, 'dynamodb'),
      createTableMs: 0,
      deleteTableMs: 0,
      updateTableMs: 0,
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    await ensureTable(endpoint, TABLE);
    const old = new DocumentClient(
      httpStoreCall({
        endpoint,
        region: 'local',
        credentials: async () => ({ accessKeyId: 'local', secretAccessKey: 'local' }),
      }),
    );
    for (let i = 0; i < 30; i++)
      await old.send('PutItem', { TableName: TABLE, Item: { pk: 'F', sk: String(i).padStart(2, '0'), i } });
    await old.send('PutItem', {
      TableName: TABLE,
      Item: { pk: 'G', sk: 'x', m: { deep: [1, 'two', null] } },
    });
    const before = await page(old, 'F');
    old.destroy();
    await new Promise<void>((r, j) => server.close((e?: Error) => (e ? j(e) : r())));
    expect(files(dir)).toContain('CURRENT');

    const { store, doc } = await open(dir);
    expect(await page(doc, 'F')).toEqual(before);
    expect(await get(doc, 'G', 'x')).toEqual({ pk: 'G', sk: 'x', m: { deep: [1, 'two', null] } });
    const names = files(dir);
    expect(names).not.toContain('CURRENT');
    const aside = names.find((n) => n.startsWith('leveldb-before-'));
    expect(aside).toBeTruthy();
    expect(readdirSync(join(dir, 'dynamodb', aside!))).toContain('CURRENT');
    await store.close();
  });
});
