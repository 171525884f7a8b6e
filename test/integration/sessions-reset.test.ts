/**
 * Clean sessions: a pooled connection is reset before it is reused after any read. The locks are taken
 * by functions written by the database owner (a STABLE-declared SQL function and a plpgsql one on
 * PostgreSQL, a stored function on MariaDB), called straight through the driver layer so that the
 * test proves the reset whatever the read-only guard would say about such functions.
 */
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { closeAllDrivers, driverFor } from '../../shared/databases/drivers/index';
import type { ConnectionTarget, QueryOptions } from '../../shared/databases/drivers/types';

const suffix = `${process.pid}_${Date.now().toString(36)}`;
const opts = (over: Partial<QueryOptions> = {}): QueryOptions => ({
  maxRows: 100,
  maxBytes: 1 << 20,
  timeoutMs: 10_000,
  kind: 'select',
  ...over,
});
const eventually = async (check: () => Promise<boolean>, ms = 15_000) => {
  const until = Date.now() + ms;
  while (!(await check()) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  return check();
};

afterAll(async () => {
  await closeAllDrivers();
});

describe('PostgreSQL: DISCARD ALL before a pooled client is reused', () => {
  const db = inject('postgres');
  const SQL_FN = `sess_lock_sql_${suffix}`;
  const PLPGSQL_FN = `sess_lock_plpgsql_${suffix}`;
  const GUC_FN = `sess_guc_${suffix}`;
  const KEY = 7_000_000 + (process.pid % 100_000);
  let admin: pg.Client;
  const target = (id: string): ConnectionTarget => ({
    id: `sess-pg-${id}-${suffix}`,
    version: '1',
    type: 'POSTGRES',
    host: db.host,
    port: db.port,
    database: db.database,
    username: db.user,
    password: db.password,
    sslEnabled: false,
  });
  /** Advisory locks held by sessions of the read-only login (the pool's sessions). */
  const heldLocks = async () =>
    Number(
      (
        await admin.query(
          `SELECT count(*) AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
           WHERE l.locktype = 'advisory' AND a.usename = $1`,
          [db.user],
        )
      ).rows[0].n,
    );

  beforeAll(async () => {
    admin = new pg.Client({
      host: db.host,
      port: db.port,
      database: db.database,
      user: db.adminUser,
      password: db.adminPassword,
    });
    await admin.connect();
    // Declared STABLE although it takes a session-level lock: the catalog says "safe", the session says otherwise.
    await admin.query(
      `CREATE FUNCTION ${SQL_FN}(k bigint) RETURNS int LANGUAGE sql STABLE AS $$ SELECT 1 FROM (SELECT pg_advisory_lock(k)) s $$`,
    );
    await admin.query(
      `CREATE FUNCTION ${PLPGSQL_FN}(k bigint) RETURNS int LANGUAGE plpgsql STABLE AS $$ BEGIN PERFORM pg_advisory_lock(k); RETURN 1; END $$`,
    );
    await admin.query(
      `CREATE FUNCTION ${GUC_FN}() RETURNS text LANGUAGE sql STABLE AS $$ SELECT set_config('search_path', 'pg_catalog', false) $$`,
    );
    await admin.query(
      `GRANT EXECUTE ON FUNCTION ${SQL_FN}(bigint), ${PLPGSQL_FN}(bigint), ${GUC_FN}() TO ${db.user}`,
    );
  });

  afterAll(async () => {
    await closeAllDrivers();
    await admin.query(`DROP FUNCTION IF EXISTS ${SQL_FN}(bigint), ${PLPGSQL_FN}(bigint), ${GUC_FN}()`);
    await admin.end();
  });

  const cases: Array<[string, string, Partial<QueryOptions>]> = [
    ['a SQL function through the cursor path', `SELECT ${SQL_FN}(${KEY}) AS x`, {}],
    ['a plpgsql function through the cursor path', `SELECT ${PLPGSQL_FN}(${KEY + 1}) AS x`, {}],
    [
      'a plpgsql function in EXPLAIN-style plain path',
      `SELECT ${PLPGSQL_FN}(${KEY + 2}) AS x`,
      { kind: 'show' },
    ],
  ];
  for (const [name, sql, over] of cases)
    it(`no advisory lock outlives ${name}; the session stays open (reset, not replaced)`, async () => {
      const driver = await driverFor(target(name.replace(/\W+/g, '-')));
      const r = await driver.query(sql.replace(' AS x', ' AS x, pg_backend_pid() AS pid'), opts(over));
      expect(r.rows).toHaveLength(1);
      const pid = Number(r.rows[0].pid);
      expect(await eventually(async () => (await heldLocks()) === 0)).toBe(true);
      const alive = await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid]);
      expect(alive.rowCount).toBe(1);
    });

  it('the lock was really held by the session during the read (the test can fail)', async () => {
    const driver = await driverFor(target('held'));
    // Watched until the read ends (2 s of sleep under the lock: a loaded machine's slow polls still see it).
    let ended = false;
    const during = driver.query(`SELECT ${PLPGSQL_FN}(${KEY + 3}) AS x, pg_sleep(2) AS s`, opts());
    const end = () => {
      ended = true;
    };
    during.then(end, end);
    let seen = false;
    while (!ended && !seen) seen = (await heldLocks()) > 0;
    expect(seen).toBe(true);
    await during;
    expect(await eventually(async () => (await heldLocks()) === 0)).toBe(true);
  });

  it('a read that fails after taking the lock also leaves no lock (ROLLBACK + DISCARD ALL path)', async () => {
    const driver = await driverFor(target('failing'));
    await expect(driver.query(`SELECT ${SQL_FN}(${KEY + 4}) / 0 AS x`, opts())).rejects.toThrow(/division/);
    expect(await eventually(async () => (await heldLocks()) === 0)).toBe(true);
  });

  it('session settings changed by a function are reset before the next read', async () => {
    const driver = await driverFor(target('guc'));
    await driver.query(`SELECT ${GUC_FN}() AS x`, opts());
    const r = await driver.query('SELECT current_setting($1) AS v', opts({ params: ['search_path'] }));
    expect(r.rows[0].v).not.toBe('pg_catalog');
  });
});

