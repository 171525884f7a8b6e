import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { handler as sweep } from '../../functions/workers/approval-expiry';
import { pendingStore } from '../../shared/approvals/store';
import { listEvents } from '../../shared/platform/events';
import { workerNamed } from '../../shared/platform/workers';
import {
  createConnection,
  openTestDatabases,
  postgresConnection,
  type TestDatabases,
} from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';

/** Expiry with a short LOUPE_APPROVAL_TTL_SECONDS: shown on read at once, stored by the sweep worker. */
const suffix = randomBytes(4).toString('hex');
const T = `appr_exp_${suffix}`;
const TTL_SECONDS = 4;

describe('pending query expiry', () => {
  let s: TestServer;
  let dbs: TestDatabases;
  let conn: string;
  /** A second admin: the bootstrap admin submits, and nobody reviews their own submission. */
  let reviewerKey: string;

  const submit = async (sql: string) => {
    const r = await s.call('POST', '/queries/submit', { body: { connectionId: conn, query: sql } });
    expect(r.status, r.text).toBe(202);
    return r.body.data as { id: string; expiresAt: string; createdAt: string; status: string };
  };
  const waitUntil = async (iso: string) => {
    const ms = Date.parse(iso) - Date.now() + 50;
    if (ms > 0) await new Promise((r) => setTimeout(r, ms));
  };
  const expiredEvents = async (id: string) =>
    (await listEvents(s.app.orgId, { limit: 1000 })).filter(
      (e) => e.type === 'query.expired' && (e.data as { queryId: string }).queryId === id,
    );
  const value = async () => (await dbs.pg.query(`SELECT n FROM ${T}`)).rows[0].n;

  beforeAll(async () => {
    s = await startTestServer({ env: { LOUPE_APPROVAL_TTL_SECONDS: String(TTL_SECONDS) } });
    dbs = await openTestDatabases(inject('postgres'), null, 'unused.sqlite');
    await dbs.pg.query(`CREATE TABLE ${T} (n int)`);
    await dbs.pg.query(`INSERT INTO ${T} VALUES (1)`);
    conn = await createConnection(s, postgresConnection(inject('postgres'), { readOnly: false }));
    const other = await s.call('POST', '/members', {
      body: { email: `second-${suffix}@example.com`, name: 'Second', role: 'admin' },
    });
    reviewerKey = (await s.call('POST', `/members/${other.body.data.id}/keys`, { body: { name: 'k' } })).body
      .data.key;
  });
  afterAll(async () => {
    await s?.stop();
    await dbs?.close(T);
  });

  it('the sweep is a scheduled worker of the manifest', () => {
    expect(workerNamed('approval-expiry')?.schedule?.expression).toBe('rate(1 minute)');
  });

  it('shows EXPIRED once past expiresAt, refuses approval (409), and the sweep stores it once', async () => {
    const q = await submit(`UPDATE ${T} SET n = 2`);
    expect(Date.parse(q.expiresAt) - Date.parse(q.createdAt)).toBe(TTL_SECONDS * 1000);
    expect(q.status).toBe('PENDING');
    await waitUntil(q.expiresAt);

    // On read: EXPIRED at once, before any sweep stored it.
    expect((await pendingStore.get(s.app.orgId, q.id))?.status).toBe('PENDING');
    const st = await s.call('GET', `/queries/${q.id}/status`);
    expect(st.body.data.status).toBe('EXPIRED');
    for (const action of ['approve', 'reject']) {
      const r = await s.call('POST', `/queries/${q.id}/${action}`, { key: reviewerKey, body: {} });
      expect(r.status, r.text).toBe(409);
      expect(r.body.error).toMatchObject({ code: 'INVALID_STATE', details: { status: 'EXPIRED' } });
    }
    const pending = (await s.call('GET', '/queries/pending?pageSize=100')).body.data.map(
      (p: { id: string }) => p.id,
    );
    expect(pending).not.toContain(q.id);
    expect(await expiredEvents(q.id)).toHaveLength(0);

    // A query that has not expired yet is left alone.
    const fresh = await submit(`UPDATE ${T} SET n = 3`);

    // Two sweeps at once: the conditional write lets one of them store EXPIRED and record the event.
    const results = await Promise.all([sweep(), sweep()]);
    // (At most one: the local runtime's own every-minute sweep may have been first.)
    expect(results.reduce((n, r) => n + r.expired, 0)).toBeLessThanOrEqual(1);
    const stored = await pendingStore.get(s.app.orgId, q.id);
    expect(stored).toMatchObject({ status: 'EXPIRED', expiredAt: expect.any(String) });
    expect(await expiredEvents(q.id)).toHaveLength(1);
    expect((await expiredEvents(q.id))[0].data).toMatchObject({ connectionId: conn, statementKind: 'write' });
    expect((await s.call('GET', `/queries/${q.id}/status`)).body.data.status).toBe('EXPIRED');
    expect((await pendingStore.get(s.app.orgId, fresh.id))?.status).toBe('PENDING');

    // Again: nothing new.
    expect((await sweep()).expired).toBe(0);
    expect(await expiredEvents(q.id)).toHaveLength(1);
    expect(await value()).toBe(1);

    // The fresh one expires in its turn; the database never changed.
    await waitUntil(fresh.expiresAt);
    await sweep();
    expect((await pendingStore.get(s.app.orgId, fresh.id))?.status).toBe('EXPIRED');
    expect(await expiredEvents(fresh.id)).toHaveLength(1);
    expect(await value()).toBe(1);
  });

  it('a query approved before it expired is never expired by the sweep', async () => {
    const q = await submit(`UPDATE ${T} SET n = 4`);
    const r = await s.call('POST', `/queries/${q.id}/approve`, { key: reviewerKey, body: {} });
    expect(r.status, r.text).toBe(200);
    expect(await value()).toBe(4);
    await waitUntil(q.expiresAt);
    await sweep();
    expect((await pendingStore.get(s.app.orgId, q.id))?.status).toBe('APPROVED');
    expect((await s.call('GET', `/queries/${q.id}/status`)).body.data.status).toBe('APPROVED');
    expect(await expiredEvents(q.id)).toHaveLength(0);
  });
});
