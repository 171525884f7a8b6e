import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { listEvents } from '../../shared/platform/events';
import { runScheduled } from '../../shared/workflows/runner';
import { createConnection, postgresClient, postgresConnection } from '../support/connections';
import { type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver';
import { startTestServer, type TestServer } from '../support/server';

const suffix = randomBytes(4).toString('hex');
const T = `wf_sched_pub_${suffix}`;

/**
 * A scheduled run acts as the workflow's publisher with the role and connections the publisher has now
 * (shared/workflows/runner.ts runScheduled). Real PostgreSQL for the steps (its table statistics count
 * every read of the table), a real HTTPS receiver read back to prove that a refused run sends nothing.
 */
describe('scheduled runs act as their publisher as the organization has them now', () => {
  let s: TestServer;
  let rx: HttpsReceiver;
  let client: pg.Client;
  let conn: string;
  let adminId: string;
  const connName = `sched-pub-${suffix}`;
  const info = inject('postgres');
  // Each scheduled invocation gets its own due minute (a repeated one is a duplicate and runs nothing).
  let minute = 0;

  beforeAll(async () => {
    rx = await startHttpsReceiver();
    s = await startTestServer({ env: { LOUPE_OUTBOUND_TEST_HOSTS: rx.testHostEntry } });
    client = await postgresClient(info);
    await client.query(`CREATE TABLE ${T} (id int)`);
    await client.query(`INSERT INTO ${T} VALUES (1), (2)`);
    conn = await createConnection(s, postgresConnection(info, { name: connName }));
    const members = await s.call('GET', '/members');
    adminId = members.body.data.find((m: { role: string }) => m.role === 'admin').id;
  });
  afterAll(async () => {
    await s?.stop();
    await rx?.close();
    await client?.query(`DROP TABLE IF EXISTS ${T}`);
    await client?.end();
  });

  const addMember = async (role: 'admin' | 'member', connectionIds: string[]) => {
    const m = await s.call('POST', '/members', {
      body: {
        email: `${role}-${randomBytes(3).toString('hex')}-${suffix}@x.example`,
        name: role,
        role,
        connectionIds,
      },
    });
    expect(m.status, m.text).toBe(201);
    const k = await s.call('POST', `/members/${m.body.data.id}/keys`, { body: { name: 'k' } });
    return { id: m.body.data.id as string, key: k.body.data.key as string };
  };
  const patchMember = async (id: string, body: Record<string, unknown>) => {
    const r = await s.call('PATCH', `/members/${id}`, { body });
    expect(r.status, r.text).toBe(200);
  };
  /** Publishes (as `key`) a weekly workflow due on no day of this test, reading T and posting to `path`. */
  const publishScheduled = async (key: string, path: string) => {
    const saved = await s.call('POST', '/workflows', {
      key,
      body: {
        name: `sched ${path} ${suffix}`,
        triggerType: 'SCHEDULE',
        triggerConfig: { preset: 'WEEKLY', dayOfWeek: (new Date().getUTCDay() + 3) % 7, hour: 3 },
        connectionId: conn,
        steps: [{ query: `SELECT id FROM ${T} ORDER BY id` }],
        actions: [
          {
            type: 'WEBHOOK',
            order: 0,
            config: {
              version: 2,
              url: `${rx.url}${path}`,
              method: 'POST',
              bodyMode: 'JSON',
              bodyTemplate: '{"rows": {{query_1.rows}}}',
              retry: { maxAttempts: 1, baseDelayMs: 100 },
            },
          },
        ],
      },
    });
    expect(saved.status, saved.text).toBe(201);
    const id: string = saved.body.data.id;
    const first = await s.call('PATCH', `/workflows/${id}`, { key, body: { isActive: true } });
    const published =
      first.status === 422
        ? await s.call('PATCH', `/workflows/${id}`, {
            key,
            body: { isActive: true, acknowledgedWarnings: first.body.error.details.warnings },
          })
        : first;
    expect(published.status, published.text).toBe(200);
    return id;
  };
  /** One scheduled invocation, as the scheduler delivers it; answers the run as the admin reads it. */
  const tick = async (workflowId: string) => {
    minute++;
    const scheduledTime = new Date(Date.UTC(2031, 0, 1, 0, minute)).toISOString();
    const outcome = await runScheduled({ orgId: s.app.orgId, workflowId, version: 1, scheduledTime });
    expect(outcome, JSON.stringify(outcome)).toHaveProperty('runId');
    const runs = await s.call('GET', `/workflows/${workflowId}/runs`);
    const run = runs.body.data[0];
    expect(run).toMatchObject({
      id: (outcome as { runId: string }).runId,
      trigger: 'SCHEDULE',
      scheduledFor: scheduledTime,
    });
    return run;
  };
  const sentTo = (path: string) => rx.requests.filter((r) => r.url.startsWith(path));
  /** The connection's query history (every statement the service ran on it), newest first. */
  const history = async () => {
    const r = await s.call('GET', `/connections/${conn}/queries?pageSize=100`);
    expect(r.status, r.text).toBe(200);
    return r.body.data as { userId: string; source: string; status: string }[];
  };
  /** Reads of T that reached PostgreSQL (its statistics, flushed by each backend shortly after a query). */
  const scans = async () => {
    await client.query('SELECT pg_stat_clear_snapshot()');
    const r = await client.query('SELECT seq_scan FROM pg_stat_user_tables WHERE relname = $1', [T]);
    return Number(r.rows[0].seq_scan);
  };
  /** Waits until the table was read at least `n` times in all, then answers the count. */
  const scansReach = async (n: number) => {
    const until = Date.now() + 45_000;
    let now = await scans();
    while (now < n && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 200));
      now = await scans();
    }
    return now;
  };
  const failedEvent = async (runId: string) =>
    (await listEvents(s.app.orgId, { limit: 1000 })).find(
      (e) => e.type === 'workflow.run.failed' && (e.data as { runId?: string }).runId === runId,
    );
  const expectRefusedStep = async (run: any, userId: string, path: string, sentBefore: number) => {
    expect(run.status).toBe('FAILED');
    expect(run.error).toContain(
      `Connection "${connName}" (${conn}) is not assigned to the workflow's publisher ${userId}`,
    );
    const [step] = JSON.parse(run.stepResults);
    expect(step).toMatchObject({
      status: 'FAILED',
      errorCode: 'CONNECTION_NOT_ASSIGNED',
      rowCount: 0,
      rows: [],
    });
    expect(run.actionResults).toBeNull();
    expect(run.actionAttempts).toEqual([]);
    expect(sentTo(path)).toHaveLength(sentBefore);
    expect((await failedEvent(run.id))?.data).toMatchObject({ status: 'FAILED', error: run.error });
  };

  it('a member publisher: works while assigned; unassigned, the step fails naming the connection and nothing is read or sent; reassigned, works again; removed, the run fails before any step', async () => {
    const m = await addMember('member', [conn]);
    const id = await publishScheduled(m.key, '/member');
    const base = await scans();
    const ran = await tick(id);
    expect(ran.status, ran.error).toBe('SUCCESS');
    expect(sentTo('/member').map((r) => JSON.parse(r.body))).toEqual([{ rows: [{ id: 1 }, { id: 2 }] }]);
    // The query history shows whom the run acted as.
    const [entry] = await history();
    expect(entry).toMatchObject({ userId: m.id, source: 'workflow', status: 'SUCCESS' });
    const statements = (await history()).length;

    // (a) Unassigned: the step fails naming the connection, before anything reaches PostgreSQL.
    await patchMember(m.id, { connectionIds: [] });
    const refused = await tick(id);
    await expectRefusedStep(refused, m.id, '/member', 1);
    expect(refused.error).toContain(`PATCH /members/${m.id}`);
    expect((await history()).length).toBe(statements);
    // The member cannot see the workflow any more (so cannot publish it again either).
    expect((await s.call('PATCH', `/workflows/${id}`, { key: m.key, body: { isActive: true } })).status).toBe(
      404,
    );
    expect((await s.call('GET', `/workflows/${id}/runs`, { key: m.key })).status).toBe(404);

    // (b) Reassigned: works again.
    await patchMember(m.id, { connectionIds: [conn] });
    const again = await tick(id);
    expect(again.status, again.error).toBe('SUCCESS');
    expect(sentTo('/member')).toHaveLength(2);
    expect((await history()).length).toBe(statements + 1);

    // (d) Removed from the organization: the run fails before any step, nothing is read or sent.
    expect((await s.call('DELETE', `/members/${m.id}`)).status).toBe(200);
    const orphan = await tick(id);
    const reason = `The workflow's publisher ${m.id} is no longer a member; publish it again as a current member.`;
    expect(orphan).toMatchObject({
      status: 'FAILED',
      error: reason,
      actionResults: null,
      actionAttempts: [],
    });
    expect(JSON.parse(orphan.stepResults)).toMatchObject([
      { status: 'SKIPPED', connectionId: conn, rows: [] },
    ]);
    expect((await failedEvent(orphan.id))?.data).toMatchObject({ status: 'FAILED', error: reason });
    expect(sentTo('/member')).toHaveLength(2);
    expect((await history()).length).toBe(statements + 1);

    // Published again by a current member (here the admin, the draft unchanged): the runs act as them.
    const republished = await s.call('PATCH', `/workflows/${id}`, { body: { isActive: true } });
    expect(republished.status, republished.text).toBe(200);
    expect(republished.body.data.publishedVersion).toBe(1);
    const taken = await tick(id);
    expect(taken.status, taken.error).toBe('SUCCESS');
    expect(sentTo('/member')).toHaveLength(3);
    expect((await history())[0]).toMatchObject({ userId: adminId, source: 'workflow', status: 'SUCCESS' });
    // PostgreSQL saw the three runs that succeeded read the table, and no read from the refused ones.
    expect(await scansReach(base + 3)).toBe(base + 3);
  });

  it('an admin publisher works without assigned connections; demoted to a member without the connection, the runs are refused likewise', async () => {
    const a = await addMember('admin', []);
    const id = await publishScheduled(a.key, '/admin');
    const ran = await tick(id);
    expect(ran.status, ran.error).toBe('SUCCESS');
    expect(sentTo('/admin')).toHaveLength(1);
    expect((await history())[0]).toMatchObject({ userId: a.id, source: 'workflow' });
    const statements = (await history()).length;

    await patchMember(a.id, { role: 'member' });
    const refused = await tick(id);
    await expectRefusedStep(refused, a.id, '/admin', 1);
    expect((await history()).length).toBe(statements);

    // Made admin again: the same published version runs as before.
    await patchMember(a.id, { role: 'admin' });
    expect((await tick(id)).status).toBe('SUCCESS');
    expect(sentTo('/admin')).toHaveLength(2);
  });

  it("a manual run keeps acting as its caller, not as the workflow's publisher", async () => {
    const m = await addMember('member', [conn]);
    const id = await publishScheduled(s.adminKey, '/manual');
    const run = await s.call('POST', `/workflows/${id}/run`, { key: m.key });
    expect(run.status, run.text).toBe(201);
    expect(run.body.data).toMatchObject({ trigger: 'MANUAL', status: 'SUCCESS' });
    expect((await history())[0]).toMatchObject({ userId: m.id, source: 'workflow' });
  });
});
