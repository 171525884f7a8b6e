import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { sampleValues } from '../../shared/connections/value-index';
import { closeAllDrivers, driverFor } from '../../shared/databases/drivers/index';
import type { ConnectionTarget, TableInfo } from '../../shared/databases/drivers/types';
import { judgeReadSet, runReadOnly } from '../../shared/databases/run';
import { forgetCatalogVerdicts } from '../../shared/guard/postgres-catalog';
import { REACH_SQL } from '../../shared/guard/postgres-catalog-sql';
import { isAppError } from '../../shared/platform/errors';
import { createPostgresDatabase, postgresAdmin } from '../support/connections';

const DB = `value_verdicts_${process.pid}`;
const pad = (i: number) => String(i).padStart(2, '0');
const PLAIN = Array.from({ length: 20 }, (_, i) => `region_${pad(i)}`);

/**
 * The value index's reads are judged together (shared/databases/read-set.ts): on PostgreSQL the
 * function rule's catalog lookup (REACH_SQL) runs once for the whole set of tables sampled when all
 * are allowed, not once per table; a table the guard refuses (its row-level security policy, or a
 * CHECK constraint the planner may fold, runs a function the database owner wrote) is skipped and
 * every other table is still sampled; and what is sampled is exactly what runReadOnly allows as a
 * read of its own. Lookups are counted on the connection's real driver, against embedded PostgreSQL.
 */
