/**
 * The PostgreSQL read session (docs/internals/database-sessions.md): settings once per connection that a
 * read cannot change for the reads after it, DISCARD ALL only after a read that may have left session
 * state (open mode, or a connection that allows functions by name), and a pool that does not cap 16 concurrent reads.
 * Proven on the real server from an administrator's session (pg_stat_activity, pg_locks), never by time.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { closeAllDrivers, closeDriver, driverFor } from '../../shared/databases/drivers/index';
import { LIGHT_RESET, RESET_SESSION, SESSION_SETTINGS } from '../../shared/databases/drivers/postgres';
import type { ConnectionTarget, QueryOptions } from '../../shared/databases/drivers/types';
import { runReadOnly } from '../../shared/databases/run';
import { resetConfig } from '../../shared/platform/config';

const db = inject('postgres');
const suffix = `${process.pid}_${Date.now().toString(36)}`;
const LOCK_FN = `sess_owner_lock_${suffix}`;
const KEY = 8_100_000 + (process.pid % 100_000);
let admin: pg.Client;

const target = (name: string, over: Partial<ConnectionTarget> = {}): ConnectionTarget => ({
  id: `pgsess-${name}-${suffix}`,
  version: '1',
  type: 'POSTGRES',
  host: db.host,
  port: db.port,
  database: db.database,
  username: db.user,
  password: db.password,
  sslEnabled: false,
  ...over,
});
const opts = (over: Partial<QueryOptions> = {}): QueryOptions => ({
  maxRows: 100,
  maxBytes: 1 << 20,
  timeoutMs: 10_000,
  kind: 'select',
  ...over,
});
/** The last statement text a backend ran, as the server reports it. */
const lastStatement = async (pid: number) =>
  String((await admin.query('SELECT query FROM pg_stat_activity WHERE pid = $1', [pid])).rows[0]?.query);
