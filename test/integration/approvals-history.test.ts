import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { sweepExpired } from '../../shared/approvals/approvals';
import { pendingStore } from '../../shared/approvals/store';
import { createOrganization } from '../../shared/auth/bootstrap';
import { db } from '../../shared/platform/db/store';
import {
  createConnection,
  openTestDatabases,
  postgresConnection,
  type TestDatabases,
} from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';

/**
 * GET /queries, the approval history, over real HTTP through the local runtime with a real PostgreSQL:
 * submitted, approved (the write applied), rejected with a note, expired by the sweep and expired on
 * read; listed newest first, filtered, paged, never with `result`; who sees what; bad parameters.
 */
const suffix = randomBytes(4).toString('hex');
const T = `appr_hist_${suffix}`;

interface Item {
  id: string;
  status: string;
  createdAt: string;
  submittedBy: string;
  reviewedBy: string | null;
  reviewedAt: string | null;
  reviewNote: string | null;
  [k: string]: unknown;
}

describe('the approval history (GET /queries)', () => {
  let s: TestServer;
  let dbs: TestDatabases;
  let conn: string;
  let otherConn: string;
  const users: Record<string, { id: string; key: string }> = {};
  let outsiderKey: string;
  /** Submitted in this order: expiredBySweep, approved, rejected, pending, bystanders, expiredOnRead. */
  const q: Record<string, string> = {};

  const value = async () => (await dbs.pg.query(`SELECT n FROM ${T}`)).rows[0].n as number;
  const member = async (
    name: string,
    role: 'admin' | 'member',
    connectionIds: string[] = [],
    scopes?: string[],
  ) => {
    const m = await s.call('POST', '/members', {
      body: { email: `${name}-${suffix}@example.com`, name, role, connectionIds },
    });
    expect(m.status, m.text).toBe(201);
    const k = await s.call('POST', `/members/${m.body.data.id}/keys`, {
      body: { name: 'k', ...(scopes ? { scopes } : {}) },
    });
    expect(k.status, k.text).toBe(201);
    return { id: m.body.data.id as string, key: k.body.data.key as string };
  };
  const submit = async (key: string, query: string, context?: string) => {
    const r = await s.call('POST', '/queries/submit', { key, body: { connectionId: conn, query, context } });
    expect(r.status, r.text).toBe(202);
    return r.body.data.id as string;
  };
  const list = (query = '', key?: string | null) => s.call<Item[]>('GET', `/queries${query}`, { key });
  const ids = (items: Item[]) => items.map((i) => i.id);

  beforeAll(async () => {
    s = await startTestServer();
    dbs = await openTestDatabases(inject('postgres'), null, 'unused.sqlite');
    await dbs.pg.query(`CREATE TABLE ${T} (n int)`);
    await dbs.pg.query(`INSERT INTO ${T} VALUES (1)`);
    conn = await createConnection(
      s,
      postgresConnection(inject('postgres'), { name: 'pg-rw', readOnly: false }),
    );
    otherConn = await createConnection(s, postgresConnection(inject('postgres'), { name: 'pg-other' }));
    users.submitter = await member('submitter', 'member', [conn]);
    users.reviewer = await member('reviewer', 'admin');
    users.bystander = await member('bystander', 'member', [conn]);
    users.nobody = await member('nobody', 'member', [conn]);
    users.approver = await member('approver', 'member');
    users.otherApprover = await member('other-approver', 'member');
    users.noScope = await member('no-scope', 'admin', [], ['connections']);
    outsiderKey = (
      await createOrganization({ name: `Other ${suffix}`, adminEmail: `a-${suffix}@other.example` })
    ).key;

    // 1. Expired by the sweep (its clock a day ahead), stored EXPIRED; nothing else is pending yet.
    q.expiredBySweep = await submit(users.submitter.key, `UPDATE ${T} SET n = 100`, 'will expire');
    const swept = await sweepExpired(new Date(Date.now() + 2 * 24 * 3600 * 1000));
    expect(swept.expired).toBe(1);
    // 2. Approved with a note: the write runs.
    q.approved = await submit(users.submitter.key, `UPDATE ${T} SET n = n + 10`, 'add ten');
    const a = await s.call('POST', `/queries/${q.approved}/approve`, {
      key: users.reviewer.key,
      body: { note: 'ok to run' },
    });
    expect(a.status, a.text).toBe(200);
    // 3. Rejected with a note.
    q.rejected = await submit(users.submitter.key, `UPDATE ${T} SET n = 0`, 'zero it');
    const r = await s.call('POST', `/queries/${q.rejected}/reject`, {
      key: users.reviewer.key,
      body: { note: 'not this one' },
    });
    expect(r.status, r.text).toBe(200);
    // 4. Still pending.
    q.pending = await submit(users.submitter.key, `UPDATE ${T} SET n = 99`);
    // 5. Another member's submission.
    q.bystanders = await submit(users.bystander.key, `SELECT n FROM ${T}`, 'a look');
    // 6. Past its expiresAt but not swept yet: stored PENDING, shown EXPIRED.
    q.expiredOnRead = await submit(users.submitter.key, `UPDATE ${T} SET n = 7`);
    await db.patch(`ORG#${s.app.orgId}`, `PQUERY#${q.expiredOnRead}`, {
      expiresAt: new Date(Date.now() - 1000).toISOString(),
    });
    expect(await value()).toBe(11);
  });
  afterAll(async () => {
    await s?.stop();
    await dbs?.close(T);
  });

  it('lists every status newest first, with reviewer and note, and never a result', async () => {
    const res = await list('?pageSize=100');
    expect(res.status, res.text).toBe(200);
    const items = res.body.data;
    expect(ids(items)).toEqual([
      q.expiredOnRead,
      q.bystanders,
      q.pending,
      q.rejected,
      q.approved,
      q.expiredBySweep,
    ]);
    const sorted = [...items].sort(
      (x, y) => y.createdAt.localeCompare(x.createdAt) || y.id.localeCompare(x.id),
    );
    expect(ids(sorted)).toEqual(ids(items));
    const by = Object.fromEntries(items.map((i) => [i.id, i]));
    expect(by[q.expiredBySweep]).toMatchObject({
      status: 'EXPIRED',
      reviewedBy: null,
      context: 'will expire',
    });
    expect(by[q.approved]).toMatchObject({
      status: 'APPROVED',
      reviewedBy: users.reviewer.id,
      reviewNote: 'ok to run',
      reviewedAt: expect.any(String),
      submittedBy: users.submitter.id,
      connectionId: conn,
      connectionName: 'pg-rw',
      connectionType: 'POSTGRES',
      statementKind: 'write',
      statementType: 'UPDATE',
      query: `UPDATE ${T} SET n = n + 10`,
      error: null,
    });
    expect(by[q.rejected]).toMatchObject({
      status: 'REJECTED',
      reviewedBy: users.reviewer.id,
      reviewNote: 'not this one',
    });
    expect(by[q.pending]).toMatchObject({ status: 'PENDING', reviewedBy: null, reviewNote: null });
    expect(by[q.bystanders]).toMatchObject({ status: 'PENDING', submittedBy: users.bystander.id });
    expect(by[q.expiredOnRead]).toMatchObject({ status: 'EXPIRED' });
    for (const i of items) expect(Object.keys(i)).not.toContain('result');

    // The same queries read one by one: the list item is the status answer without `result`.
    for (const i of items) {
      const st = await s.call('GET', `/queries/${i.id}/status`);
      expect(st.status, st.text).toBe(200);
      const { result, ...rest } = st.body.data;
      expect(rest).toEqual(i);
      if (i.id === q.approved) expect(result).toMatchObject({ rowsAffected: 1 });
      else expect(result).toBeUndefined();
    }
  });

  it('filters by status (comma-separated); a PENDING query past expiresAt counts as EXPIRED', async () => {
    const f = async (status: string) => {
      const r = await list(`?status=${status}&pageSize=100`);
      expect(r.status, r.text).toBe(200);
      expect(r.body.data.length).toBe(r.body.meta.pagination.total);
      return ids(r.body.data);
    };
    expect(await f('PENDING')).toEqual([q.bystanders, q.pending]);
    expect(await f('EXPIRED')).toEqual([q.expiredOnRead, q.expiredBySweep]);
    expect(await f('APPROVED,REJECTED')).toEqual([q.rejected, q.approved]);
    expect(await f('REJECTED,REJECTED')).toEqual([q.rejected]);
    expect(await f('APPROVED,REJECTED,EXPIRED,PENDING')).toHaveLength(6);
  });

  it('pages with page and pageSize, totals in meta.pagination', async () => {
    const seen: string[] = [];
    for (const page of [1, 2, 3]) {
      const r = await list(`?page=${page}&pageSize=2`);
      expect(r.status, r.text).toBe(200);
      expect(r.body.meta.pagination).toEqual({ total: 6, page, pageSize: 2, totalPages: 3 });
      expect(r.body.data).toHaveLength(2);
      seen.push(...ids(r.body.data));
    }
    expect(seen).toEqual(ids((await list('?pageSize=100')).body.data));
    const past = await list('?page=4&pageSize=2');
    expect(past.body.data).toEqual([]);
    expect(past.body.meta.pagination).toEqual({ total: 6, page: 4, pageSize: 2, totalPages: 3 });
    const filtered = await list('?status=PENDING&page=2&pageSize=1');
    expect(ids(filtered.body.data)).toEqual([q.pending]);
    expect(filtered.body.meta.pagination).toEqual({ total: 2, page: 2, pageSize: 1, totalPages: 2 });
    // Default page size 20.
    expect((await list()).body.meta.pagination).toMatchObject({ page: 1, pageSize: 20, total: 6 });
  });

  it('shows each caller only what it may see', async () => {
    // Admins (also one who reviewed nothing named in a rule): everything.
    expect(ids((await list('?pageSize=100', users.reviewer.key)).body.data)).toHaveLength(6);
    // A member who is no approver: only their own submissions (each also readable by status).
    const own = await list('', users.bystander.key);
    expect(own.status, own.text).toBe(200);
    expect(ids(own.body.data)).toEqual([q.bystanders]);
    const mine = await list('?pageSize=100', users.submitter.key);
    expect(ids(mine.body.data)).toEqual([
      q.expiredOnRead,
      q.pending,
      q.rejected,
      q.approved,
      q.expiredBySweep,
    ]);
    // Assigned to the connection but submitted nothing and approves nothing: an empty list.
    const none = await list('', users.nobody.key);
    expect(none.status, none.text).toBe(200);
    expect(none.body.data).toEqual([]);
    expect(none.body.meta.pagination).toEqual({ total: 0, page: 1, pageSize: 20, totalPages: 0 });
    // An approver named in an active rule for the connection sees its queries; one named for another
    // connection does not; a deactivated rule counts for nothing.
    const rule = await s.call('POST', '/approval-rules', {
      body: { approvers: [users.approver.id], connectionId: conn },
    });
    expect(rule.status, rule.text).toBe(201);
    const other = await s.call('POST', '/approval-rules', {
      body: { approvers: [users.otherApprover.id], connectionId: otherConn },
    });
    expect(other.status, other.text).toBe(201);
    try {
      const approver = await list('?pageSize=100', users.approver.key);
      expect(approver.status, approver.text).toBe(200);
      expect(ids(approver.body.data)).toEqual(ids((await list('?pageSize=100')).body.data));
      expect((await list('?status=REJECTED', users.approver.key)).body.data[0]).toMatchObject({
        id: q.rejected,
        reviewNote: 'not this one',
        reviewedBy: users.reviewer.id,
      });
      expect((await list('', users.otherApprover.key)).body.data).toEqual([]);
      const off = await s.call('PATCH', `/approval-rules/${rule.body.data.id}`, {
        body: { isActive: false },
      });
      expect(off.status, off.text).toBe(200);
      expect((await list('', users.approver.key)).body.data).toEqual([]);
    } finally {
      await s.call('DELETE', `/approval-rules/${rule.body.data.id}`);
      await s.call('DELETE', `/approval-rules/${other.body.data.id}`);
    }
  });

  it('another organization never sees these queries; a key without the query scope is refused', async () => {
    const outsider = await list('?pageSize=100', outsiderKey);
    expect(outsider.status, outsider.text).toBe(200);
    expect(outsider.body.data).toEqual([]);
    for (const id of Object.values(q))
      expect((await s.call('GET', `/queries/${id}/status`, { key: outsiderKey })).status).toBe(404);
    const noScope = await list('', users.noScope.key);
    expect(noScope.status, noScope.text).toBe(403);
    expect(noScope.body.error.code).toBe('FORBIDDEN');
    expect((await list('', null)).status).toBe(401);
  });

  it.each([
    ['status=approved', 'query.status', 'status must be one or more of PENDING, APPROVED, REJECTED, EXPIRED'],
    ['status=DONE', 'query.status', 'comma-separated'],
    ['status=', 'query.status', 'status must be'],
    ['status=APPROVED,', 'query.status', 'status must be'],
    ['status=APPROVED%2C%20REJECTED', 'query.status', 'status must be'],
    [`status=${'PENDING,'.repeat(40)}PENDING`, 'query.status', ''],
    ['status=APPROVED&status=REJECTED', 'query.status', '"status" is given 2 times: give it once'],
    ['page=0', 'query.page', ''],
    ['page=x', 'query.page', ''],
    ['pageSize=0', 'query.pageSize', ''],
    ['pageSize=101', 'query.pageSize', ''],
    ['pageSize=2.5', 'query.pageSize', ''],
    ['state=APPROVED', 'query.state', 'Unknown field "state"'],
  ])('%s is 400 naming %s', async (query, path, message) => {
    const r = await list(`?${query}`);
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.code).toBe('VALIDATION_ERROR');
    const issue = r.body.error.details.issues.find((i: { path: string }) => i.path === path);
    expect(issue, r.text).toBeDefined();
    expect(issue.message).toContain(message);
  });

  it('listing changes nothing', async () => {
    const before = await Promise.all(Object.values(q).map((id) => pendingStore.get(s.app.orgId, id)));
    for (const query of ['', '?status=EXPIRED', '?status=PENDING&pageSize=1']) await list(query);
    await list('', users.bystander.key);
    const after = await Promise.all(Object.values(q).map((id) => pendingStore.get(s.app.orgId, id)));
    expect(after).toEqual(before);
    // The one past expiresAt is still stored PENDING (listing shows EXPIRED, the sweep stores it).
    expect((await pendingStore.get(s.app.orgId, q.expiredOnRead))?.status).toBe('PENDING');
    expect((await pendingStore.get(s.app.orgId, q.approved))?.resultJson).toContain('rowsAffected');
    expect(await value()).toBe(11);
  });

  it('the store reads the history without the stored results (a projection)', async () => {
    const fields = ['id', 'status'];
    const items = await db.query({ pk: `ORG#${s.app.orgId}`, prefix: 'PQUERY#', fields });
    expect(items).toHaveLength(6);
    for (const i of items) expect(Object.keys(i).sort()).toEqual(['id', 'pk', 'sk', 'status']);
    const listed = (await pendingStore.listAll(s.app.orgId)).find((r) => r.id === q.approved);
    expect(listed).toMatchObject({ status: 'APPROVED', execution: 'SUCCEEDED', resultJson: null });
  });
});
