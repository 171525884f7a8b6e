import { linkSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import mysql from 'mysql2/promise';
import pg from 'pg';
import type { DbInfo } from './global-setup';
import type { TestServer } from './server';

/** A ConnectionCreate body for the run's PostgreSQL, logging in as the ordinary test user. */
export const postgresConnection = (info: DbInfo, over: Record<string, unknown> = {}) => ({
  name: 'pg',
  type: 'POSTGRES',
  host: info.host,
  port: info.port,
  database: info.database,
  username: info.user,
  password: info.password,
  ...over,
});

/** A ConnectionCreate body for the run's MariaDB, logging in as the ordinary test user. */
export const mariadbConnection = (info: DbInfo, over: Record<string, unknown> = {}) => ({
  ...postgresConnection(info, { name: 'maria', type: 'MARIADB' }),
  ...over,
});

/**
 * Places a SQLite file in an organization's SQLite folder (`<dataDir>/sqlite/<orgId>/`, where the
 * operator puts files) as a hard link, so the test's own writes to `file` stay visible; returns the
 * connection's `database` value (the path relative to that folder).
 */
export function placeSqlite(s: TestServer, file: string, orgId = s.app.orgId, name = basename(file)): string {
  const dir = join(s.dataDir, 'sqlite', orgId);
  mkdirSync(dir, { recursive: true });
  rmSync(join(dir, name), { force: true });
  linkSync(file, join(dir, name));
  return name;
}

/** Creates a connection through the API (asserting 201) and returns its id. */
export async function createConnection(
  s: TestServer,
  body: Record<string, unknown>,
  key?: string,
): Promise<string> {
  const r = await s.call('POST', '/connections', { body, key });
  // A plain check, not vitest's expect: the Playwright specs use this helper too.
  if (r.status !== 201) throw new Error(`POST /connections answered ${r.status}, not 201: ${r.text}`);
  return r.body.data.id as string;
}

/** Runs SQL on PostgreSQL as the administrator in a short-lived session; returns the rows. */
export async function postgresAdmin(info: DbInfo, database: string, sql: string) {
  const c = new pg.Client({
    host: info.host,
    port: info.port,
    user: info.adminUser,
    password: info.adminPassword,
    database,
  });
  await c.connect();
  try {
    return (await c.query(sql)).rows;
  } finally {
    await c.end();
  }
}

/** (Re)creates a PostgreSQL database owned by the ordinary test user. */
export async function createPostgresDatabase(info: DbInfo, name: string) {
  await postgresAdmin(info, info.database, `DROP DATABASE IF EXISTS ${name}`);
  await postgresAdmin(info, info.database, `CREATE DATABASE ${name} OWNER ${info.user}`);
}

/** Runs SQL (several statements allowed) on MariaDB as the administrator in a short-lived session. */
export async function mariadbAdmin(info: DbInfo, database: string | undefined, sql: string): Promise<void> {
  await mariadbRows(info, database, sql);
}

/** Runs SQL on MariaDB as the administrator in a short-lived session; returns the rows of the last statement. */
export async function mariadbRows(info: DbInfo, database: string | undefined, sql: string): Promise<unknown> {
  const c = await mysql.createConnection({
    host: info.host,
    port: info.port,
    user: info.adminUser,
    password: info.adminPassword,
    database,
    multipleStatements: true,
  });
  try {
    return (await c.query(sql))[0];
  } finally {
    await c.end();
  }
}

/**
 * Sessions, as the ordinary test user, on the run's PostgreSQL and MariaDB (absent where none is
 * installed) and on a SQLite file in a temporary directory, for files that seed one table in each.
 */
/** A connected client to the run's PostgreSQL as the ordinary test user (the tests' own reads and writes). */
export async function postgresClient(info: DbInfo): Promise<pg.Client> {
  const client = new pg.Client({
    host: info.host,
    port: info.port,
    user: info.user,
    password: info.password,
    database: info.database,
  });
  await client.connect();
  return client;
}

export interface TestDatabases {
  pg: pg.Client;
  maria?: mysql.Connection;
  sqlite: DatabaseSync;
  sqliteFile: string;
  /**
   * Runs `sql` straight on the database of that connection type (not through Loupe), to set up or read
   * back; SELECTs answer their rows as plain objects.
   */
  query<T = Record<string, unknown>>(type: string, sql: string): Promise<T[]>;
  /** Registers the three as connections named pg, maria and lite; returns their ids by type. */
  connect(s: TestServer): Promise<Record<string, string>>;
  /** Drops the table from PostgreSQL and MariaDB, closes the sessions, removes the SQLite directory. */
  close(table: string): Promise<void>;
}

export async function openTestDatabases(
  pgInfo: DbInfo,
  mariaInfo: DbInfo | null,
  sqliteName: string,
): Promise<TestDatabases> {
  const client = await postgresClient(pgInfo);
  const maria = mariaInfo
    ? await mysql.createConnection({
        host: mariaInfo.host,
        port: mariaInfo.port,
        user: mariaInfo.user,
        password: mariaInfo.password,
        database: mariaInfo.database,
      })
    : undefined;
  const dir = mkdtempSync(join(tmpdir(), 'loupe-dbs-'));
  const sqliteFile = join(dir, sqliteName);
  const sqlite = new DatabaseSync(sqliteFile);
  return {
    pg: client,
    maria,
    sqlite,
    sqliteFile,
    async query<T>(type: string, sql: string): Promise<T[]> {
      if (type === 'POSTGRES') return (await client.query(sql)).rows as T[];
      if (type === 'MARIADB') {
        if (!maria) throw new Error('No MariaDB in this run');
        const [out] = await maria.query(sql);
        return (Array.isArray(out) ? out : []) as T[];
      }
      if (type !== 'SQLITE') throw new Error(`No test database of type ${type}`);
      return sqlite
        .prepare(sql)
        .all()
        .map((r) => ({ ...r })) as T[];
    },
    async connect(s) {
      const conn: Record<string, string> = {};
      conn.POSTGRES = await createConnection(s, postgresConnection(pgInfo));
      if (mariaInfo) conn.MARIADB = await createConnection(s, mariadbConnection(mariaInfo));
      conn.SQLITE = await createConnection(s, {
        name: 'lite',
        type: 'SQLITE',
        database: placeSqlite(s, sqliteFile),
      });
      return conn;
    },
    async close(table) {
      await client.query(`DROP TABLE IF EXISTS ${table}`);
      await client.end();
      await maria?.query(`DROP TABLE IF EXISTS ${table}`);
      await maria?.end();
      sqlite.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
