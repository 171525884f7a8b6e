/**
 * The function rule's remembered verdicts, checked inside the read (issue 33): a read whose verdict is
 * remembered sends no catalog query of its own; the check rides in the read's first message and, when
 * the server was written to or its catalog changed, fails before the statement runs, and the read runs
 * again (judged again when the catalog changed). On a server of its own, so that no other test's writes
 * move its snapshot; every assertion holds whatever autovacuum does meanwhile.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAllDrivers, driverFor } from '../../shared/databases/drivers/index';
import type { ConnectionTarget, QueryOptions } from '../../shared/databases/drivers/types';
import { runReadOnly } from '../../shared/databases/run';
import { forgetCatalogVerdicts } from '../../shared/guard/postgres-catalog';
import { REACH_SQL, SNAPSHOT_SQL, VERSION_SQL } from '../../shared/guard/postgres-catalog-sql';
import { isAppError } from '../../shared/platform/errors';
import { type DbServer, startPostgres } from '../support/databases';

describe('remembered verdicts checked in the read (PostgreSQL)', () => {
  let db: DbServer;
  let admin: pg.Client;
  let n = 0;
  const target = (over: Partial<ConnectionTarget> = {}): ConnectionTarget => ({
    id: `catalog-check-${++n}`,
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
  /** Every statement the driver of `t` is asked to run from now on, with whether it carried the check. */
  async function spy(t: ConnectionTarget) {
    const driver = await driverFor(t);
    const calls: { text: string; checked: boolean }[] = [];
    const query = driver.query.bind(driver);
    driver.query = (text: string, opts: QueryOptions) => {
      calls.push({ text, checked: !!opts.preCheck });
      return query(text, opts);
    };
    const catalog = () =>
      calls.filter((c) => c.text === REACH_SQL || c.text === VERSION_SQL || c.text === SNAPSHOT_SQL);
    return { calls, catalog, reach: () => calls.filter((c) => c.text === REACH_SQL).length };
  }
  const marks = async () => (await admin.query('SELECT count(*)::int AS n FROM marker')).rows[0].n as number;

  beforeAll(async () => {
    db = await startPostgres();
    admin = new pg.Client({
      host: db.host,
      port: db.port,
      user: db.adminUser,
      password: db.adminPassword,
      database: db.database,
    });
    await admin.connect();
    await admin.query('CREATE EXTENSION dblink');
    await admin.query(`CREATE TABLE orders (id int PRIMARY KEY, region text, amount numeric);
      INSERT INTO orders SELECT g, 'r' || (g % 3), g FROM generate_series(1, 30) g;
      GRANT SELECT ON orders TO ${db.user};
      CREATE TABLE other (id serial PRIMARY KEY, note text);
      CREATE TABLE marker (id serial PRIMARY KEY, note text);
      GRANT INSERT, SELECT ON marker TO ${db.user}; GRANT USAGE ON SEQUENCE marker_id_seq TO ${db.user};`);
    // mark(note) commits a row through an independent session: the row stays whatever the read does.
    const conninfo = `host=${db.host} port=${db.port} dbname=${db.database} user=${db.user} password=${db.password}`;
    await admin.query(`CREATE FUNCTION public.mark(note text) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
      BEGIN PERFORM public.dblink_exec('${conninfo}', format('INSERT INTO public.marker (note) VALUES (%L)', note));
      RETURN 1; END $$`);
    await admin.query(`GRANT EXECUTE ON FUNCTION public.mark(text) TO ${db.user}`);
    forgetCatalogVerdicts();
  });
  afterAll(async () => {
    await closeAllDrivers();
    await admin?.end();
    await db?.stop();
  });

  const GROUP =
    'SELECT region, count(*) AS n, round(sum(amount), 2) AS total FROM orders GROUP BY region ORDER BY region';

  it('a remembered verdict costs no catalog query, also after data is written, and a changed catalog judges again', async () => {
    const t = target();
    expect((await runReadOnly(t, GROUP)).rows).toHaveLength(3);
    const s = await spy(t);
    for (let i = 0; i < 3; i++) expect((await runReadOnly(t, GROUP)).rows).toHaveLength(3);
    expect(s.catalog()).toEqual([]);
    expect(s.calls.every((c) => c.text === GROUP && c.checked)).toBe(true);

    // Ordinary writes move the server's snapshot: the verdict stands, still no catalog query.
    for (let i = 0; i < 3; i++) {
      await admin.query("INSERT INTO other (note) VALUES ('data')");
      expect((await runReadOnly(t, GROUP)).rows).toHaveLength(3);
    }
    expect(s.catalog()).toEqual([]);

    // A catalog change (a new function, unrelated): the verdicts are forgotten and the statement judged again.
    await admin.query('CREATE FUNCTION public.unrelated() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$');
    expect((await runReadOnly(t, GROUP)).rows).toHaveLength(3);
    expect(s.reach()).toBe(1);
    expect((await runReadOnly(t, GROUP)).rows).toHaveLength(3);
    expect(s.reach()).toBe(1);
  });

  it('a check that fails never runs the statement: an allowed function that writes runs once per answered read', async () => {
    const t = target({ allowedFunctions: ['mark'] });
    const before = await marks();
    expect((await runReadOnly(t, "SELECT public.mark('first') AS m")).rows).toEqual([{ m: 1 }]);
    expect(await marks()).toBe(before + 1);
    const s = await spy(t);
    await admin.query("INSERT INTO other (note) VALUES ('moves the snapshot')");
    expect((await runReadOnly(t, "SELECT public.mark('first') AS m")).rows).toEqual([{ m: 1 }]);
    // The first attempt's check failed (the snapshot moved) before the statement; the second ran it.
    expect(s.calls.length).toBeGreaterThanOrEqual(2);
    expect(await marks()).toBe(before + 2);

    // The catalog changes under a remembered verdict (the function is replaced): judged again, runs once.
    await admin.query(
      'CREATE OR REPLACE FUNCTION public.mark(note text) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RETURN 2; END $$',
    );
    const reached = s.reach();
    expect((await runReadOnly(t, "SELECT public.mark('first') AS m")).rows).toEqual([{ m: 2 }]);
    expect(s.reach()).toBe(reached + 1);
  });

  it("a statement's own error that looks like the check's is the statement's: no second run, verdicts kept", async () => {
    const t = target();
    await runReadOnly(t, GROUP);
    const s = await spy(t);
    for (const text of [
      "SELECT 'loupe-catalog-changed 1'::int AS x",
      "SELECT 'loupe-snapshot-moved 1'::int AS x",
    ]) {
      const e = await runReadOnly(t, text).catch((x) => x);
      expect(isAppError(e) && e.code).toBe('QUERY_FAILED');
    }
    // Each ran once (a check failure would have run it again), and the remembered verdicts stand.
    expect(s.calls.filter((c) => c.text.startsWith("SELECT 'loupe")).map((c) => c.text)).toEqual([
      "SELECT 'loupe-catalog-changed 1'::int AS x",
      "SELECT 'loupe-snapshot-moved 1'::int AS x",
    ]);
    const judged = s.reach(); // the two new statements (they name a type)
    await runReadOnly(t, GROUP);
    expect(s.reach()).toBe(judged);
  });
});
