import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import mysql from 'mysql2/promise';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { APPROVAL_MAX_RESULT_BYTES, runApproved } from '../../shared/approvals/execute';
import { closeAllDrivers } from '../../shared/databases/drivers/index';
import type { ConnectionTarget, DbType } from '../../shared/databases/drivers/types';
import { resetConfig } from '../../shared/platform/config';
import type { AppError } from '../../shared/platform/errors';
import { postgresClient } from '../support/connections';

/**
 * The approved-write path under its statement timeout, against real PostgreSQL, MariaDB and SQLite
 * (a short timeout instead of the 25 s one): the statement is stopped, answered 504 QUERY_TIMEOUT,
 * nothing is committed, and the connection works for the next write.
 */
const suffix = randomBytes(4).toString('hex');
const T = `appr_to_${suffix}`;
const pgInfo = inject('postgres');
const maria = inject('mariadb');

describe('approved writes under the statement timeout', () => {
  // SQLite sources live in the organization's folder under LOUPE_SQLITE_ROOT.
  const dir = mkdtempSync(join(tmpdir(), 'loupe-appr-to-'));
  const orgId = `org-${suffix}`;
  const file = join(dir, orgId, 't.sqlite');
  let pgc: pg.Client;
  let my: mysql.Connection | undefined;

  const target = (type: DbType): ConnectionTarget => {
    if (type === 'SQLITE')
      return {
        id: `to-lite-${suffix}`,
        version: '1',
        type,
        orgId,
        host: '',
        port: null,
        database: 't.sqlite',
        username: '',
        password: '',
        sslEnabled: false,
      };
    const info = type === 'POSTGRES' ? pgInfo : maria!;
    return {
      id: `to-${type}-${suffix}`,
      version: '1',
      type,
      host: info.host,
      port: info.port,
      database: info.database,
      username: info.user,
      password: info.password,
      sslEnabled: false,
    };
  };
  const read = async (type: DbType) => {
    const sql = `SELECT n FROM ${T} ORDER BY id`;
    if (type === 'POSTGRES') return (await pgc.query(sql)).rows.map((r) => r.n);
    if (type === 'MARIADB') return ((await my!.query(sql))[0] as Array<{ n: number }>).map((r) => r.n);
    const d = new DatabaseSync(file, { readOnly: true });
    try {
      return (d.prepare(sql).all() as Array<{ n: number }>).map((r) => r.n);
    } finally {
      d.close();
    }
  };

  beforeAll(async () => {
    process.env.LOUPE_SQLITE_ROOT = dir;
    resetConfig();
    mkdirSync(join(dir, orgId));
    pgc = await postgresClient(pgInfo);
    await pgc.query(`CREATE TABLE ${T} (id int PRIMARY KEY, n int)`);
    await pgc.query(`INSERT INTO ${T} VALUES (1, 1), (2, 2)`);
    if (maria) {
      my = await mysql.createConnection({
        host: maria.host,
        port: maria.port,
        user: maria.user,
        password: maria.password,
        database: maria.database,
      });
      await my.query(`CREATE TABLE ${T} (id INT PRIMARY KEY, n INT)`);
      await my.query(`INSERT INTO ${T} VALUES (1, 1), (2, 2)`);
    }
    const d = new DatabaseSync(file);
    d.exec(`CREATE TABLE ${T} (id INTEGER PRIMARY KEY, n INTEGER); INSERT INTO ${T} VALUES (1, 1), (2, 2);`);
    d.close();
  });
  afterAll(async () => {
    await closeAllDrivers();
    await pgc?.query(`DROP TABLE IF EXISTS ${T}`);
    await pgc?.end();
    await my?.query(`DROP TABLE IF EXISTS ${T}`);
    await my?.end();
    rmSync(dir, { recursive: true, force: true });
  });

  const slow: Record<string, string> = {
    // Row 1 is written before the statement runs out of time on row 2.
    POSTGRES: `UPDATE ${T} SET n = CASE WHEN id = 1 THEN 100 ELSE (SELECT 100 FROM pg_sleep(3)) END`,
    MARIADB: `UPDATE ${T} SET n = 100 + SLEEP(CASE WHEN id = 2 THEN 3 ELSE 0 END) ORDER BY id`,
    SQLITE: `UPDATE ${T} SET n = CASE WHEN id = 1 THEN 100 ELSE (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000000) SELECT count(*) FROM c) END`,
  };

  for (const type of ['POSTGRES', 'MARIADB', 'SQLITE'] as const)
    it.skipIf(type === 'MARIADB' && !maria)(
      `${type}: 504 QUERY_TIMEOUT, nothing committed, the next write works`,
      async () => {
        const e = (await runApproved(target(type), slow[type], 'write', APPROVAL_MAX_RESULT_BYTES, 500).catch(
          (x) => x,
        )) as AppError;
        expect(e.code, String(e.message)).toBe('QUERY_TIMEOUT');
        expect(e.status).toBe(504);
        expect(await read(type)).toEqual([1, 2]);
        const ok = await runApproved(target(type), `UPDATE ${T} SET n = n + 10 WHERE id = 2`, 'write');
        expect(ok.rowsAffected).toBe(1);
        expect(await read(type)).toEqual([1, 12]);
      },
    );
});
