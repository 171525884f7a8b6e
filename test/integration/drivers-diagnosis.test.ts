/**
 * Every diagnosis mapping that can be provoked here is provoked for real: PostgreSQL and MariaDB from
 * the test harness, SQLite files, DNS (.invalid never resolves), a closed local port, and a local TCP
 * server that accepts connections and never answers.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer, TLSSocket } from 'node:tls';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  connectionFailed,
  type Diagnosis,
  diagnose,
  introspectionFailed,
} from '../../shared/databases/diagnosis';
import { closeAllDrivers, unpooledDriver } from '../../shared/databases/drivers/index';
import type { ConnectionTarget, DbType } from '../../shared/databases/drivers/types';
import { runReadOnly } from '../../shared/databases/run';
import { resetConfig } from '../../shared/platform/config';
import type { AppError } from '../../shared/platform/errors';
import { freePort } from '../support/databases';
import { pingError } from '../support/drivers';

const pgInfo = inject('postgres');
const maria = inject('mariadb');
const suffix = `${process.pid}_${Date.now().toString(36)}`;
const dir = mkdtempSync(join(tmpdir(), 'loupe-diag-'));

let closedPort: number;
let silent: Server;
let silentPort: number;
const sockets: Socket[] = [];

const base = (type: DbType, over: Partial<ConnectionTarget> = {}): ConnectionTarget => {
  const info = type === 'POSTGRES' ? pgInfo : maria;
  return {
    id: `diag-${type}-${Math.random().toString(36).slice(2)}`,
    version: '1',
    type,
    host: info?.host ?? '127.0.0.1',
    port: info?.port ?? 3306,
    database: info?.database ?? 'loupe_test',
    username: info?.user ?? 'loupe_user',
    password: info?.password ?? 'x',
    sslEnabled: false,
    ...over,
  };
};

function expectDiagnosis(d: Diagnosis, want: Partial<Diagnosis>, target: ConnectionTarget) {
  expect(d).toMatchObject(want);
  expect(d.title.length).toBeGreaterThan(5);
  expect(d.explanation.length).toBeGreaterThan(10);
  expect(d.fixSteps.length).toBeGreaterThan(0);
  const text = JSON.stringify(d);
  if (target.password) expect(text).not.toContain(target.password);
  // Fix steps name the actual place: the host (server drivers) or the file, and for login, database and
  // privilege problems also the user and the database.
  const steps = d.fixSteps.join(' ');
  if (target.type === 'SQLITE') expect(steps).toContain(target.database);
  else expect(steps, JSON.stringify(d)).toContain(target.host);
  if (target.type !== 'SQLITE' && ['AUTH', 'DATABASE', 'PERMISSION'].includes(d.stage)) {
    expect(steps, JSON.stringify(d)).toContain(target.username);
    expect(steps, JSON.stringify(d)).toContain(target.database);
  }
}

beforeAll(async () => {
  closedPort = await freePort();
  silent = createServer((s) => {
    sockets.push(s);
    s.on('error', () => {});
  });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
  silentPort = (silent.address() as { port: number }).port;
});

afterAll(async () => {
  await closeAllDrivers();
  for (const s of sockets) s.destroy();
  await new Promise((r) => silent.close(r));
  rmSync(dir, { recursive: true, force: true });
});

const dbTypes: DbType[] = maria ? ['POSTGRES', 'MARIADB'] : ['POSTGRES'];

describe.each(dbTypes)('%s: network and TLS failures', (type) => {
  it('an unknown host is RESOLVE / user, naming the host', async () => {
    const t = base(type, { host: `no-such-host-${suffix}.invalid` });
    const d = diagnose(await pingError(t), t);
    expectDiagnosis(d, { stage: 'RESOLVE', fault: 'user', retryable: false }, t);
    expect(d.fixSteps.join(' ')).toContain(t.host);
  });

  it('a closed port is CONNECT / server (refused), naming host and port', async () => {
    const t = base(type, { host: '127.0.0.1', port: closedPort });
    const d = diagnose(await pingError(t), t);
    expectDiagnosis(
      d,
      { stage: 'CONNECT', fault: 'server', title: 'Connection refused', retryable: true },
      t,
    );
    expect(d.fixSteps.join(' ')).toContain(`127.0.0.1:${closedPort}`);
  });

  it('a server that accepts and never answers is TIMEOUT / third-party', async () => {
    const t = base(type, { host: '127.0.0.1', port: silentPort });
    const d = diagnose(await pingError(t), t);
    expectDiagnosis(d, { stage: 'TIMEOUT', fault: 'third-party', retryable: true }, t);
  }, 30_000);

  it('sslEnabled against a server without TLS is TLS / user ("does not accept TLS")', async () => {
    const t = base(type, { sslEnabled: true });
    const d = diagnose(await pingError(t), t);
    expectDiagnosis(d, { stage: 'TLS', fault: 'user', title: 'The server does not accept TLS' }, t);
  });

  it('a wrong password is AUTH / user, naming the user and never the password', async () => {
    const t = base(type, { password: `wrong-${suffix}` });
    const err = await pingError(t);
    const d = diagnose(err, t);
    expectDiagnosis(d, { stage: 'AUTH', fault: 'user', title: 'Login failed', retryable: false }, t);
    expect(d.fixSteps.join(' ')).toContain(t.username);
    const app = connectionFailed(err, t);
    expect(app.status).toBe(422);
    expect(app.code).toBe('CONNECTION_FAILED');
    expect((app.details as { diagnosis: Diagnosis }).diagnosis).toEqual(d);
    expect(app.message).not.toContain(t.password);
  });

  it('an unknown database is DATABASE / user, naming the database', async () => {
    // MySQL/MariaDB answer 1049 only to users with global privileges (others get 1044, tested below).
    const info = type === 'POSTGRES' ? pgInfo : maria;
    const t = base(type, {
      database: `missing_db_${suffix}`,
      ...(type === 'MARIADB' ? { username: info?.adminUser, password: info?.adminPassword } : {}),
    });
    const d = diagnose(await pingError(t), t);
    expectDiagnosis(d, { stage: 'DATABASE', fault: 'user', title: 'Database not found' }, t);
    expect(d.explanation).toContain(t.database);
  });

  it('a connection failure inside runReadOnly is 422 CONNECTION_FAILED with the diagnosis', async () => {
    const t = base(type, { password: `wrong-${suffix}` });
    let e: AppError | undefined;
    try {
      await runReadOnly(t, 'SELECT 1');
    } catch (x) {
      e = x as AppError;
    }
    expect(e?.code).toBe('CONNECTION_FAILED');
    expect((e?.details as { diagnosis?: Diagnosis } | undefined)?.diagnosis?.stage).toBe('AUTH');
  });
});

describe('PostgreSQL: privileges', () => {
  const secret = `diag_secret_${suffix}`;
  let admin: pg.Client;
  beforeAll(async () => {
    admin = new pg.Client({
      host: pgInfo.host,
      port: pgInfo.port,
      database: pgInfo.database,
      user: pgInfo.adminUser,
      password: pgInfo.adminPassword,
    });
    await admin.connect();
    await admin.query(`CREATE TABLE ${secret} (id int)`);
    await admin.query(`REVOKE ALL ON ${secret} FROM PUBLIC`);
  });
  afterAll(async () => {
    await admin.query(`DROP TABLE IF EXISTS ${secret}`);
    await admin.end();
  });

  it('a table without a grant is PERMISSION / user with a GRANT for the user', async () => {
    const t = base('POSTGRES');
    const d = await unpooledDriver(t);
    let err: unknown;
    try {
      await d.query(`SELECT * FROM ${secret}`, { maxRows: 1, maxBytes: 1000, timeoutMs: 5000 });
    } catch (e) {
      err = e;
    } finally {
      await d.close();
    }
    const diag = diagnose(err, t, 'QUERY');
    expectDiagnosis(diag, { stage: 'PERMISSION', fault: 'user', title: 'Missing privilege' }, t);
    expect(diag.fixSteps[0]).toContain(`GRANT SELECT ON ${secret} TO "${t.username}"`);
    const app = introspectionFailed(err, t);
    expect(app.code).toBe('INTROSPECTION_FAILED');
    expect((app.details as { diagnosis: Diagnosis }).diagnosis.stage).toBe('PERMISSION');
  });
});

describe.skipIf(!maria)('MariaDB: privileges', () => {
  const secretDb = `diag_secret_${suffix}`;
  let admin: mysql.Connection;
  beforeAll(async () => {
    if (!maria) return;
    admin = await mysql.createConnection({
      host: maria.host,
      port: maria.port,
      user: maria.adminUser,
      password: maria.adminPassword,
    });
    await admin.query(`CREATE DATABASE ${secretDb}`);
    await admin.query(`CREATE TABLE ${secretDb}.hidden (id INT)`);
  });
  afterAll(async () => {
    if (!maria) return;
    await admin.query(`DROP DATABASE IF EXISTS ${secretDb}`);
    await admin.end();
  });

  it('a database the user may not use (or that does not exist) is PERMISSION / user (1044)', async () => {
    const missing = base('MARIADB', { database: `missing_db_${suffix}` });
    expect((await pingError(missing)) as { errno: number }).toMatchObject({ errno: 1044 });
    const t = base('MARIADB', { database: secretDb });
    const d = diagnose(await pingError(t), t);
    expectDiagnosis(d, { stage: 'PERMISSION', fault: 'user', title: 'No access to the database' }, t);
    expect(d.fixSteps.join(' ')).toContain(`'${t.username}'@'%'`);
  });

  it('a table without a grant is PERMISSION / user (1142)', async () => {
    const t = base('MARIADB');
    const d = await unpooledDriver(t);
    let err: unknown;
    try {
      await d.query(`SELECT * FROM ${secretDb}.hidden`, { maxRows: 1, maxBytes: 1000, timeoutMs: 5000 });
    } catch (e) {
      err = e;
    } finally {
      await d.close();
    }
    expect((err as { errno: number }).errno).toBe(1142);
    expectDiagnosis(diagnose(err, t, 'QUERY'), { stage: 'PERMISSION', fault: 'user' }, t);
  });
});

describe('SQLite files', () => {
  // The organization's folder is `<LOUPE_SQLITE_ROOT>/org-diag/`; the files of this block live there.
  const orgDir = join(dir, 'sqlite-root', 'org-diag');
  beforeAll(() => {
    mkdirSync(orgDir, { recursive: true });
    process.env.LOUPE_SQLITE_ROOT = join(dir, 'sqlite-root');
    resetConfig();
  });
  const sqlite = (database: string): ConnectionTarget => ({
    id: `diag-sqlite-${Math.random()}`,
    version: '1',
    orgId: 'org-diag',
    type: 'SQLITE',
    host: '',
    port: null,
    database,
    username: '',
    password: '',
    sslEnabled: false,
  });

  it('a missing file is DATABASE / user ("SQLite file not found"), naming the path', async () => {
    const t = sqlite('missing.db');
    const d = diagnose(await pingError(t), t);
    expectDiagnosis(d, { stage: 'DATABASE', fault: 'user', title: 'SQLite file not found' }, t);
    expect(d.explanation).toContain(t.database);
  });

  it('a file that is not a database is DATABASE / user ("Not a SQLite database")', async () => {
    const file = join(orgDir, 'text.db');
    writeFileSync(file, 'plain text, not sqlite '.repeat(200));
    const t = sqlite('text.db');
    const d = diagnose(await pingError(t), t);
    expectDiagnosis(d, { stage: 'DATABASE', fault: 'user', title: 'Not a SQLite database' }, t);
  });
});

describe('unknown errors', () => {
  it('are fault "us", retryable, at the stage the caller gives', () => {
    const t = base('POSTGRES');
    const d = diagnose(new Error(`something odd with ${t.password}`), t, 'READ_SCHEMA');
    expectDiagnosis(d, { stage: 'READ_SCHEMA', fault: 'us', retryable: true, title: 'Unexpected error' }, t);
    expect(d.explanation).toContain('***');
  });
});

const openssl = ['/usr/bin/openssl', '/usr/local/bin/openssl'].find((p) => existsSync(p));
describe.skipIf(!openssl)(
  `TLS certificate verification against local TLS servers with a self-signed certificate${openssl ? '' : ' — skipped: openssl is not installed'}`,
  () => {
    let key: Buffer;
    let cert: Buffer;
    const servers: Server[] = [];
    const listen = async (s: Server) => {
      servers.push(s);
      await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
      return (s.address() as { port: number }).port;
    };
    beforeAll(() => {
      execFileSync(
        openssl as string,
        [
          'req',
          '-x509',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-days',
          '1',
          '-subj',
          '/CN=localhost',
          '-keyout',
          join(dir, 'key.pem'),
          '-out',
          join(dir, 'cert.pem'),
        ],
        { stdio: 'ignore' },
      );
      key = readFileSync(join(dir, 'key.pem'));
      cert = readFileSync(join(dir, 'cert.pem'));
    });
    afterAll(async () => {
      for (const s of servers) await new Promise((r) => s.close(r));
    });

    it('PostgreSQL (SSLRequest answered "S", then a self-signed certificate) is TLS "not trusted"', async () => {
      const port = await listen(
        createServer((socket) => {
          socket.on('error', () => {});
          socket.once('data', () => {
            socket.write('S');
            const secure = new TLSSocket(socket, { isServer: true, key, cert });
            secure.on('error', () => {});
          });
        }),
      );
      const t = base('POSTGRES', { host: '127.0.0.1', port, sslEnabled: true });
      const err = await pingError(t);
      expect(err).toMatchObject({ code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
      const d = diagnose(err, t);
      expectDiagnosis(d, { stage: 'TLS', fault: 'user', title: 'Server certificate not trusted' }, t);
      expect(d.fixSteps.join(' ')).toContain('NODE_EXTRA_CA_CERTS');
    });

    it('MongoDB (TLS from the first byte, self-signed certificate) is TLS "not trusted"', async () => {
      const port = await listen(
        createTlsServer({ key, cert }, (s) => {
          s.on('error', () => {});
        }),
      );
      const t: ConnectionTarget = {
        ...base('POSTGRES'),
        type: 'MONGODB',
        host: '127.0.0.1',
        port,
        sslEnabled: true,
        username: '',
      };
      const d = diagnose(await pingError(t), t);
      expectDiagnosis(d, { stage: 'TLS', title: 'Server certificate not trusted' }, t);
    }, 30_000);
  },
);
