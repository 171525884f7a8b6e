/**
 * The host policy on every driver: deployed, loopback and link-local hosts are refused before any
 * connection (the same answer whether the port is open or closed), locally they connect, and an
 * operator allow list lets a name through the connect-time check (the adapters' lookup hooks).
 */
import { createServer, type Server } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { closeAllDrivers } from '../../shared/databases/drivers/index';
import type { ConnectionTarget, DbType } from '../../shared/databases/drivers/types';
import { runReadOnly } from '../../shared/databases/run';
import { resetConfig } from '../../shared/platform/config';
import { freePort } from '../support/databases';
import { failure } from '../support/drivers';
import { type MongoWireServer, startMongoWire } from '../support/mongo-wire';
import { startTdsWire, type TdsWireServer } from '../support/tds-wire';

const pg = inject('postgres');
const maria = inject('mariadb');
const setEnv = (vars: Record<string, string | undefined>) => {
  for (const [k, v] of Object.entries(vars)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  resetConfig();
};
let n = 0;
let tds: TdsWireServer;
let mongo: MongoWireServer;
let listener: Server;
let accepted = 0;
let listenerPort: number;

beforeAll(async () => {
  tds = await startTdsWire({
    users: { reporter: 'pw' },
    databases: ['sales'],
    respond: (q) =>
      q === 'SELECT 1 AS x' ? { columns: [{ name: 'x', type: 'int' }], rows: [[1]] } : undefined,
  });
  mongo = await startMongoWire({ collections: { orders: [{ _id: 1 }] } });
  listener = createServer((s) => {
    accepted++;
    s.destroy();
  });
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', () => r()));
  listenerPort = (listener.address() as { port: number }).port;
});
afterEach(async () => {
  await closeAllDrivers();
  setEnv({
    LOUPE_DB_HOST_POLICY: undefined,
    LOUPE_DB_ALLOW_CIDRS: undefined,
    LOUPE_DB_DENY_CIDRS: undefined,
  });
});
afterAll(async () => {
  await tds.stop();
  await mongo.stop();
  listener.close();
});

const target = (type: DbType, over: Partial<ConnectionTarget> = {}): ConnectionTarget => {
  const base: Record<string, Partial<ConnectionTarget>> = {
    POSTGRES: { port: pg.port, database: pg.database, username: pg.user, password: pg.password },
    MARIADB: {
      port: maria?.port ?? 3306,
      database: maria?.database ?? '',
      username: maria?.user ?? '',
      password: maria?.password ?? '',
    },
    MSSQL: { port: tds.port, database: 'sales', username: 'reporter', password: 'pw' },
    MONGODB: { port: mongo.port, database: 'shop', username: '', password: '' },
  };
  return {
    id: `hp-${type}-${++n}`,
    version: '1',
    type,
    host: '127.0.0.1',
    port: null,
    database: '',
    username: '',
    password: '',
    sslEnabled: false,
    ...base[type],
    ...over,
  };
};
const probe = (type: DbType) =>
  type === 'MONGODB' ? '{"collection": "orders", "filter": {}}' : 'SELECT 1 AS x';
const types: DbType[] = ['POSTGRES', ...(maria ? (['MARIADB'] as DbType[]) : []), 'MSSQL', 'MONGODB'];
const strip = (e: { status: number; code: string; message: string; details?: unknown }, host: string) =>
  JSON.stringify({ s: e.status, c: e.code, m: e.message, d: e.details }).replaceAll(host, 'H');

describe('deployed: hosts resolving to loopback, link-local, unspecified or multicast are refused', () => {
  const hosts = [
    '127.0.0.1',
    'localhost',
    '::ffff:127.0.0.1',
    '2130706433',
    '0x7f.1',
    '127.1',
    '::1',
    '169.254.169.254',
    'fd00:ec2::254',
    '0.0.0.0',
    '224.0.0.1',
  ];
  for (const type of types)
    for (const host of hosts)
      it(`${type} host ${host}: 422 CONNECTION_FAILED "Database host not allowed", nothing dialled`, async () => {
        setEnv({ LOUPE_DB_HOST_POLICY: 'deployed' });
        const before = accepted;
        const e = await failure(runReadOnly(target(type, { host, port: listenerPort }), probe(type)));
        expect(e.status).toBe(422);
        expect(e.code).toBe('CONNECTION_FAILED');
        const d = (e.details as { diagnosis: { title: string; stage: string; fixSteps: string[] } })
          .diagnosis;
        expect(d).toMatchObject({ stage: 'CONNECT', title: 'Database host not allowed' });
        expect(d.fixSteps.join(' ')).toContain(host);
        expect(accepted).toBe(before);
      });

  for (const type of types)
    it(`${type}: the answer is identical for an open port, a closed port and the API's own kind of listener`, async () => {
      setEnv({ LOUPE_DB_HOST_POLICY: 'deployed' });
      const closed = await freePort();
      const answers = [];
      for (const port of [listenerPort, closed, pg.port])
        answers.push(strip(await failure(runReadOnly(target(type, { port }), probe(type))), '127.0.0.1'));
      expect(new Set(answers).size).toBe(1);
    });
});

describe('locally: loopback connects; operator CIDRs', () => {
  for (const type of types)
    it(`${type} on 127.0.0.1 works locally and is refused with LOUPE_DB_DENY_CIDRS=127.0.0.0/8`, async () => {
      setEnv({ LOUPE_DB_HOST_POLICY: 'local' });
      const ok = await runReadOnly(target(type), probe(type));
      expect(ok.rows.length).toBeGreaterThan(0);
      await closeAllDrivers();
      setEnv({ LOUPE_DB_HOST_POLICY: 'local', LOUPE_DB_DENY_CIDRS: '127.0.0.0/8' });
      const e = await failure(runReadOnly(target(type), probe(type)));
      expect(e.code).toBe('CONNECTION_FAILED');
    });

  for (const type of types)
    it(`${type}: deployed with LOUPE_DB_ALLOW_CIDRS, the name "localhost" connects through the checked lookup`, async () => {
      setEnv({ LOUPE_DB_HOST_POLICY: 'deployed', LOUPE_DB_ALLOW_CIDRS: '127.0.0.0/8,::1/128' });
      const r = await runReadOnly(target(type, { host: 'localhost' }), probe(type));
      expect(r.rows.length).toBeGreaterThan(0);
    });
});