const maria = inject('mariadb');
describe.skipIf(!maria)('MariaDB: COM_RESET_CONNECTION before a pooled connection is reused', () => {
  const FN = `sess_lock_${suffix}`;
  const LOCK = `loupe_sess_${suffix}`;
  let admin: mysql.Connection;
  const target = (id: string): ConnectionTarget => ({
    id: `sess-my-${id}-${suffix}`,
    version: '1',
    type: 'MARIADB',
    host: maria?.host ?? '',
    port: maria?.port ?? 3306,
    database: maria?.database ?? '',
    username: maria?.user ?? '',
    password: maria?.password ?? '',
    sslEnabled: false,
  });
  const used = async () =>
    ((await admin.query('SELECT IS_USED_LOCK(?) AS u', [LOCK])) as any)[0][0].u as number | null;

  beforeAll(async () => {
    if (!maria) return;
    admin = await mysql.createConnection({
      host: maria.host,
      port: maria.port,
      user: maria.adminUser,
      password: maria.adminPassword,
      database: maria.database,
    });
    await admin.query(
      `CREATE FUNCTION ${FN}(s DOUBLE) RETURNS INT DETERMINISTIC READS SQL DATA RETURN GET_LOCK('${LOCK}', 0) + SLEEP(s)`,
    );
    await admin.query(`GRANT EXECUTE ON FUNCTION ${FN} TO '${maria.user}'@'%'`).catch(async () => {
      await admin.query(`GRANT EXECUTE ON FUNCTION ${FN} TO '${maria.user}'@'localhost'`);
    });
  });

  afterAll(async () => {
    if (!maria) return;
    await closeAllDrivers();
    await admin.query(`DROP FUNCTION IF EXISTS ${FN}`);
    await admin.end();
  });

  it('GET_LOCK inside a stored function: held during the read, IS_USED_LOCK null after the response', async () => {
    const driver = await driverFor(target('lock'));
    const id1 = (await driver.query('SELECT CONNECTION_ID() AS id', opts())).rows[0].id;
    const during = driver.query(`SELECT ${FN}(0.3) AS x`, opts());
    expect(await eventually(async () => (await used()) !== null)).toBe(true);
    const r = await during;
    expect(r.rows).toHaveLength(1);
    expect(await used()).toBeNull();
    const id2 = (await driver.query('SELECT CONNECTION_ID() AS id', opts())).rows[0].id;
    expect(id2).toBe(id1); // the same pooled session, reset rather than replaced
  });

  it('user variables and temporary state do not survive into the next read', async () => {
    const driver = await driverFor(target('vars'));
    await driver.query('SELECT @leak := 42 AS x', opts());
    const r = await driver.query('SELECT @leak AS v', opts());
    expect(r.rows[0].v).toBeNull();
  });
});
