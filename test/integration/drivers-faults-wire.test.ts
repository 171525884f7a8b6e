/**
 * SQL Server, MongoDB and SQLite faults through the real `mssql`/`tedious` and `mongodb` clients, against the
 * protocol-level test servers: a server that closes the connection mid-query (422 CONNECTION_FAILED)
 * and one that never answers (504 QUERY_TIMEOUT from the client timer; a connection test that gets no
 * answer is 422 with a TIMEOUT diagnosis); the SQLite child process killed under a statement (422).
 * The pool serves the next read, and no event goes uncaught.
 * Short deadlines come from the configuration (LOUPE_DB_*_TIMEOUT_MS); nothing here measures time.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { BSON } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionFailed } from '../../shared/databases/diagnosis';
import { dbDeadlines } from '../../shared/databases/drivers/deadline';
import { closeAllDrivers, driverFor } from '../../shared/databases/drivers/index';
import type { ConnectionTarget } from '../../shared/databases/drivers/types';
import { runReadOnly } from '../../shared/databases/run';
import { config, resetConfig } from '../../shared/platform/config';
import { processTree } from '../support/databases';
import { failure } from '../support/drivers';
import { type MongoWireServer, startMongoWire } from '../support/mongo-wire';
import { startTdsWire, type TdsWireServer } from '../support/tds-wire';

const ENV = {
  LOUPE_DB_STATEMENT_TIMEOUT_MS: '2000',
  LOUPE_DB_CONNECT_TIMEOUT_MS: '1000',
  LOUPE_DB_TEST_TIMEOUT_MS: '1500',
};
const uncaught: unknown[] = [];
const onUncaught = (e: unknown) => uncaught.push(e);

beforeAll(() => {
  Object.assign(process.env, ENV);
  resetConfig();
  process.on('uncaughtException', onUncaught);
});
afterAll(async () => {
  await closeAllDrivers();
  process.off('uncaughtException', onUncaught);
  for (const k of Object.keys(ENV)) delete process.env[k];
  resetConfig();
});

describe('deadline settings', () => {
  afterAll(() => {
    Object.assign(process.env, ENV);
    resetConfig();
  });

  it('default to a connect of 10 s, a statement of 25 s and a test of 15 s', () => {
    for (const k of Object.keys(ENV)) delete process.env[k];
    resetConfig();
    expect(dbDeadlines()).toEqual({ connectMs: 10_000, statementMs: 25_000, testMs: 15_000 });
  });

  it.each([
    ['LOUPE_DB_STATEMENT_TIMEOUT_MS', '26000'],
    ['LOUPE_DB_STATEMENT_TIMEOUT_MS', '999'],
    ['LOUPE_DB_STATEMENT_TIMEOUT_MS', 'soon'],
    ['LOUPE_DB_CONNECT_TIMEOUT_MS', '20001'],
    ['LOUPE_DB_CONNECT_TIMEOUT_MS', '1.5'],
    ['LOUPE_DB_TEST_TIMEOUT_MS', '0'],
    ['LOUPE_DB_TEST_TIMEOUT_MS', '25001'],
  ])('refuse %s=%s, naming the variable', (name, value) => {
    process.env[name] = value;
    resetConfig();
    try {
      expect(() => config()).toThrow(name);
    } finally {
      delete process.env[name];
      resetConfig();
    }
  });
});

describe('SQL Server (TDS test server)', () => {
  let tds: TdsWireServer;
  let deafPing = false;
  const t = (over: Partial<ConnectionTarget> = {}): ConnectionTarget => ({
    id: `tds-faults-${process.pid}`,
    version: '1',
    type: 'MSSQL',
    host: '127.0.0.1',
    port: tds.port,
    database: 'sales',
    username: 'reporter',
    password: 'pw',
    sslEnabled: false,
    ...over,
  });
  beforeAll(async () => {
    tds = await startTdsWire({
      users: { reporter: 'pw' },
      databases: ['sales'],
      respond: (q) => {
        if (q.includes('SERVERPROPERTY'))
          return deafPing ? { deaf: true } : { columns: [{ name: 'v', type: 'nvarchar' }], rows: [['16.0']] };
        if (q.includes('FROM items')) return { columns: [{ name: 'id', type: 'int' }], rows: [[1], [2]] };
        if (q.includes('FROM dropped')) return { drop: true };
        if (q.includes('FROM deaf')) return { deaf: true };
        return undefined;
      },
    });
  });
  afterAll(async () => {
    await closeAllDrivers();
    await tds.stop();
  });

  it('the server closing the connection mid-query is 422 CONNECTION_FAILED; the next read succeeds', async () => {
    expect((await runReadOnly(t(), 'SELECT id FROM items')).rows).toEqual([{ id: 1 }, { id: 2 }]);
    const e = await failure(runReadOnly(t(), 'SELECT id FROM dropped'));
    expect(e.status, e.message).toBe(422);
    expect(e.code).toBe('CONNECTION_FAILED');
    expect((await runReadOnly(t(), 'SELECT id FROM items')).rowCount).toBe(2);
    expect(uncaught).toEqual([]);
  });

  it('a server that never answers (not even the cancel) is 504 QUERY_TIMEOUT; the next read succeeds', async () => {
    const e = await failure(runReadOnly(t(), 'SELECT id FROM deaf'));
    expect(e.status, e.message).toBe(504);
    expect(e.code).toBe('QUERY_TIMEOUT');
    expect((await runReadOnly(t(), 'SELECT id FROM items')).rowCount).toBe(2);
    expect(uncaught).toEqual([]);
  });

  it('a connection test the server never answers is 422 CONNECTION_FAILED with a TIMEOUT diagnosis', async () => {
    deafPing = true;
    try {
      const raw = await failure((await driverFor(t())).ping());
      const e = connectionFailed(raw, t());
      expect(e.status).toBe(422);
      expect(e.code).toBe('CONNECTION_FAILED');
      expect((e.details as { diagnosis: { stage: string } }).diagnosis.stage).toBe('TIMEOUT');
    } finally {
      deafPing = false;
    }
    expect((await (await driverFor(t())).ping()).serverVersion).toBe('16.0');
    expect(uncaught).toEqual([]);
  });
});

describe('MongoDB (wire test server)', () => {
  let wire: MongoWireServer;
  const t = (): ConnectionTarget => ({
    id: `mongo-faults-${process.pid}`,
    version: '1',
    type: 'MONGODB',
    host: '127.0.0.1',
    port: wire.port,
    database: 'shop',
    username: '',
    password: '',
    sslEnabled: false,
  });
  beforeAll(async () => {
    wire = await startMongoWire({
      collections: { items: [{ _id: new BSON.ObjectId(), n: 1 }] },
      drop: ['dropped'],
      hang: ['stuck'],
    });
  });
  afterAll(async () => {
    await closeAllDrivers();
    await wire.stop();
  });

  it('the server closing the connection mid-query is 422 CONNECTION_FAILED; the next read succeeds', async () => {
    expect((await runReadOnly(t(), '{"collection": "items", "filter": {}}')).rowCount).toBe(1);
    const e = await failure(runReadOnly(t(), '{"collection": "dropped", "filter": {}}'));
    expect(e.status, e.message).toBe(422);
    expect(e.code).toBe('CONNECTION_FAILED');
    expect((await runReadOnly(t(), '{"collection": "items", "filter": {}}')).rowCount).toBe(1);
    expect(uncaught).toEqual([]);
  });

  it('a server that never answers is 504 QUERY_TIMEOUT; the next read succeeds', async () => {
    const e = await failure(runReadOnly(t(), '{"collection": "stuck", "pipeline": []}'));
    expect(e.status, e.message).toBe(504);
    expect(e.code).toBe('QUERY_TIMEOUT');
    expect((await runReadOnly(t(), '{"collection": "items", "filter": {}}')).rowCount).toBe(1);
    expect(uncaught).toEqual([]);
  });
});

describe('SQLite (child process)', () => {
  const root = mkdtempSync(join(tmpdir(), 'loupe-faults-sqlite-'));
  const file = join(root, 'org-a', 'f.db');
  const t = (): ConnectionTarget => ({
    id: `sqlite-faults-${process.pid}`,
    version: '1',
    orgId: 'org-a',
    type: 'SQLITE',
    host: '',
    port: null,
    database: file,
    username: '',
    password: '',
    sslEnabled: false,
  });
  beforeAll(() => {
    process.env.LOUPE_SQLITE_ROOT = root;
    resetConfig();
    mkdirSync(join(root, 'org-a'));
    const d = new DatabaseSync(file);
    d.exec('CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1)');
    d.close();
  });
  afterAll(async () => {
    await closeAllDrivers();
    delete process.env.LOUPE_SQLITE_ROOT;
    resetConfig();
    rmSync(root, { recursive: true, force: true });
  });

  it('the child killed under a statement is 422 CONNECTION_FAILED; the next read starts a new one', async () => {
    expect((await runReadOnly(t(), 'SELECT n FROM t')).rows).toEqual([{ n: 1 }]);
    // The child holding the file: this process's descendant running node:sqlite.
    const child = processTree(process.pid).find((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('DatabaseSync');
      } catch {
        return false;
      }
    });
    expect(child).toBeDefined();
    const pending = failure(
      runReadOnly(
        t(),
        'WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 1000000000) SELECT count(*) FROM r',
      ),
    );
    setTimeout(() => process.kill(child as number, 'SIGKILL'), 200);
    const e = await pending;
    expect(e.status, e.message).toBe(422);
    expect(e.code).toBe('CONNECTION_FAILED');
    expect((e.details as { diagnosis: { title: string } }).diagnosis.title).toBe(
      'The SQLite process stopped',
    );
    expect((await runReadOnly(t(), 'SELECT n FROM t')).rows).toEqual([{ n: 1 }]);
    expect(uncaught).toEqual([]);
  });
});
