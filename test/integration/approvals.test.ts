import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createOrganization } from '../../shared/auth/bootstrap';
import { listEvents } from '../../shared/platform/events';
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
 * Query approval over real HTTP through the local runtime, with writes applied to (and read back
 * from) real PostgreSQL, MariaDB and SQLite.
 */
const suffix = randomBytes(4).toString('hex');
const T = `appr_${suffix}`;
const maria = inject('mariadb');
const TYPES = ['POSTGRES', ...(maria ? ['MARIADB'] : []), 'SQLITE'] as const;
type Db = (typeof TYPES)[number];

describe('query approval with real databases', () => {
  let s: TestServer;
  let dbs: TestDatabases;
  /** Writable connections (readOnly: false) by type, and a read-only PostgreSQL one. */
  const rw: Record<string, string> = {};
  let roPg: string;
  const users: Record<string, { id: string; key: string }> = {};
  let outsider: { orgId: string; key: string };

  const rows = (db: Db) =>
    dbs.query<{ id: number; label: string; n: number }>(db, `SELECT id, label, n FROM ${T} ORDER BY id`);
  const reset = async () => {
    const sql = [
      `DELETE FROM ${T}`,
      `INSERT INTO ${T} (id, label, n) VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30)`,
    ];
    for (const q of sql) {
      await dbs.pg.query(q);
      await dbs.maria?.query(q);
      dbs.sqlite.exec(q);
    }
  };
  const initial = [
    { id: 1, label: 'a', n: 10 },
    { id: 2, label: 'b', n: 20 },
    { id: 3, label: 'c', n: 30 },
  ];

  const member = async (name: string, role: 'admin' | 'member', connectionIds: string[] = []) => {
    const m = await s.call('POST', '/members', {
      body: { email: `${name}-${suffix}@example.com`, name, role, connectionIds },
    });
    expect(m.status, m.text).toBe(201);
    const k = await s.call('POST', `/members/${m.body.data.id}/keys`, { body: { name: 'k' } });
    expect(k.status, k.text).toBe(201);
    return { id: m.body.data.id as string, key: k.body.data.key as string };
  };
  const submit = (key: string, connectionId: string, query: string, context?: string) =>
    s.call('POST', '/queries/submit', { key, body: { connectionId, query, context } });
  const approve = (key: string, id: string, note?: string) =>
    s.call('POST', `/queries/${id}/approve`, { key, body: note === undefined ? {} : { note } });
  const reject = (key: string, id: string, note?: string) =>
    s.call('POST', `/queries/${id}/reject`, { key, body: note === undefined ? {} : { note } });
  const status = (key: string, id: string) => s.call('GET', `/queries/${id}/status`, { key });
  const rule = async (body: Record<string, unknown>) => {
    const r = await s.call('POST', '/approval-rules', { body });
    expect(r.status, r.text).toBe(201);
    return r.body.data as { id: string };
  };
  const dropRule = async (id: string) =>
    expect((await s.call('DELETE', `/approval-rules/${id}`)).status).toBe(200);

  beforeAll(async () => {
    s = await startTestServer();
    dbs = await openTestDatabases(inject('postgres'), maria, 'approvals.sqlite');
    await dbs.pg.query(`CREATE TABLE ${T} (id int PRIMARY KEY, label text NOT NULL, n int NOT NULL)`);
    await dbs.maria?.query(
      `CREATE TABLE ${T} (id INT PRIMARY KEY, label VARCHAR(100) NOT NULL, n INT NOT NULL)`,
    );
    dbs.sqlite.exec(`CREATE TABLE ${T} (id INTEGER PRIMARY KEY, label TEXT NOT NULL, n INTEGER NOT NULL)`);
    await reset();
    const pgInfo = inject('postgres');
    rw.POSTGRES = await createConnection(s, postgresConnection(pgInfo, { name: 'pg-rw', readOnly: false }));
    if (maria)
      rw.MARIADB = await createConnection(s, mariadbConnection(maria, { name: 'maria-rw', readOnly: false }));
    rw.SQLITE = await createConnection(s, {
      name: 'lite-rw',
      type: 'SQLITE',
      database: placeSqlite(s, dbs.sqliteFile),
      readOnly: false,
    });
    roPg = await createConnection(s, postgresConnection(pgInfo, { name: 'pg-ro' }));
    const all = [...Object.values(rw), roPg];
    users.member = await member('submitter', 'member', all);
    users.approver = await member('approver', 'member');
    users.approver2 = await member('approver-two', 'member');
    users.admin2 = await member('other-admin', 'admin');
    users.bystander = await member('bystander', 'member', all);
    const o = await createOrganization({
      name: `Other ${suffix}`,
      adminEmail: `admin-${suffix}@other.example`,
    });
    outsider = { orgId: o.orgId, key: o.key };
  });

  afterAll(async () => {
    await s?.stop();
    await dbs?.close(T);
  });

  describe.each(TYPES)('%s', (db) => {
    it('a write submitted by a member is approved by a named approver and applied', async () => {
      await reset();
      const r1 = await rule({ approvers: [users.approver.id, users.member.id], connectionId: rw[db] });
      try {
        const sub = await submit(
          users.member.key,
          rw[db],
          `UPDATE ${T} SET label = 'approved', n = n + 1 WHERE id = 2`,
          'fix row 2',
        );
        expect(sub.status, sub.text).toBe(202);
        const q = sub.body.data;
        expect(q).toMatchObject({
          connectionId: rw[db],
          connectionName: expect.any(String),
          connectionType: db,
          apiKeyId: expect.any(String),
          context: 'fix row 2',
          status: 'PENDING',
          statementKind: 'write',
          statementType: 'UPDATE',
          submittedBy: users.member.id,
          reviewNote: null,
        });
        expect(q.result).toBeUndefined();
        const ttl = Date.parse(q.expiresAt) - Date.parse(q.createdAt);
        expect(ttl).toBe(24 * 3600 * 1000);
        // Nothing ran yet.
        expect(await rows(db)).toEqual(initial);

        // The submitter is a named approver, yet never approves its own submission.
        const self = await approve(users.member.key, q.id);
        expect(self.status, self.text).toBe(403);
        expect(self.body.error.message).toMatch(/own submission/);
        // Admins who are not named while a rule names approvers: 403.
        for (const key of [s.adminKey, users.admin2.key, users.bystander.key]) {
          const r = await approve(key, q.id);
          expect(r.status, r.text).toBe(403);
          expect(r.body.error.code).toBe('FORBIDDEN');
        }
        expect(await rows(db)).toEqual(initial);

        const ok = await approve(users.approver.key, q.id, 'looks right');
        expect(ok.status, ok.text).toBe(200);
        expect(ok.body.data).toMatchObject({
          id: q.id,
          status: 'APPROVED',
          reviewedBy: users.approver.id,
          reviewNote: 'looks right',
          result: { rowsAffected: 1, columns: [], rows: [] },
        });
        expect(await rows(db)).toEqual([initial[0], { id: 2, label: 'approved', n: 21 }, initial[2]]);

        // The connection's query history records the approved statement.
        const history = await s.call('GET', `/connections/${rw[db]}/queries?pageSize=5`);
        expect(history.body.data[0]).toMatchObject({
          source: 'approval',
          status: 'SUCCESS',
          sql: q.query,
          userId: users.member.id,
          question: 'fix row 2',
        });

        const st = await status(users.member.key, q.id);
        expect(st.status).toBe(200);
        expect(st.body.data).toMatchObject({
          status: 'APPROVED',
          reviewedBy: users.approver.id,
          reviewNote: 'looks right',
          result: { rowsAffected: 1 },
          error: null,
        });
        // Once approved, nothing else moves it.
        for (const r of [await approve(users.approver.key, q.id), await reject(users.approver.key, q.id)]) {
          expect(r.status).toBe(409);
          expect(r.body.error).toMatchObject({ code: 'INVALID_STATE', details: { status: 'APPROVED' } });
        }
        expect(await rows(db)).toEqual([initial[0], { id: 2, label: 'approved', n: 21 }, initial[2]]);
      } finally {
        await dropRule(r1.id);
      }
    });

    it('reject leaves the database unchanged', async () => {
      await reset();
      const q = (await submit(users.member.key, rw[db], `DELETE FROM ${T} WHERE id > 1`)).body.data;
      expect(q.status).toBe('PENDING');
      // No rule: any admin but the submitter may review.
      const r = await reject(users.admin2.key, q.id, 'no');
      expect(r.status, r.text).toBe(200);
      expect(r.body.data).toEqual({
        id: q.id,
        status: 'REJECTED',
        reviewedBy: users.admin2.id,
        reviewNote: 'no',
        result: null,
      });
      expect((await status(users.member.key, q.id)).body.data).toMatchObject({
        status: 'REJECTED',
        reviewNote: 'no',
      });
      const again = await approve(s.adminKey, q.id);
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe('INVALID_STATE');
      expect(await rows(db)).toEqual(initial);
    });

    it('a failing write leaves the database unchanged: 422, the query stays APPROVED with the error', async () => {
      await reset();
      // Row 1 is updated before row 2 violates NOT NULL: only a rolled-back transaction leaves row 1 as it was.
      const q = (
        await submit(users.member.key, rw[db], `UPDATE ${T} SET n = CASE WHEN id = 2 THEN NULL ELSE 999 END`)
      ).body.data;
      const r = await approve(s.adminKey, q.id);
      expect(r.status, r.text).toBe(422);
      expect(r.body.error).toMatchObject({
        code: 'QUERY_FAILED',
        details: { queryId: q.id, status: 'APPROVED' },
      });
      expect(await rows(db)).toEqual(initial);
      const st = (await status(users.member.key, q.id)).body.data;
      expect(st).toMatchObject({
        status: 'APPROVED',
        reviewedBy: s.app.adminUserId,
        error: { code: 'QUERY_FAILED' },
      });
      expect(st.result).toBeUndefined();
      const history = await s.call('GET', `/connections/${rw[db]}/queries?pageSize=5`);
      expect(history.body.data[0]).toMatchObject({
        source: 'approval',
        status: 'FAILED',
        errorCode: 'QUERY_FAILED',
      });
    });

    it('two concurrent approvals: exactly one wins and the write is applied once', async () => {
      await reset();
      const r1 = await rule({ approvers: [users.approver.id, users.approver2.id], connectionId: rw[db] });
      try {
        const q = (await submit(users.member.key, rw[db], `UPDATE ${T} SET n = n + 1 WHERE id = 1`)).body
          .data;
        const answers = await Promise.all([
          approve(users.approver.key, q.id),
          approve(users.approver2.key, q.id),
        ]);
        expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
        expect(answers.find((a) => a.status === 409)!.body.error.code).toBe('INVALID_STATE');
        expect((await rows(db))[0]).toEqual({ id: 1, label: 'a', n: 11 });
      } finally {
        await dropRule(r1.id);
      }
    });
  });

  it('a PostgreSQL write with RETURNING stores the rows and rowsAffected', async () => {
    await reset();
    const q = (
      await submit(users.member.key, rw.POSTGRES, `UPDATE ${T} SET n = n * 2 WHERE id >= 2 RETURNING id, n`)
    ).body.data;
    const r = await approve(s.adminKey, q.id);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.result).toMatchObject({
      columns: ['id', 'n'],
      rows: [
        { id: 2, n: 40 },
        { id: 3, n: 60 },
      ],
      rowsAffected: 2,
    });
    expect(await rows('POSTGRES')).toEqual([
      initial[0],
      { id: 2, label: 'b', n: 40 },
      { id: 3, label: 'c', n: 60 },
    ]);
  });

  it('an approved statement that changes its session leaves no trace on pooled sessions', async () => {
    const cases: Array<[string, string, string, string, unknown]> = [
      [
        rw.POSTGRES,
        `SELECT set_config('search_path', 'loupe_nowhere', false)`,
        `SELECT current_setting('search_path') AS v`,
        'v',
        '"$user", public',
      ],
      ...(maria
        ? ([[rw.MARIADB, 'SET @loupe_mark = 42', 'SELECT @loupe_mark AS v', 'v', null]] as Array<
            [string, string, string, string, unknown]
          >)
        : []),
    ];
    for (const [conn, change, probe, column, expected] of cases) {
      const q = (await submit(users.member.key, conn, change)).body.data;
      const r = await approve(s.adminKey, q.id);
      expect(r.status, r.text).toBe(200);
      // Several reads (the pool holds up to 3 sessions): none sees the approved statement's setting.
      const seen = await Promise.all(
        [1, 2, 3, 4].map(() => s.call('POST', `/connections/${conn}/query`, { body: { sql: probe } })),
      );
      for (const x of seen) {
        expect(x.status, x.text).toBe(200);
        expect(x.body.data.rows[0][column]).toEqual(expected);
      }
    }
  });

  it('a write on a readOnly connection is refused at submission and nothing is stored', async () => {
    await reset();
    const before = (await listEvents(s.app.orgId, { limit: 1000 })).length;
    const pendingBefore = (await s.call('GET', '/queries/pending?pageSize=100')).body.meta.pagination.total;
    for (const sql of [
      `UPDATE ${T} SET n = 0`,
      `DELETE FROM ${T}`,
      `DROP TABLE ${T}`,
      `INSERT INTO ${T} (id, label, n) VALUES (9, 'x', 9)`,
    ]) {
      const r = await submit(users.member.key, roPg, sql);
      expect(r.status, r.text).toBe(400);
      expect(r.body.error.code).toBe('READ_ONLY_VIOLATION');
    }
    expect((await s.call('GET', '/queries/pending?pageSize=100')).body.meta.pagination.total).toBe(
      pendingBefore,
    );
    expect((await listEvents(s.app.orgId, { limit: 1000 })).length).toBe(before);
    expect(await rows('POSTGRES')).toEqual(initial);
    // A read on the read-only connection can be submitted.
    expect((await submit(users.member.key, roPg, `SELECT count(*) AS c FROM ${T}`)).status).toBe(202);
  });

  it('a write-scope rule approves a read at once (reviewedBy auto, result stored); writes still wait', async () => {
    await reset();
    const r1 = await rule({ approvers: [users.approver.id], connectionId: rw.POSTGRES, scope: 'write' });
    try {
      const read = await submit(users.member.key, rw.POSTGRES, `SELECT id, n FROM ${T} ORDER BY id`);
      expect(read.status, read.text).toBe(202);
      expect(read.body.data).toMatchObject({
        status: 'APPROVED',
        reviewedBy: 'auto',
        statementKind: 'read',
        result: {
          columns: ['id', 'n'],
          rows: [
            { id: 1, n: 10 },
            { id: 2, n: 20 },
            { id: 3, n: 30 },
          ],
          rowCount: 3,
        },
      });
      expect((await status(users.member.key, read.body.data.id)).body.data.result.rowCount).toBe(3);
      const events = (await listEvents(s.app.orgId, { limit: 1000 })).filter(
        (e) => (e.data as { queryId?: string }).queryId === read.body.data.id,
      );
      expect(events.map((e) => e.type)).toEqual(['query.approval.requested', 'query.approved']);
      expect(events[1].data).toMatchObject({ reviewedBy: 'auto', execution: 'SUCCEEDED', rowCount: 3 });
      const write = await submit(users.member.key, rw.POSTGRES, `UPDATE ${T} SET n = 0`);
      expect(write.body.data.status).toBe('PENDING');
      expect((await reject(users.approver.key, write.body.data.id)).status).toBe(200);
    } finally {
      await dropRule(r1.id);
    }
    // Without the rule (or under scope all) a read waits for a person too.
    const r2 = await rule({ approvers: [users.approver.id], scope: 'all' });
    try {
      const read = await submit(users.member.key, rw.POSTGRES, `SELECT 1 AS one`);
      expect(read.body.data.status).toBe('PENDING');
      const ok = await approve(users.approver.key, read.body.data.id);
      expect(ok.status, ok.text).toBe(200);
      expect(ok.body.data.result).toMatchObject({ columns: ['one'], rows: [{ one: 1 }], rowCount: 1 });
    } finally {
      await dropRule(r2.id);
    }
  });

  it('lists pending queries oldest first, for admins and approvers only', async () => {
    const a = (await submit(users.member.key, rw.SQLITE, `UPDATE ${T} SET n = 1 WHERE id = 1`)).body.data;
    const b = (await submit(users.member.key, rw.POSTGRES, `UPDATE ${T} SET n = 1 WHERE id = 1`)).body.data;
    const list = await s.call('GET', '/queries/pending?pageSize=100');
    expect(list.status).toBe(200);
    const ids = list.body.data.map((q: { id: string }) => q.id);
    expect(ids.indexOf(a.id)).toBeGreaterThanOrEqual(0);
    expect(ids.indexOf(a.id)).toBeLessThan(ids.indexOf(b.id));
    const created = list.body.data.map((q: { createdAt: string }) => q.createdAt);
    expect([...created].sort()).toEqual(created);
    expect(list.body.data.every((q: { status: string }) => q.status === 'PENDING')).toBe(true);
    // Pagination: one per page.
    const p1 = await s.call('GET', '/queries/pending?pageSize=1&page=1');
    expect(p1.body.meta.pagination).toMatchObject({ pageSize: 1, total: list.body.meta.pagination.total });
    expect(p1.body.data).toHaveLength(1);
    // A member who is no approver: 403; an approver of an active rule sees what it may review.
    expect((await s.call('GET', '/queries/pending', { key: users.bystander.key })).status).toBe(403);
    const r1 = await rule({ approvers: [users.approver.id], connectionId: rw.SQLITE });
    try {
      const mine = await s.call('GET', '/queries/pending?pageSize=100', { key: users.approver.key });
      expect(mine.status, mine.text).toBe(200);
      const seen = mine.body.data.map((q: { id: string }) => q.id);
      expect(seen).toContain(a.id);
      expect(seen).not.toContain(b.id);
    } finally {
      await dropRule(r1.id);
    }
    for (const q of [a, b]) expect((await reject(s.adminKey, q.id)).status).toBe(200);
    const after = (await s.call('GET', '/queries/pending?pageSize=100')).body.data.map(
      (q: { id: string }) => q.id,
    );
    expect(after).not.toContain(a.id);
  });

  it('approval rules: approvers must be active users of the organization; connectionId must exist', async () => {
    const ok = await s.call('POST', '/approval-rules', { body: { approvers: [users.approver.id] } });
    expect(ok.status).toBe(201);
    expect(ok.body.data).toMatchObject({
      connectionId: null,
      scope: 'all',
      approvers: [users.approver.id],
      isActive: true,
      orgId: s.app.orgId,
    });
    const id = ok.body.data.id;
    const bad: Array<[Record<string, unknown>, number]> = [
      [{ approvers: ['not-a-user'] }, 400],
      [{ approvers: [] }, 400],
      [{}, 400],
      [{ approvers: [users.approver.id], scope: 'bogus' }, 400],
      [{ approvers: [users.approver.id], connectionId: 'missing' }, 404],
      [{ approvers: [outsider.orgId] }, 400],
    ];
    for (const [body, code] of bad) {
      const r = await s.call('POST', '/approval-rules', { body });
      expect(r.status, JSON.stringify(body) + r.text).toBe(code);
    }
    const patched = await s.call('PATCH', `/approval-rules/${id}`, {
      body: { scope: 'write', isActive: false, connectionId: rw.POSTGRES, approvers: [users.approver2.id] },
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.data).toMatchObject({
      scope: 'write',
      isActive: false,
      connectionId: rw.POSTGRES,
      approvers: [users.approver2.id],
    });
    expect(
      (await s.call('PATCH', `/approval-rules/${id}`, { body: { connectionId: null } })).body.data
        .connectionId,
    ).toBeNull();
    expect((await s.call('PATCH', `/approval-rules/${id}`, { body: { approvers: ['ghost'] } })).status).toBe(
      400,
    );
    expect((await s.call('GET', `/approval-rules/${id}`)).body.data.approvers).toEqual([users.approver2.id]);
    expect((await s.call('GET', '/approval-rules')).body.data.map((r: { id: string }) => r.id)).toContain(id);
    // Admin only (and the admin scope).
    expect((await s.call('GET', '/approval-rules', { key: users.member.key })).status).toBe(403);
    expect((await s.call('DELETE', `/approval-rules/${id}`)).body.data).toEqual({ deleted: true });
    expect((await s.call('GET', `/approval-rules/${id}`)).status).toBe(404);
    expect((await s.call('DELETE', `/approval-rules/${id}`)).status).toBe(404);
  });

  it('organization isolation: everything of another organization is 404', async () => {
    await reset();
    const q = (await submit(users.member.key, rw.POSTGRES, `UPDATE ${T} SET n = 0`)).body.data;
    const r1 = await rule({ approvers: [users.approver.id] });
    try {
      const key = outsider.key;
      expect((await status(key, q.id)).status).toBe(404);
      expect((await approve(key, q.id)).status).toBe(404);
      expect((await reject(key, q.id)).status).toBe(404);
      expect((await submit(key, rw.POSTGRES, 'SELECT 1')).status).toBe(404);
      expect((await s.call('GET', `/approval-rules/${r1.id}`, { key })).status).toBe(404);
      expect(
        (await s.call('PATCH', `/approval-rules/${r1.id}`, { key, body: { isActive: false } })).status,
      ).toBe(404);
      expect((await s.call('DELETE', `/approval-rules/${r1.id}`, { key })).status).toBe(404);
      const theirs = await s.call('GET', '/queries/pending?pageSize=100', { key });
      expect(theirs.status).toBe(200);
      expect(theirs.body.data).toEqual([]);
      expect((await s.call('GET', '/approval-rules', { key })).body.data).toEqual([]);
      // In the organization: members using the connection see the status; an unrelated member does not.
      expect((await status(users.bystander.key, q.id)).status).toBe(200);
      expect((await status(users.approver2.key, q.id)).status).toBe(404);
      expect((await status(users.approver.key, q.id)).status).toBe(200);
      // A member of the organization who is not assigned the connection cannot submit on it.
      expect((await submit(users.approver.key, rw.POSTGRES, 'SELECT 1')).status).toBe(404);
      expect(await rows('POSTGRES')).toEqual(initial);
    } finally {
      await dropRule(r1.id);
      await reject(s.adminKey, q.id);
    }
  });

  it('records query.approval.requested, query.approved and query.rejected in the outbox', async () => {
    await reset();
    const a = (await submit(users.member.key, rw.POSTGRES, `UPDATE ${T} SET n = 5 WHERE id = 3`)).body.data;
    const b = (await submit(users.member.key, rw.POSTGRES, `UPDATE ${T} SET n = 6 WHERE id = 3`)).body.data;
    expect((await approve(s.adminKey, a.id)).status).toBe(200);
    expect((await reject(s.adminKey, b.id, 'dup')).status).toBe(200);
    const events = await listEvents(s.app.orgId, { limit: 1000 });
    const of = (id: string) =>
      events.filter((e) => (e.data as { queryId?: string }).queryId === id).map((e) => e.type);
    expect(of(a.id)).toEqual(['query.approval.requested', 'query.approved']);
    expect(of(b.id)).toEqual(['query.approval.requested', 'query.rejected']);
    const approved = events.find(
      (e) => e.type === 'query.approved' && (e.data as { queryId: string }).queryId === a.id,
    )!;
    expect(approved.data).toMatchObject({
      connectionId: rw.POSTGRES,
      statementKind: 'write',
      reviewedBy: s.app.adminUserId,
      execution: 'SUCCEEDED',
      rowsAffected: 1,
    });
    expect(JSON.stringify(events)).not.toContain('loupe-pass');
  });

  describe('hostile input: always 4xx, never stored, data unchanged', () => {
    it('statements that hide a second statement or a write are refused at submission', async () => {
      await reset();
      const pendingBefore = (await s.call('GET', '/queries/pending?pageSize=100')).body.meta.pagination.total;
      const cases: Array<[string, string, number, string?]> = [
        [rw.POSTGRES, `UPDATE ${T} SET n = 0; DROP TABLE ${T}`, 400, 'MULTIPLE_STATEMENTS'],
        [rw.POSTGRES, `UPDATE ${T} SET n = 0 /* harmless */; DELETE FROM ${T}`, 400, 'MULTIPLE_STATEMENTS'],
        [
          rw.POSTGRES,
          `UPDATE ${T} SET label = 'x' -- comment\n; DROP TABLE ${T}`,
          400,
          'MULTIPLE_STATEMENTS',
        ],
        [rw.POSTGRES, `UPDATE ${T} SET label = '\\'; DELETE FROM ${T}; --'`, 400, 'MULTIPLE_STATEMENTS'],
        [rw.POSTGRES, `SELECT 1; UPDATE ${T} SET n = 0`, 400, 'MULTIPLE_STATEMENTS'],
        [rw.POSTGRES, `UPDATE ${T} SET label = 'unterminated`, 400],
        [rw.POSTGRES, `/* only a comment */`, 400],
        [rw.POSTGRES, ` `, 400],
        [rw.POSTGRES, `UPDATE ${T} SET n = 0\u0000; DROP TABLE ${T}`, 400],
        [rw.SQLITE, `UPDATE ${T} SET n = 0; DROP TABLE ${T}`, 400, 'MULTIPLE_STATEMENTS'],
        [rw.SQLITE, `UPDATE ${T} SET n = 0 /* ; */; ATTACH DATABASE '/tmp/x.db' AS x`, 400],
        [roPg, `WITH d AS (DELETE FROM ${T} RETURNING *) SELECT * FROM d`, 400],
        [roPg, `WITH d AS (UPDATE ${T} SET n = 0 RETURNING *) SELECT count(*) FROM d`, 400],
        [roPg, `SELECT * FROM ${T} FOR UPDATE`, 400],
        [roPg, `SELECT pg_sleep(0)`, 400],
        [roPg, `select 1 -- x\n; truncate ${T}`, 400],
        ...(maria
          ? ([
              [rw.MARIADB, `UPDATE ${T} SET n = 1 /*! ; DROP TABLE ${T} */`, 400, 'EXECUTABLE_COMMENT'],
              [
                rw.MARIADB,
                `UPDATE ${T} SET label = 'a\\'; DELETE FROM ${T}; -- '`,
                400,
                'MULTIPLE_STATEMENTS',
              ],
              [rw.MARIADB, `UPDATE ${T} SET n = 1 # ; \n; DELETE FROM ${T}`, 400, 'MULTIPLE_STATEMENTS'],
            ] as Array<[string, string, number, string?]>)
          : []),
      ];
      for (const [conn, sql, code, statementType] of cases) {
        const r = await submit(users.member.key, conn, sql);
        expect(r.status, `${JSON.stringify(sql)}: ${r.text}`).toBe(code);
        if (statementType) expect(r.body.error.details.statementType, sql).toBe(statementType);
      }
      expect((await s.call('GET', '/queries/pending?pageSize=100')).body.meta.pagination.total).toBe(
        pendingBefore,
      );
      for (const db of TYPES) expect(await rows(db)).toEqual(initial);
    });

    it('SQLite: approved statements cannot attach files, load extensions, change pragmas or control the transaction', async () => {
      await reset();
      const dir = dirname(dbs.sqliteFile);
      const filesBefore = readdirSync(dir).sort();
      const statements = [
        `ATTACH DATABASE '${dir}/evil.db' AS evil`,
        `UPDATE ${T} SET label = load_extension('/tmp/nothing')`,
        `UPDATE ${T} SET label = readfile('/etc/passwd')`,
        'PRAGMA writable_schema = 1',
        'PRAGMA journal_mode = OFF',
        'COMMIT',
        'BEGIN',
        `VACUUM INTO '${dir}/copy.db'`,
        `DETACH DATABASE main`,
      ];
      for (const sql of statements) {
        const sub = await submit(users.member.key, rw.SQLITE, sql);
        if (sub.status === 202) {
          const r = await approve(s.adminKey, sub.body.data.id);
          expect(r.status, `${sql}: ${r.text}`).toBeGreaterThanOrEqual(400);
          expect(r.status, `${sql}: ${r.text}`).toBeLessThan(500);
        } else {
          expect(sub.status, `${sql}: ${sub.text}`).toBe(400);
        }
      }
      expect(await rows('SQLITE')).toEqual(initial);
      expect(readdirSync(dir).sort()).toEqual(filesBefore);
      expect(dbs.sqlite.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'delete' });
    });

    it('bad bodies, huge notes and bad ids are 4xx and change nothing', async () => {
      await reset();
      const q = (await submit(users.member.key, rw.POSTGRES, `DELETE FROM ${T}`)).body.data;
      const bodies: Array<[string, string, unknown, number]> = [
        ['POST', '/queries/submit', {}, 400],
        ['POST', '/queries/submit', { connectionId: rw.POSTGRES }, 400],
        ['POST', '/queries/submit', { connectionId: rw.POSTGRES, query: 'x'.repeat(100_001) }, 400],
        [
          'POST',
          '/queries/submit',
          { connectionId: rw.POSTGRES, query: 'SELECT 1', context: 'c'.repeat(2001) },
          400,
        ],
        ['POST', '/queries/submit', { connectionId: 'no-such', query: 'SELECT 1' }, 404],
        ['POST', '/queries/submit', { connectionId: rw.POSTGRES, query: 42 }, 400],
        ['POST', `/queries/${q.id}/approve`, { note: 'n'.repeat(2001) }, 400],
        ['POST', `/queries/${q.id}/reject`, { note: 'n'.repeat(2001) }, 400],
        ['POST', `/queries/${q.id}/approve`, { note: 'n'.repeat(1_100_000) }, 413],
        ['POST', `/queries/${q.id}/approve`, { note: 12 }, 400],
        ['POST', `/queries/${'x'.repeat(201)}/approve`, {}, 400],
        ['POST', '/queries/00000000-0000-4000-8000-000000000000/approve', {}, 404],
        ['POST', '/queries/%00/approve', {}, 404],
        ['GET', '/queries/..%2F..%2Fkeys/status', undefined, 404],
        ['GET', `/queries/${encodeURIComponent("' OR 1=1 --")}/status`, undefined, 404],
        ['POST', '/approval-rules', { approvers: ['x'.repeat(201)] }, 400],
        ['PATCH', '/approval-rules/nope', { isActive: false }, 404],
      ];
      for (const [method, path, body, code] of bodies) {
        const r = await s.call(method, path, { body });
        expect(r.status, `${method} ${path}: ${r.text.slice(0, 300)}`).toBe(code);
        expect(r.body.error.code).toBeTruthy();
      }
      // The largest statement (100,000 characters of 3-byte UTF-8) fits the stored record and its result.
      const big = `UPDATE ${T} SET label = label /*${'€'.repeat(99_900)}*/ WHERE id = 3`;
      expect(big.length).toBeLessThanOrEqual(100_000);
      const stored = await submit(users.member.key, rw.POSTGRES, big, 'c'.repeat(2000));
      expect(stored.status, stored.text.slice(0, 300)).toBe(202);
      const bigApproved = await approve(s.adminKey, stored.body.data.id, 'n'.repeat(2000));
      expect(bigApproved.status, bigApproved.text.slice(0, 300)).toBe(200);
      expect((await status(users.member.key, stored.body.data.id)).body.data.query).toBe(big);

      const raw = await s.call('POST', `/queries/${q.id}/approve`, {
        rawBody: '{"note": ',
        headers: { 'content-type': 'application/json' },
      });
      expect(raw.status).toBe(400);
      expect((await status(users.member.key, q.id)).body.data.status).toBe('PENDING');
      for (const db of TYPES) expect(await rows(db)).toEqual(initial);
      expect((await reject(s.adminKey, q.id)).status).toBe(200);
      expect(await rows('POSTGRES')).toEqual(initial);
    });

    it('a connection switched to readOnly after submission refuses the approved write', async () => {
      await reset();
      const q = (await submit(users.member.key, rw.POSTGRES, `UPDATE ${T} SET n = 0`)).body.data;
      expect(
        (await s.call('PATCH', `/connections/${rw.POSTGRES}`, { body: { readOnly: true } })).status,
      ).toBe(200);
      try {
        const r = await approve(s.adminKey, q.id);
        expect(r.status, r.text).toBe(400);
        expect(r.body.error.code).toBe('READ_ONLY_VIOLATION');
        expect((await status(s.adminKey, q.id)).body.data.status).toBe('PENDING');
        expect(await rows('POSTGRES')).toEqual(initial);
      } finally {
        await s.call('PATCH', `/connections/${rw.POSTGRES}`, { body: { readOnly: false } });
        await reject(s.adminKey, q.id);
      }
    });
  });
});
