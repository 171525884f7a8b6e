import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { CorpusFixture } from '../../bench/guard';
import { closeAllDrivers } from '../../shared/databases/drivers/index';
import type { ConnectionTarget } from '../../shared/databases/drivers/types';
import { runReadOnly } from '../../shared/databases/run';
import { isAppError } from '../../shared/platform/errors';
import { createPostgresDatabase, postgresAdmin, postgresClient } from '../support/connections';

/**
 * Issue 32, point 2: an owner's operator or function whose signature duplicates a built-in's can
 * never be chosen under the read session's search_path (pg_catalog first), so it must not make the
 * guard refuse anything. The owner duplicates the common comparison, arithmetic, text and date
 * operators and functions in public and puts public before pg_catalog on its role; every valid read
 * of the public corpus (test/fixtures/guard-corpus.json) then goes through the real read path. Its
 * tables are not created: each read stops at the server ("relation … does not exist", 422) after
 * the guard, whose refusals (400) are what is counted.
 */
const DB = `guard_shadow_${process.pid}`;
const fixture = JSON.parse(
  readFileSync(join(__dirname, '..', 'fixtures', 'guard-corpus.json'), 'utf8'),
) as CorpusFixture;

describe('the PostgreSQL corpus on a database whose owner shadows built-ins', () => {
  const info = inject('postgres');
  const target: ConnectionTarget = {
    id: `shadow-${process.pid}`,
    version: '1',
    type: 'POSTGRES',
    host: info.host,
    port: info.port,
    database: DB,
    username: info.user,
    password: info.password,
    sslEnabled: false,
  };

  beforeAll(async () => {
    await createPostgresDatabase(info, DB);
    await postgresAdmin(
      info,
      DB,
      `ALTER ROLE ${info.user} IN DATABASE ${DB} SET search_path = public, pg_catalog`,
    );
    const owner = await postgresClient({ ...info, database: DB });
    const types = ['text', 'integer', 'bigint', 'numeric', 'double precision', 'date', 'timestamp'];
    const sql: string[] = [];
    let n = 0;
    for (const t of types) {
      for (const op of ['=', '<>', '<', '>', '<=', '>=']) {
        const fn = `public.shadow_${++n}`;
        sql.push(
          `CREATE FUNCTION ${fn}(a ${t}, b ${t}) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true'`,
          `CREATE OPERATOR public.${op} (LEFTARG = ${t}, RIGHTARG = ${t}, FUNCTION = ${fn})`,
        );
      }
      if (['integer', 'bigint', 'numeric', 'double precision'].includes(t))
        for (const op of ['+', '-', '*', '/']) {
          const fn = `public.shadow_${++n}`;
          sql.push(
            `CREATE FUNCTION ${fn}(a ${t}, b ${t}) RETURNS ${t} LANGUAGE sql IMMUTABLE AS 'SELECT a'`,
            `CREATE OPERATOR public.${op} (LEFTARG = ${t}, RIGHTARG = ${t}, FUNCTION = ${fn})`,
          );
        }
    }
    sql.push(
      `CREATE FUNCTION public.shadow_cat(a text, b text) RETURNS text LANGUAGE sql IMMUTABLE AS 'SELECT a'`,
      'CREATE OPERATOR public.|| (LEFTARG = text, RIGHTARG = text, FUNCTION = public.shadow_cat)',
      `CREATE FUNCTION public.shadow_like(a text, b text) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true'`,
      'CREATE OPERATOR public.~~ (LEFTARG = text, RIGHTARG = text, FUNCTION = public.shadow_like)',
      'CREATE OPERATOR public.~~* (LEFTARG = text, RIGHTARG = text, FUNCTION = public.shadow_like)',
      `CREATE FUNCTION public.lower(t text) RETURNS text LANGUAGE sql IMMUTABLE AS 'SELECT t'`,
      `CREATE FUNCTION public.upper(t text) RETURNS text LANGUAGE sql IMMUTABLE AS 'SELECT t'`,
      `CREATE FUNCTION public.round(v numeric, s integer) RETURNS numeric LANGUAGE sql IMMUTABLE AS 'SELECT v'`,
      `CREATE FUNCTION public.date_trunc(f text, v timestamp) RETURNS timestamp LANGUAGE sql IMMUTABLE AS 'SELECT v'`,
      `CREATE FUNCTION public.sum_step(s bigint, v integer) RETURNS bigint LANGUAGE sql IMMUTABLE AS 'SELECT s'`,
      'CREATE AGGREGATE public.sum(integer) (SFUNC = public.sum_step, STYPE = bigint)',
      `CREATE FUNCTION public.avg_step(s numeric, v numeric) RETURNS numeric LANGUAGE sql IMMUTABLE AS 'SELECT s'`,
      'CREATE AGGREGATE public.avg(numeric) (SFUNC = public.avg_step, STYPE = numeric)',
    );
    await owner.query(sql.join(';\n'));
    await owner.end();
  });

  afterAll(async () => {
    await closeAllDrivers();
  });

  it('refuses none of the corpus’ valid reads because of an owner object with a built-in’s signature', async () => {
    const statements = fixture.dialects.POSTGRES.statements;
    expect(statements.length).toBeGreaterThan(100);
    const refused: string[] = [];
    for (const sql of statements)
      await runReadOnly(target, sql).catch((e: unknown) => {
        if (!isAppError(e) || e.code !== 'QUERY_FAILED') refused.push(`${(e as Error).message}\n  ${sql}`);
      });
    expect(refused, refused.slice(0, 3).join('\n')).toEqual([]);
  });

  it('still refuses an owner operator that a built-in does not already have', async () => {
    const owner = await postgresClient({ ...info, database: DB });
    await owner.query(
      `CREATE FUNCTION public.near(a text, b integer) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true';
       CREATE OPERATOR public.= (LEFTARG = text, RIGHTARG = integer, FUNCTION = public.near)`,
    );
    await owner.end();
    const e = await runReadOnly(target, "SELECT 'a' = 1").catch((x: unknown) => x);
    expect(isAppError(e) && e.code, String(e)).toBe('READ_ONLY_VIOLATION');
    expect((e as Error).message).toContain('public.near()');
  });
});
