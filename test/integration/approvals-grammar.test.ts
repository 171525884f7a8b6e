import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  createConnection,
  mariadbConnection,
  openTestDatabases,
  placeSqlite,
  postgresConnection,
  type TestDatabases,
} from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';

/**
 * Writes each dialect's grammar allows beyond plain INSERT/UPDATE/DELETE (DELETE … USING, upserts,
 * multi-table UPDATE, WITH-headed writes), submitted, approved and applied over HTTP on real
 * PostgreSQL, MariaDB and SQLite and read back; and the same forms with a second statement hidden in
 * them, refused at submission with the databases read back unchanged.
 */
const suffix = randomBytes(4).toString('hex');
const T = `gram_t_${suffix}`;
const U = `gram_u_${suffix}`;
const maria = inject('mariadb');
const TYPES = ['POSTGRES', ...(maria ? ['MARIADB'] : []), 'SQLITE'] as const;
type Db = (typeof TYPES)[number];
type Row = { id: number; label: string; n: number };

describe('approved writes on each dialect’s own grammar', () => {
  let s: TestServer;
  let dbs: TestDatabases;
  const rw: Record<string, string> = {};
  let member: { key: string };

  const query = (db: Db, sql: string) => dbs.query(db, sql);
  const rows = (db: Db) => query(db, `SELECT id, label, n FROM ${T} ORDER BY id`) as Promise<Row[]>;
  const others = (db: Db) => query(db, `SELECT id, label FROM ${U} ORDER BY id`);
  const initial: Row[] = [
    { id: 1, label: 'a', n: 10 },
    { id: 2, label: 'b', n: 20 },
    { id: 3, label: 'c', n: 30 },
  ];
  const initialOthers = [
    { id: 2, label: 'gone' },
    { id: 3, label: 'new-c' },
  ];
  const reset = async () => {
    for (const db of TYPES)
      for (const sql of [
        `DELETE FROM ${T}`,
        `DELETE FROM ${U}`,
        `INSERT INTO ${T} (id, label, n) VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30)`,
        `INSERT INTO ${U} (id, label) VALUES (2, 'gone'), (3, 'new-c')`,
      ])
        await query(db, sql);
  };

  const submit = (connectionId: string, query: string) =>
    s.call('POST', '/queries/submit', { key: member.key, body: { connectionId, query } });

  /** Submits as a member, approves as the admin; returns the stored result. */
  const apply = async (db: Db, sql: string, statementType: string) => {
    const sub = await submit(rw[db], sql);
    expect(sub.status, `${sql}: ${sub.text}`).toBe(202);
    expect(sub.body.data).toMatchObject({ status: 'PENDING', statementKind: 'write', statementType });
    const ok = await s.call('POST', `/queries/${sub.body.data.id}/approve`, { body: {} });
    expect(ok.status, `${sql}: ${ok.text}`).toBe(200);
    expect(ok.body.data.status).toBe('APPROVED');
    return ok.body.data.result as { rowsAffected: number; rows: unknown[] };
  };

  beforeAll(async () => {
    s = await startTestServer();
    dbs = await openTestDatabases(inject('postgres'), maria, 'grammar.sqlite');
    await dbs.pg.query(`CREATE TABLE ${T} (id int PRIMARY KEY, label text NOT NULL, n int NOT NULL)`);
    await dbs.pg.query(`CREATE TABLE ${U} (id int PRIMARY KEY, label text NOT NULL)`);
    await dbs.maria?.query(
      `CREATE TABLE ${T} (id INT PRIMARY KEY, label VARCHAR(100) NOT NULL, n INT NOT NULL)`,
    );
    await dbs.maria?.query(`CREATE TABLE ${U} (id INT PRIMARY KEY, label VARCHAR(100) NOT NULL)`);
    dbs.sqlite.exec(`CREATE TABLE ${T} (id INTEGER PRIMARY KEY, label TEXT NOT NULL, n INTEGER NOT NULL)`);
    dbs.sqlite.exec(`CREATE TABLE ${U} (id INTEGER PRIMARY KEY, label TEXT NOT NULL)`);
    rw.POSTGRES = await createConnection(s, postgresConnection(inject('postgres'), { readOnly: false }));
    if (maria) rw.MARIADB = await createConnection(s, mariadbConnection(maria, { readOnly: false }));
    rw.SQLITE = await createConnection(s, {
      name: 'lite',
      type: 'SQLITE',
      database: placeSqlite(s, dbs.sqliteFile),
      readOnly: false,
    });
    const m = await s.call('POST', '/members', {
      body: {
        email: `gram-${suffix}@example.com`,
        name: 'gram',
        role: 'member',
        connectionIds: Object.values(rw),
      },
    });
    expect(m.status, m.text).toBe(201);
    const k = await s.call('POST', `/members/${m.body.data.id}/keys`, { body: { name: 'k' } });
    member = { key: k.body.data.key };
  });

  afterAll(async () => {
    await dbs?.pg.query(`DROP TABLE IF EXISTS ${U}`);
    await dbs?.maria?.query(`DROP TABLE IF EXISTS ${U}`);
    await s?.stop();
    await dbs?.close(T);
  });

  describe('PostgreSQL', () => {
    it('DELETE … USING', async () => {
      await reset();
      const r = await apply(
        'POSTGRES',
        `DELETE FROM ${T} USING ${U} WHERE ${T}.id = ${U}.id AND ${U}.label = 'gone'`,
        'DELETE',
      );
      expect(r.rowsAffected).toBe(1);
      expect(await rows('POSTGRES')).toEqual([initial[0], initial[2]]);
    });

    it('INSERT … ON CONFLICT … DO UPDATE, with RETURNING', async () => {
      await reset();
      const r = await apply(
        'POSTGRES',
        `INSERT INTO ${T} AS t (id, label, n) VALUES (3, 'c', 5), (4, 'd', 40)
         ON CONFLICT (id) DO UPDATE SET n = t.n + EXCLUDED.n RETURNING id, n;`,
        'INSERT',
      );
      expect(r.rowsAffected).toBe(2);
      expect(r.rows).toEqual([
        { id: 3, n: 35 },
        { id: 4, n: 40 },
      ]);
      expect(await rows('POSTGRES')).toEqual([
        ...initial.slice(0, 2),
        { id: 3, label: 'c', n: 35 },
        { id: 4, label: 'd', n: 40 },
      ]);
    });

    it('UPDATE … FROM, and a WITH-headed write that changes two tables', async () => {
      await reset();
      await apply(
        'POSTGRES',
        `UPDATE ${T} SET label = u.label FROM ${U} u WHERE ${T}.id = u.id AND u.id = 3`,
        'UPDATE',
      );
      await apply(
        'POSTGRES',
        `WITH moved AS (DELETE FROM ${U} WHERE id = 2 RETURNING id)
         UPDATE ${T} SET n = 0 WHERE id IN (SELECT id FROM moved)`,
        'UPDATE',
      );
      expect(await rows('POSTGRES')).toEqual([
        initial[0],
        { id: 2, label: 'b', n: 0 },
        { id: 3, label: 'new-c', n: 30 },
      ]);
      expect(await others('POSTGRES')).toEqual([initialOthers[1]]);
    });

    it('MERGE', async () => {
      await reset();
      await apply(
        'POSTGRES',
        `MERGE INTO ${T} t USING ${U} u ON t.id = u.id
         WHEN MATCHED AND u.label = 'gone' THEN DELETE
         WHEN MATCHED THEN UPDATE SET label = u.label`,
        'MERGE',
      );
      expect(await rows('POSTGRES')).toEqual([initial[0], { id: 3, label: 'new-c', n: 30 }]);
    });
  });

  describe('SQLite', () => {
    it('INSERT … ON CONFLICT(id) DO UPDATE (upsert)', async () => {
      await reset();
      const r = await apply(
        'SQLITE',
        `INSERT INTO ${T} (id, label, n) VALUES (1, 'x', 1), (5, 'e', 50)
         ON CONFLICT(id) DO UPDATE SET n = n + excluded.n`,
        'INSERT',
      );
      expect(r.rowsAffected).toBe(2);
      expect(await rows('SQLITE')).toEqual([
        { id: 1, label: 'a', n: 11 },
        ...initial.slice(1),
        { id: 5, label: 'e', n: 50 },
      ]);
    });

    it('UPDATE … FROM and a WITH-headed DELETE', async () => {
      await reset();
      await apply('SQLITE', `UPDATE ${T} SET label = u.label FROM ${U} u WHERE ${T}.id = u.id`, 'UPDATE');
      await apply(
        'SQLITE',
        `WITH x AS (SELECT id FROM ${U} WHERE label = 'gone') DELETE FROM ${T} WHERE id IN (SELECT id FROM x);`,
        'DELETE',
      );
      expect(await rows('SQLITE')).toEqual([initial[0], { id: 3, label: 'new-c', n: 30 }]);
    });
  });

  describe.skipIf(!maria)('MariaDB', () => {
    it('multi-table UPDATE … JOIN … SET', async () => {
      await reset();
      const r = await apply(
        'MARIADB',
        `UPDATE ${T} JOIN ${U} ON ${T}.id = ${U}.id SET ${T}.label = ${U}.label, ${T}.n = ${T}.n + 1`,
        'UPDATE',
      );
      expect(r.rowsAffected).toBe(2);
      expect(await rows('MARIADB')).toEqual([
        initial[0],
        { id: 2, label: 'gone', n: 21 },
        { id: 3, label: 'new-c', n: 31 },
      ]);
    });

    it('INSERT … ON DUPLICATE KEY UPDATE', async () => {
      await reset();
      await apply(
        'MARIADB',
        `INSERT INTO ${T} (id, label, n) VALUES (1, 'a', 5), (6, 'f', 60) ON DUPLICATE KEY UPDATE n = n + VALUES(n)`,
        'INSERT',
      );
      expect(await rows('MARIADB')).toEqual([
        { id: 1, label: 'a', n: 15 },
        ...initial.slice(1),
        { id: 6, label: 'f', n: 60 },
      ]);
    });

    it('multi-table DELETE, and a string with a backslash escape', async () => {
      await reset();
      await apply(
        'MARIADB',
        `DELETE ${T} FROM ${T} JOIN ${U} ON ${T}.id = ${U}.id WHERE ${U}.label = 'gone'`,
        'DELETE',
      );
      await apply('MARIADB', `INSERT INTO ${T} (id, label, n) VALUES (7, 'it\\'s', 70)`, 'INSERT');
      expect(await rows('MARIADB')).toEqual([initial[0], initial[2], { id: 7, label: "it's", n: 70 }]);
    });
  });

  it('hostile input: a second statement hidden in these forms is refused at submission, nothing changes', async () => {
    await reset();
    const pendingBefore = (await s.call('GET', '/queries/pending?pageSize=100')).body.meta.pagination.total;
    const cases: Array<[Db, string, string]> = [
      [
        'POSTGRES',
        `DELETE FROM ${T} USING ${U} WHERE ${T}.id = ${U}.id; DROP TABLE ${U}`,
        'MULTIPLE_STATEMENTS',
      ],
      [
        'POSTGRES',
        `INSERT INTO ${T} (id, label, n) VALUES (1, 'a', 1) ON CONFLICT (id) DO NOTHING /* done */; DELETE FROM ${T}`,
        'MULTIPLE_STATEMENTS',
      ],
      ['POSTGRES', `UPDATE ${T} SET label = $$x;$$ -- c\n; TRUNCATE ${T}`, 'MULTIPLE_STATEMENTS'],
      ['POSTGRES', `UPDATE ${T} SET label = '\\'; DELETE FROM ${T}; --'`, 'MULTIPLE_STATEMENTS'],
      ['POSTGRES', `WITH x AS (SELECT 1) DELETE FROM ${U}; DROP TABLE ${T}`, 'MULTIPLE_STATEMENTS'],
      ['POSTGRES', `/* a */ UPDATE ${T} SET n = 0; /* b */ DELETE FROM ${U}`, 'MULTIPLE_STATEMENTS'],
      ['POSTGRES', `DELETE FROM ${T} USING ${U} WHERE ${T}.id = ${U}.id DELETE FROM ${U}`, 'UNPARSEABLE'],
      ['POSTGRES', `UPDATE ${T} SET label = $$open; DELETE FROM ${T}`, 'UNPARSEABLE'],
      [
        'SQLITE',
        `INSERT INTO ${T} (id, label, n) VALUES (1, 'x', 1) ON CONFLICT(id) DO UPDATE SET n = 0; DROP TABLE ${U}`,
        'MULTIPLE_STATEMENTS',
      ],
      ['SQLITE', `DELETE FROM ${T} /* ; */; DELETE FROM ${U}`, 'MULTIPLE_STATEMENTS'],
      ['SQLITE', `UPDATE ${T} SET label = 'x;y'; DELETE FROM ${T} -- '`, 'MULTIPLE_STATEMENTS'],
      ['SQLITE', `UPDATE ${T} SET n = 0 END DELETE FROM ${U}`, 'UNPARSEABLE'],
      ...(maria
        ? ([
            [
              'MARIADB',
              `UPDATE ${T} JOIN ${U} ON ${T}.id = ${U}.id SET ${T}.n = 0; DELETE FROM ${U}`,
              'MULTIPLE_STATEMENTS',
            ],
            [
              'MARIADB',
              `INSERT INTO ${T} (id, label, n) VALUES (1, 'a', 1) ON DUPLICATE KEY UPDATE n = 0 # c\n; DELETE FROM ${T}`,
              'MULTIPLE_STATEMENTS',
            ],
            ['MARIADB', `UPDATE ${T} SET label = 'a\\'; DELETE FROM ${T}; -- '`, 'MULTIPLE_STATEMENTS'],
            ['MARIADB', `UPDATE ${T} SET n = 1 --1; DELETE FROM ${T}`, 'MULTIPLE_STATEMENTS'],
            ['MARIADB', `UPDATE ${T} SET n = 0 /*! ; DELETE FROM ${T} */`, 'EXECUTABLE_COMMENT'],
            [
              'MARIADB',
              `UPDATE ${T} JOIN ${U} ON ${T}.id = ${U}.id SET ${T}.n = 0 END DELETE FROM ${U}`,
              'UNPARSEABLE',
            ],
          ] as Array<[Db, string, string]>)
        : []),
    ];
    for (const [db, sql, statementType] of cases) {
      const r = await submit(rw[db], sql);
      expect(r.status, `${db} ${JSON.stringify(sql)}: ${r.text}`).toBe(400);
      expect(r.body.error.code).toBe('READ_ONLY_VIOLATION');
      expect(r.body.error.details.statementType, `${db} ${sql}`).toBe(statementType);
    }
    expect((await s.call('GET', '/queries/pending?pageSize=100')).body.meta.pagination.total).toBe(
      pendingBefore,
    );
    for (const db of TYPES) {
      expect(await rows(db)).toEqual(initial);
      expect(await others(db)).toEqual(initialOthers);
    }
  });
});
