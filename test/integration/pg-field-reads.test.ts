import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createConnection, postgresConnection } from '../support/connections';
import { createFieldDatabase, FIELD_CORPUS } from '../support/field-schema';
import type { DbInfo } from '../support/global-setup';
import { startTestServer, type TestServer } from '../support/server';

/**
 * Issue 43: ordinary analyst reads over an application schema as teams run it (PostGIS, hll, ip4r,
 * semver, prefix, citext, pg_trgm, hstore, btree_gist, enums, domains, partitions, views, a
 * materialized view, row-level security, owner functions; test/support/field-schema.ts), on Debian's
 * PostgreSQL with JIT on. Each statement first runs directly as the connection's login in a READ ONLY
 * transaction; then every one must answer 200 through `POST /connections/{id}/query`, once on a
 * database whose role reaches no escape (open mode) and once on the same schema plus dblink (strict
 * mode, where the admin lists the owner's two helper functions in allowedFunctions). A failure lists
 * every refused or failed statement with its answer.
 */
const stock = inject('stockPostgres');

/** Runs every corpus statement as the login in `BEGIN READ ONLY … ROLLBACK`; answers the failures. */
async function directFailures(info: DbInfo, database: string): Promise<string[]> {
  const c = new pg.Client({
    host: info.host,
    port: info.port,
    user: info.user,
    password: info.password,
    database,
  });
  await c.connect();
  const failures: string[] = [];
  try {
    for (const sql of FIELD_CORPUS) {
      await c.query('BEGIN READ ONLY');
      await c.query(sql).catch((e: Error) => failures.push(`${sql}\n    → ${e.message}`));
      await c.query('ROLLBACK');
    }
  } finally {
    await c.end();
  }
  return failures;
}

function fieldReads(title: string, db: string, opts: { dblink?: boolean }) {
  describe.skipIf(!stock)(title, () => {
    const info = stock as DbInfo;
    let s: TestServer;
    let connectionId: string;

    beforeAll(async () => {
      await createFieldDatabase(info, db, opts);
      s = await startTestServer();
      // Strict mode judges every read: the owner's two helper functions run once an admin lists them
      // (in open mode they run without, as nothing they can reach changes anything).
      const allowedFunctions = opts.dblink ? ['public.net_amount', 'public.customer_lifetime_value'] : [];
      connectionId = await createConnection(
        s,
        postgresConnection(info, { database: db, name: title, allowedFunctions }),
      );
      const mode = (await s.call('GET', `/connections/${connectionId}/read-safety`)).body.data.mode;
      expect(mode).toBe(opts.dblink ? 'strict' : 'open');
    });

    afterAll(async () => {
      await s?.stop();
    });

    it('the corpus is valid: every statement runs as the login in a READ ONLY transaction', async () => {
      expect(FIELD_CORPUS.length).toBeGreaterThanOrEqual(90);
      expect(await directFailures(info, db)).toEqual([]);
    });

    it(`every one of the ${FIELD_CORPUS.length} reads answers 200 through POST /connections/{id}/query`, async () => {
      const failures: string[] = [];
      for (const sql of FIELD_CORPUS) {
        const started = performance.now();
        const r = await s.call('POST', `/connections/${connectionId}/query`, { body: { sql, maxRows: 100 } });
        if (r.status !== 200) {
          const took = Math.round(performance.now() - started);
          const why = r.body?.error ? `${r.body.error.code}: ${r.body.error.message}` : r.text.slice(0, 300);
          failures.push(`${r.status} after ${took} ms: ${sql}\n    → ${why}`);
        }
      }
      expect(failures, `${failures.length} of ${FIELD_CORPUS.length} reads did not answer 200`).toEqual([]);
    }, 1_800_000);
  });
}

// Skipped only where Debian's PostgreSQL is not installed (a developer machine without it): the global
// setup requires it in CI, so this placeholder never registers there; it says in the report why the field
// reads did not run.
if (!stock)
  describe('PostgreSQL field reads (issue 43)', () => {
    it.skip("needs Debian's PostgreSQL (apt-get install postgresql-15 and the extension packages; CI installs them)", () => {});
  });

fieldReads('field schema, open mode (no escape reachable)', `field_open_${process.pid}`, {});
fieldReads('field schema plus dblink, strict mode', `field_strict_${process.pid}`, { dblink: true });