const eventually = async (check: () => Promise<boolean>, ms = 5_000) => {
  const until = Date.now() + ms;
  while (!(await check()) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  return check();
};
/** pg_backend_pid() of the session that answers a read (through the driver, which skips the guard). */
const pidOf = async (t: ConnectionTarget, over: Partial<QueryOptions> = {}) =>
  Number((await (await driverFor(t)).query('SELECT pg_backend_pid() AS pid', opts(over))).rows[0].pid);

beforeAll(async () => {
  admin = new pg.Client({
    host: db.host,
    port: db.port,
    database: db.database,
    user: db.adminUser,
    password: db.adminPassword,
  });
  await admin.connect();
  // Owner-written and declared STABLE, yet it takes a session-level lock: only an admin can allow it.
  await admin.query(
    `CREATE FUNCTION ${LOCK_FN}(k bigint) RETURNS int LANGUAGE plpgsql STABLE AS $$ BEGIN PERFORM pg_advisory_lock(k); RETURN 1; END $$`,
  );
  await admin.query(`GRANT EXECUTE ON FUNCTION ${LOCK_FN}(bigint) TO ${db.user}`);
});

afterAll(async () => {
  await closeAllDrivers();
  await admin.query(`DROP FUNCTION IF EXISTS ${LOCK_FN}(bigint)`);
  await admin.end();
});

describe('PostgreSQL session settings, once per connection', () => {
  it('a new session has them before its first read', async () => {
    const t = target('settings');
    const r = await runReadOnly(
      t,
      "SELECT current_setting('TimeZone') AS tz, current_setting('IntervalStyle') AS style, interval '1 day 2 hours' AS span, timestamptz '2024-01-02 03:04:05+02' AS at",
    );
    expect(r.rows).toEqual([{ tz: 'UTC', style: 'iso_8601', span: 'P1DT2H', at: '2024-01-02T01:04:05Z' }]);
    expect(SESSION_SETTINGS.join('; ')).toContain('TimeZone');
  });

  it('a read that changes them (set_config, SET ROLE-like GUCs) does not change them for the next read', async () => {
    const t = target('guc', { id: `pgsess-guc-${suffix}` });
    const driver = await driverFor(t);
    // Straight through the driver (the guard refuses set_config): is_local false, a session-level change.
    const pid = await pidOf(t, { leavesNoSessionState: true });
    const changed = await driver.query(
      "SELECT set_config('TimeZone', 'America/New_York', false) AS a, set_config('IntervalStyle', 'postgres', false) AS b, pg_backend_pid() AS pid",
      opts({ leavesNoSessionState: true }),
    );
    expect(Number(changed.rows[0].pid)).toBe(pid);
    const after = await driver.query(
      "SELECT current_setting('TimeZone') AS tz, current_setting('IntervalStyle') AS style, pg_backend_pid() AS pid",
      opts({ leavesNoSessionState: true }),
    );
    // The same pooled session (no reset in between), back at the connection's settings: ROLLBACK undid them.
    expect(after.rows).toEqual([{ tz: 'UTC', style: 'iso_8601', pid }]);
  });
});

describe('PostgreSQL DISCARD ALL only after a read that may have left session state', () => {
  it('an open-mode read (the role reaches no escape: owner code may run) is followed by the light reset', async () => {
    // This database has no escape for the login (no dblink, no superuser): reads run in open mode, where
    // owner functions run and may leave session state; strict mode's no-reset case is in
    // pg-read-modes.test.ts.
    const t = target('clean');
    const r = await runReadOnly(t, "SELECT pg_backend_pid() AS pid, upper('x') AS u");
    const pid = Number(r.rows[0].pid);
    // Advisory locks and prepared statements: what a rolled-back read-only transaction can leave.
    expect(await eventually(async () => (await lastStatement(pid)) === LIGHT_RESET)).toBe(true);
  });

  it('a strict-mode read of a connection that allows a function is followed by DISCARD ALL and the settings', async () => {
    // runReadOnly sends this in strict mode (this database reads in open mode: the driver is called as
    // runReadOnly calls it there, without lightReset and with leavesNoSessionState false).
    const t = target('listed', { allowedFunctions: [LOCK_FN] });
    const r = await (await driverFor(t)).query(
      'SELECT pg_backend_pid() AS pid',
      opts({ leavesNoSessionState: false }),
    );
    const pid = Number(r.rows[0].pid);
    const settings = SESSION_SETTINGS.join('; ');
    expect(await eventually(async () => (await lastStatement(pid)) === settings)).toBe(true);
    expect(RESET_SESSION).toBe('DISCARD ALL');
  });

  it('the session lock an allowed owner function takes does not outlive the read; the session is reused', async () => {
    const t = target('lock', { allowedFunctions: [LOCK_FN] });
    const r = await runReadOnly(t, `SELECT ${LOCK_FN}(${KEY}) AS x, pg_backend_pid() AS pid`);
    expect(r.rows[0].x).toBe(1);
    const pid = Number(r.rows[0].pid);
    const locks = async () =>
      Number(
        (
          await admin.query(
            "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = $1 AND objid = $2",
            [pid, KEY],
          )
        ).rows[0].n,
      );
    expect(await eventually(async () => (await locks()) === 0)).toBe(true);
    expect((await runReadOnly(t, 'SELECT pg_backend_pid() AS pid')).rows[0].pid).toBe(pid);
  });

  it('the test can fail: without the reset, the same lock does outlive the read', async () => {
    const t = target('nolock');
    const driver = await driverFor(t);
    const r = await driver.query(
      `SELECT ${LOCK_FN}(${KEY + 1}) AS x, pg_backend_pid() AS pid`,
      opts({ leavesNoSessionState: true }),
    );
    const pid = Number(r.rows[0].pid);
    const held = await admin.query(
      "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = $1 AND objid = $2",
      [pid, KEY + 1],
    );
    expect(Number(held.rows[0].n)).toBe(1);
    await closeDriver(t.id); // ends the session and its lock
  });
});

describe('PostgreSQL pool size', () => {
  /** Starts `n` reads that each wait for a transaction lock the administrator holds; returns them. */
  async function blockedReads(t: ConnectionTarget, n: number, key: number) {
    const driver = await driverFor(t);
    return Array.from({ length: n }, () =>
      driver.query(`SELECT pg_advisory_xact_lock_shared(${key}) AS l, pg_backend_pid() AS pid`, opts()).then(
        (r) => ({ ok: true as const, pid: Number(r.rows[0].pid) }),
        (e: Error) => ({ ok: false as const, error: e.message }),
      ),
    );
  }
  const waiting = async (key: number) =>
    Number(
      (
        await admin.query(
          "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted",
          [key],
        )
      ).rows[0].n,
    );

  it('16 concurrent reads of one connection each get a session (the default does not cap them)', async () => {
    const key = KEY + 10;
    const t = target('pool16');
    await admin.query('BEGIN');
    await admin.query('SELECT pg_advisory_xact_lock($1)', [key]);
    let reads: ReturnType<typeof blockedReads> | undefined;
    try {
      reads = blockedReads(t, 16, key);
      // All 16 wait on the lock at once: 16 sessions. Polled until then (a bounded wait, not a timing).
      expect(await eventually(async () => (await waiting(key)) === 16, 20_000)).toBe(true);
    } finally {
      await admin.query('COMMIT');
    }
    const done = await Promise.all(await reads);
    expect(done.every((d) => d.ok)).toBe(true);
    expect(new Set(done.map((d) => (d.ok ? d.pid : 0))).size).toBe(16);
  });

  it('LOUPE_DB_POOL_SIZE sets the pool size: with 2, two reads wait on the lock and the rest on the pool', async () => {
    const key = KEY + 11;
    process.env.LOUPE_DB_POOL_SIZE = '2';
    resetConfig();
    const t = target('pool2');
    await admin.query('BEGIN');
    await admin.query('SELECT pg_advisory_xact_lock($1)', [key]);
    let reads: ReturnType<typeof blockedReads> | undefined;
    try {
      reads = blockedReads(t, 4, key);
      expect(await eventually(async () => (await waiting(key)) === 2, 20_000)).toBe(true);
    } finally {
      await admin.query('COMMIT');
      delete process.env.LOUPE_DB_POOL_SIZE;
      resetConfig();
    }
    // Four reads, served by at most two sessions.
    const done = await Promise.all(await reads);
    expect(done.every((d) => d.ok)).toBe(true);
    expect(new Set(done.map((d) => (d.ok ? d.pid : 0))).size).toBeLessThanOrEqual(2);
  });
});
