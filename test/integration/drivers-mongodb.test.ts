/**
 * The MongoDB adapter driven through the real `mongodb` driver: always against the wire-level test
 * server (test/support/mongo-wire.ts), and against a real MongoDB when MONGODB_URL is set.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { BSON, MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Diagnosis, diagnose } from '../../shared/databases/diagnosis';
import { closeAllDrivers, driverFor, unpooledDriver } from '../../shared/databases/drivers/index';
import type { ConnectionTarget } from '../../shared/databases/drivers/types';
import { runReadOnly } from '../../shared/databases/run';
import { freePort } from '../support/databases';
import { failure, pingError } from '../support/drivers';
import { type MongoWireServer, startMongoWire } from '../support/mongo-wire';

const oid = new BSON.ObjectId('65f000000000000000000001');
const orders = Array.from({ length: 1200 }, (_, i) => ({
  _id: i === 0 ? oid : new BSON.ObjectId(),
  n: i,
  amount: BSON.Decimal128.fromString('12345678901234567890.125'),
  big: BSON.Long.fromString('9007199254740993'),
  at: new Date('2024-03-01T10:20:30.123Z'),
  raw: new BSON.Binary(Buffer.from([1, 2, 255])),
  customer: { name: `c${i}`, ...(i % 2 ? { vip: true } : {}) },
  ...(i % 3 === 0 ? { note: null } : { note: 'x'.repeat(10) }),
}));

let wire: MongoWireServer;
const target = (over: Partial<ConnectionTarget> = {}): ConnectionTarget => ({
  id: `mongo-wire-${process.pid}`,
  version: '1',
  type: 'MONGODB',
  host: '127.0.0.1',
  port: wire.port,
  database: 'shop',
  username: '',
  password: '',
  sslEnabled: false,
  ...over,
});

const sent = (name: string) => wire.commands.filter((c) => Object.keys(c)[0] === name);

beforeAll(async () => {
  wire = await startMongoWire({
    collections: { orders, customers: [{ _id: 1, name: 'a' }] },
    views: ['big_orders'],
    errors: {
      slow: { code: 50, codeName: 'MaxTimeMSExpired', errmsg: 'operation exceeded time limit' },
      secret: {
        code: 13,
        codeName: 'Unauthorized',
        errmsg: 'not authorized on shop to execute command { find: "secret" }',
      },
    },
  });
});

afterAll(async () => {
  await closeAllDrivers();
  await wire.stop();
});

describe('MongoDB adapter over the wire protocol (real mongodb driver, test server)', () => {
  it('pings and reports the server version', async () => {
    const r = await (await driverFor(target())).ping();
    expect(r.serverVersion).toBe('7.0.0-wire');
    expect(sent('ping').length).toBeGreaterThan(0);
  });

  it('returns ObjectId, Decimal128, Long, dates and binary as JSON strings', async () => {
    const r = await runReadOnly(
      target(),
      '{"collection": "orders", "filter": {"_id": {"$oid": "65f000000000000000000001"}}, "limit": 1}',
    );
    expect(r.rows[0]).toEqual({
      _id: '65f000000000000000000001',
      n: 0,
      amount: '12345678901234567890.125',
      big: '9007199254740993',
      at: '2024-03-01T10:20:30.123Z',
      raw: Buffer.from([1, 2, 255]).toString('base64'),
      customer: { name: 'c0' },
      note: null,
    });
    const find = sent('find').at(-1);
    expect(find?.filter._id).toBeInstanceOf(BSON.ObjectId);
    expect(find?.limit).toBe(1);
    // The server's limit is the statement timeout less the margin kept for the client timer (deadline.ts).
    expect(find?.maxTimeMS).toBeLessThanOrEqual(24_500);
    expect(find?.maxTimeMS).toBeGreaterThan(20_000);
  });

  it('caps find at maxRows + 1 through a cursor (getMore batches) and marks truncated', async () => {
    const before = sent('getMore').length;
    const r = await runReadOnly(target(), '{"collection": "orders", "filter": {}}', { maxRows: 1000 });
    expect(r.rows).toHaveLength(1000);
    expect(r.truncated).toBe(true);
    expect(r.columns).toEqual(['_id', 'n', 'amount', 'big', 'at', 'raw', 'customer', 'note']);
    expect(sent('find').at(-1)?.limit).toBe(1001);
    expect(sent('getMore').length).toBeGreaterThan(before);
  });

  it('appends $limit maxRows + 1 to a pipeline and passes maxTimeMS', async () => {
    const r = await runReadOnly(target(), '{"collection": "orders", "pipeline": [{"$match": {}}]}', {
      maxRows: 10,
      timeoutMs: 3000,
    });
    expect(r.rows).toHaveLength(10);
    expect(r.truncated).toBe(true);
    const agg = sent('aggregate').at(-1);
    expect(agg?.pipeline).toEqual([{ $match: {} }, { $limit: 11 }]);
    expect(agg?.maxTimeMS).toBeLessThanOrEqual(2500);
    expect(agg?.maxTimeMS).toBeGreaterThan(0);
    const all = await runReadOnly(target(), '{"collection": "customers", "pipeline": []}');
    expect(all.rows).toEqual([{ _id: 1, name: 'a' }]);
    expect(all.truncated).toBeUndefined();
  });

  it('stops at the byte cap', async () => {
    const r = await runReadOnly(target(), '{"collection": "orders", "filter": {}}', { maxBytes: 2000 });
    expect(r.rows.length).toBeGreaterThan(0);
    expect(r.rows.length).toBeLessThan(20);
    expect(r.truncated).toBe(true);
  });

  it('infers the schema from a bounded sample, skipping system collections', async () => {
    const s = await (await driverFor(target())).introspect();
    expect(s.tables.map((t) => t.name)).toEqual(['big_orders', 'customers', 'orders']);
    const o = s.tables.find((t) => t.name === 'orders');
    expect(o).toMatchObject({ kind: 'collection', primaryKey: ['_id'], rowEstimate: 1200 });
    expect(o?.columns.find((c) => c.name === 'amount')).toEqual({
      name: 'amount',
      type: 'decimal',
      nullable: false,
      primaryKey: false,
    });
    expect(o?.columns.find((c) => c.name === 'customer.vip')?.nullable).toBe(true);
    expect(o?.columns.find((c) => c.name === 'note')).toMatchObject({ type: 'string', nullable: true });
    expect(s.tables.find((t) => t.name === 'big_orders')?.kind).toBe('view');
    const sample = sent('aggregate').find((c) => c.aggregate === 'orders' && c.pipeline?.[0]?.$sample);
    expect(sample?.pipeline[0].$sample.size).toBe(100);
  });

  it('refuses $out, $merge and server-side JavaScript before any command reaches the server', async () => {
    const before = wire.commands.length;
    for (const q of [
      '{"collection": "orders", "pipeline": [{"$out": "copy"}]}',
      '{"collection": "orders", "pipeline": [{"$facet": {"a": [{"$merge": {"into": "copy"}}]}}]}',
      '{"collection": "orders", "pipeline": [{"$lookup": {"from": "x", "as": "y", "pipeline": [{"$out": "z"}]}}]}',
      '{"collection": "orders", "filter": {"$where": "sleep(100) || true"}}',
    ]) {
      const e = await failure(runReadOnly(target({ id: 'mongo-refuse' }), q));
      expect(e.code).toBe('READ_ONLY_VIOLATION');
    }
    expect(wire.commands.length).toBe(before);
  });

  it('maps MaxTimeMSExpired to 504 QUERY_TIMEOUT', async () => {
    const e = await failure(runReadOnly(target(), '{"collection": "slow", "filter": {}}'));
    expect(e.status).toBe(504);
    expect(e.code).toBe('QUERY_TIMEOUT');
  });

  it('maps a server error to 422 QUERY_FAILED with the code, and Unauthorized to PERMISSION', async () => {
    const e = await failure(runReadOnly(target(), '{"collection": "secret", "filter": {}}'));
    expect(e.code).toBe('QUERY_FAILED');
    expect(e.details).toMatchObject({ code: '13', codeName: 'Unauthorized' });
    const d = await unpooledDriver(target({ id: 'mongo-unauth' }));
    const err = await d
      .query('{"collection": "secret", "filter": {}}', { maxRows: 1, maxBytes: 1e4, timeoutMs: 1000 })
      .catch((x) => x);
    await d.close();
    expect(diagnose(err, target(), 'QUERY')).toMatchObject({ stage: 'PERMISSION', fault: 'user' });
  });

  it('a refused login (code 18) is CONNECTION_FAILED with an AUTH diagnosis naming the user', async () => {
    const t = target({ id: 'mongo-auth', username: 'reporter', password: 'wrong-secret' });
    const e = await failure(runReadOnly(t, '{"collection": "orders", "filter": {}}'));
    expect(e.code).toBe('CONNECTION_FAILED');
    const d = (e.details as { diagnosis: Diagnosis }).diagnosis;
    expect(d).toMatchObject({ stage: 'AUTH', fault: 'user', title: 'Login failed' });
    expect(d.fixSteps.join(' ')).toContain('reporter');
    expect(JSON.stringify(e.details)).not.toContain('wrong-secret');
    expect(sent('saslStart').length).toBeGreaterThan(0);
  });
});

describe('MongoDB connection failures (server selection)', () => {
  let silent: Server;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    silent = createServer((s) => {
      sockets.push(s);
      s.on('error', () => {});
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => silent.close(r));
  });

  it('a closed port is CONNECT / refused', async () => {
    const t = target({ id: 'm-closed', port: await freePort() });
    expect(diagnose(await pingError(t), t)).toMatchObject({ stage: 'CONNECT', title: 'Connection refused' });
  }, 30_000);

  it('an unknown host is RESOLVE', async () => {
    const t = target({ id: 'm-dns', host: 'no-such-mongo.invalid' });
    expect(diagnose(await pingError(t), t)).toMatchObject({ stage: 'RESOLVE', fault: 'user' });
  }, 30_000);

  it('a server that never answers is a server selection TIMEOUT', async () => {
    const t = target({ id: 'm-silent', port: (silent.address() as { port: number }).port });
    expect(diagnose(await pingError(t), t)).toMatchObject({ stage: 'TIMEOUT', fault: 'third-party' });
  }, 30_000);
});

const realUrl = process.env.MONGODB_URL;
describe.skipIf(!realUrl)(
  `MongoDB adapter against a real server ${realUrl ? '(MONGODB_URL)' : '— skipped: MONGODB_URL is not set (no MongoDB server here; the wire-protocol suite above covers the adapter)'}`,
  () => {
    const coll = `drv_orders_${process.pid}_${Date.now().toString(36)}`;
    let client: MongoClient;
    let t: ConnectionTarget;
    beforeAll(async () => {
      const u = new URL(realUrl as string);
      t = {
        id: 'mongo-real',
        version: '1',
        type: 'MONGODB',
        host: `${u.protocol}//${u.host}${u.search}`,
        port: null,
        database: u.pathname.replace(/^\//, '') || 'loupe_test',
        username: decodeURIComponent(u.username),
        password: decodeURIComponent(u.password),
        sslEnabled: u.searchParams.get('tls') === 'true',
      };
      client = new MongoClient(realUrl as string);
      await client.connect();
      await client.db(t.database).collection(coll).insertMany(orders.slice(0, 50));
    });
    afterAll(async () => {
      await client
        ?.db(t.database)
        .collection(coll)
        .drop()
        .catch(() => {});
      await client?.close();
    });

    it('reads, caps and introspects, and refuses $out leaving the database unchanged', async () => {
      const r = await runReadOnly(t, JSON.stringify({ collection: coll, filter: {}, sort: { n: 1 } }), {
        maxRows: 10,
      });
      expect(r.rows).toHaveLength(10);
      expect(r.truncated).toBe(true);
      expect(r.rows[0]).toMatchObject({ n: 0, amount: '12345678901234567890.125', big: '9007199254740993' });
      const s = await (await driverFor(t)).introspect();
      expect(s.tables.find((x) => x.name === coll)?.primaryKey).toEqual(['_id']);
      const e = await failure(
        runReadOnly(t, JSON.stringify({ collection: coll, pipeline: [{ $out: `${coll}_copy` }] })),
      );
      expect(e.code).toBe('READ_ONLY_VIOLATION');
      const names = (await client.db(t.database).listCollections().toArray()).map((c) => c.name);
      expect(names).not.toContain(`${coll}_copy`);
      expect(await client.db(t.database).collection(coll).countDocuments()).toBe(50);
    });
  },
);