describe('value sampling: catalog lookups and refused tables', () => {
  const info = inject('postgres');
  const target: ConnectionTarget = {
    id: `value-verdicts-${process.pid}`,
    version: '1',
    type: 'POSTGRES',
    host: info.host,
    port: info.port,
    database: DB,
    username: info.user,
    password: info.password,
    sslEnabled: false,
  };
  let tables: TableInfo[];
  let lookups = 0;
  const byName = (names: string[]) => names.map((n) => tables.find((t) => t.name === n) as TableInfo);
  const sampledTables = (index: Awaited<ReturnType<typeof sampleValues>>) =>
    [...new Set(index.columns.map((c) => c.t))].sort();

  beforeAll(async () => {
    await createPostgresDatabase(info, DB);
    // Created by the administrator: the connection's login is not the owner, so policies apply to it.
    // dblink (EXECUTE to PUBLIC, as CREATE EXTENSION leaves it) is an escape: the connection reads in
    // strict mode, where the function rule judges each read (in open mode nothing would be refused).
    await postgresAdmin(
      info,
      DB,
      `CREATE EXTENSION dblink;
       ${PLAIN.map(
         (t, i) =>
           `CREATE TABLE ${t} (id integer PRIMARY KEY, label text);
           INSERT INTO ${t} SELECT g, 'Label ${i}-' || (g % 3) FROM generate_series(1, 30) g;`,
       ).join('\n')}
       CREATE FUNCTION public.owner_visible(t text) RETURNS boolean LANGUAGE plpgsql STABLE
         AS 'BEGIN RETURN true; END';
       CREATE FUNCTION public.owner_check(t text) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true';
       CREATE TABLE region_policy (id integer PRIMARY KEY, label text);
       INSERT INTO region_policy VALUES (1, 'Hidden policy value');
       ALTER TABLE region_policy ENABLE ROW LEVEL SECURITY;
       CREATE POLICY visible ON region_policy FOR SELECT USING (public.owner_visible(label));
       CREATE TABLE region_check (id integer PRIMARY KEY, label text CHECK (public.owner_check(label)));
       INSERT INTO region_check VALUES (1, 'Hidden check value');
       GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${info.user};
       ANALYZE;`,
    );
    const driver = await driverFor(target);
    tables = (await driver.introspect()).tables;
    const query = driver.query.bind(driver);
    driver.query = (text, opts) => {
      if (text === REACH_SQL) lookups++;
      return query(text, opts);
    };
  }, 120_000);
  afterAll(async () => {
    await closeAllDrivers();
  });
  beforeEach(() => {
    forgetCatalogVerdicts();
    lookups = 0;
  });

  it('judges 20 allowed tables with one catalog lookup and samples every one', async () => {
    const index = await sampleValues(target, byName(PLAIN), []);
    expect(lookups).toBe(1);
    expect(index.stats).toMatchObject({ tablesRead: 20, failures: 0, refused: 0, stoppedBy: null });
    expect(sampledTables(index)).toEqual(PLAIN);
    expect(index.columns.find((c) => c.t === 'region_07')?.v).toEqual([
      'Label 7-0',
      'Label 7-1',
      'Label 7-2',
    ]);

    // Remembered while the catalog is unchanged: sampling again needs no lookup at all.
    lookups = 0;
    await sampleValues(target, byName(PLAIN), []);
    expect(lookups).toBe(0);
  });

  it('skips the tables whose read runs owner code and samples all the others, in few lookups', async () => {
    const all = byName([...PLAIN.slice(0, 10), 'region_policy', ...PLAIN.slice(10), 'region_check']);
    const index = await sampleValues(target, all, []);
    expect(index.stats).toMatchObject({ tablesRead: 20, failures: 2, refused: 2, stoppedBy: null });
    expect(sampledTables(index)).toEqual(PLAIN);
    expect(JSON.stringify(index)).not.toContain('Hidden');
    // A refused union is halved down to the refused tables: 2 among 22 cost at most 1 + 2·2·⌈log2 22⌉
    // lookups, fewer than one per table (23 with a union first).
    expect(lookups).toBeGreaterThan(1);
    expect(lookups).toBeLessThanOrEqual(1 + 2 * 2 * Math.ceil(Math.log2(all.length)));
    expect(lookups).toBeLessThan(all.length);
  });

  it('allows exactly what each read allows on its own: the union verdict is never looser', async () => {
    const all = byName([...PLAIN, 'region_policy', 'region_check']);
    const index = await sampleValues(target, all, []);
    const sampled = new Set(sampledTables(index));
    for (const t of all) {
      forgetCatalogVerdicts();
      const own = await runReadOnly(target, `SELECT label FROM public.${t.name} LIMIT 1`).then(
        () => 'allowed',
        (e) => (isAppError(e) && e.code === 'READ_ONLY_VIOLATION' ? 'refused' : `failed: ${e.message}`),
      );
      expect(`${t.name}: ${own}`).toBe(`${t.name}: ${sampled.has(t.name) ? 'allowed' : 'refused'}`);
    }
  });

  it('names the refused statement with the guard’s own refusal, and judges a statement alone when the union does not hold it', async () => {
    const texts = ['region_01', 'region_02', 'region_policy'].map((t) => `SELECT label FROM public.${t}`);
    const verdicts = await judgeReadSet(target, texts, { timeoutMs: 30_000 });
    expect(verdicts.map((v) => v.ok)).toEqual([true, true, false]);
    // The union, then its halves: [region_01, region_02] allowed together, [region_policy] refused.
    expect(lookups).toBe(3);
    const refused = verdicts[2];
    if (refused.ok) throw new Error('region_policy was allowed');
    expect(refused.error.message).toMatch(/row-level security policy visible.*owner_visible/);
    const ok = verdicts[0];
    if (!ok.ok || !ok.cover) throw new Error('region_01 was not judged');
    // A cover is used only for a statement whose names it holds: region_check is judged alone, refused.
    lookups = 0;
    await expect(runReadOnly(target, 'SELECT label FROM public.region_check', {}, ok.cover)).rejects.toThrow(
      /owner_check/,
    );
    expect(lookups).toBe(1);
    // One it holds runs on the union's remembered verdict: no lookup.
    lookups = 0;
    await runReadOnly(target, 'SELECT label FROM public.region_02', {}, ok.cover);
    expect(lookups).toBe(0);
  });

  it('judges a union again when the catalog changes after it was judged', async () => {
    const texts = ['region_03', 'region_04'].map((t) => `SELECT label FROM public.${t}`);
    const [first] = await judgeReadSet(target, texts, { timeoutMs: 30_000 });
    if (!first.ok || !first.cover) throw new Error('region_03 was not judged');
    await postgresAdmin(
      info,
      DB,
      `ALTER TABLE region_04 ENABLE ROW LEVEL SECURITY;
       CREATE POLICY late ON region_04 FOR SELECT USING (public.owner_visible(label));`,
    );
    try {
      // The union now reaches the new policy: refused before region_03 is read, as the union was judged
      // afresh; region_03 judged alone is still allowed.
      await expect(runReadOnly(target, texts[0], {}, first.cover)).rejects.toThrow(/policy late/);
      await expect(runReadOnly(target, texts[0])).resolves.toMatchObject({ rowCount: expect.any(Number) });
    } finally {
      await postgresAdmin(
        info,
        DB,
        'DROP POLICY late ON region_04; ALTER TABLE region_04 DISABLE ROW LEVEL SECURITY',
      );
    }
  });
});
