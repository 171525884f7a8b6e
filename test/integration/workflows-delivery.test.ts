import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { db } from '../../shared/platform/db/store';
import { workflowStore } from '../../shared/workflows/store';
import { createConnection, postgresClient, postgresConnection } from '../support/connections';
import { type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver';
import { startTestServer, type TestServer } from '../support/server';

const suffix = randomBytes(4).toString('hex');
const T = `wf_deliv_${suffix}`;

/**
 * Runs end to end with the real actions module: webhooks to a real local HTTPS receiver (through the
 * outbound module and LOUPE_OUTBOUND_TEST_HOSTS), real PostgreSQL for the steps.
 */
describe('workflow runs delivering to a real HTTPS receiver', () => {
  let s: TestServer;
  let rx: HttpsReceiver;
  let client: pg.Client;
  let conn: string;
  const info = inject('postgres');

  beforeAll(async () => {
    rx = await startHttpsReceiver((req, res) => {
      const status = Number(/status=(\d+)/.exec(req.url)?.[1] ?? 200);
      res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': 'rx-1' });
      res.end(JSON.stringify({ got: req.url }));
    });
    s = await startTestServer({ env: { LOUPE_OUTBOUND_TEST_HOSTS: rx.testHostEntry } });
    client = await postgresClient(info);
    await client.query(`CREATE TABLE ${T} (id int, label text)`);
    await client.query(`INSERT INTO ${T} VALUES (1, 'a "quoted" label'), (2, 'b')`);
    conn = await createConnection(s, postgresConnection(info, { name: `deliv-${suffix}` }));
  });
  afterAll(async () => {
    await s?.stop();
    await rx?.close();
    await client?.query(`DROP TABLE IF EXISTS ${T}`);
    await client?.end();
  });

  const hook = (path: string, over: Record<string, unknown> = {}) => ({
    version: 2,
    url: `${rx.url}${path}`,
    method: 'POST',
    bodyMode: 'JSON',
    bodyTemplate:
      '{"workflow": "{{workflow.name}}", "count": {{query_1.row_count}}, "rows": {{query_1.rows}}}',
    retry: { maxAttempts: 1, baseDelayMs: 100 },
    ...over,
  });
  const workflow = async (actions: unknown[], over: Record<string, unknown> = {}) => {
    const r = await s.call('POST', '/workflows', {
      body: {
        name: `deliver-${suffix}`,
        triggerType: 'MANUAL',
        connectionId: conn,
        steps: [{ query: `SELECT id, label FROM ${T} ORDER BY id LIMIT 10` }],
        actions,
        ...over,
      },
    });
    expect(r.status, r.text).toBe(201);
    return r.body.data;
  };
  const received = (path: string) => rx.requests.filter((r) => r.url.startsWith(path));

  it('a manual run delivers the rendered JSON and records the attempt (SUCCESS)', async () => {
    const w = await workflow([{ type: 'WEBHOOK', order: 0, config: hook('/ok') }]);
    expect(JSON.parse(w.actions[0].config)).toMatchObject({ version: 2, url: `${rx.url}/ok` });
    const r = await s.call('POST', `/workflows/${w.id}/run`);
    expect(r.status, r.text).toBe(201);
    const run = r.body.data;
    expect(run.status, run.error).toBe('SUCCESS');
    const [req] = received('/ok');
    expect(JSON.parse(req.body)).toEqual({
      workflow: `deliver-${suffix}`,
      count: 2,
      rows: [
        { id: 1, label: 'a "quoted" label' },
        { id: 2, label: 'b' },
      ],
    });
    expect(run.actionAttempts).toHaveLength(1);
    expect(run.actionAttempts[0]).toMatchObject({
      runId: run.id,
      actionId: w.actions[0].id,
      actionOrder: 0,
      attempt: 1,
      status: 'SUCCESS',
      method: 'POST',
      url: `${rx.url}/ok`,
      statusCode: 200,
      requestBodyBytes: Buffer.byteLength(req.body),
    });
    expect(JSON.parse(run.actionResults)[0]).toMatchObject({ order: 0, success: true, critical: true });
    const listed = (await s.call('GET', `/workflows/${w.id}/runs`)).body.data;
    expect(listed[0].actionAttempts).toEqual(run.actionAttempts);
  });

  it('PARTIAL_SUCCESS when only a non-critical action fails; FAILED when a critical one does', async () => {
    const partial = await workflow([
      { type: 'WEBHOOK', order: 0, config: hook('/p-ok') },
      { type: 'WEBHOOK', order: 1, config: hook('/p-bad?status=500', { critical: false }) },
    ]);
    const p = (await s.call('POST', `/workflows/${partial.id}/run`)).body.data;
    expect(p.status, p.error).toBe('PARTIAL_SUCCESS');
    expect(p.actionAttempts.map((a: any) => [a.actionOrder, a.status, a.statusCode])).toEqual([
      [0, 'SUCCESS', 200],
      [1, 'FAILED', 500],
    ]);
    // The failed attempt's stored URL has no query string.
    expect(p.actionAttempts[1].url).toBe(`${rx.url}/p-bad`);

    const failed = await workflow([
      {
        type: 'WEBHOOK',
        order: 0,
        config: hook('/f-bad?status=503', { retry: { maxAttempts: 2, baseDelayMs: 100 } }),
      },
      { type: 'WEBHOOK', order: 1, config: hook('/f-ok') },
    ]);
    const f = (await s.call('POST', `/workflows/${failed.id}/run`)).body.data;
    expect(f.status).toBe('FAILED');
    expect(f.error).toMatch(/Action 0/);
    expect(f.actionAttempts.filter((a: any) => a.actionOrder === 0).map((a: any) => a.attempt)).toEqual([
      1, 2,
    ]);
    expect(received('/f-bad')).toHaveLength(2);
  });

  it('action test: 428 without confirmation, 201 ACTION_TEST run with confirmation, 422 when delivery fails', async () => {
    const w = await workflow(
      [
        { type: 'WEBHOOK', order: 3, config: hook('/t-ok') },
        { type: 'WEBHOOK', order: 4, config: hook('/t-bad?status=400') },
      ],
      // An empty stopIfEmpty step does not stop a test.
      { steps: [{ query: `SELECT id FROM ${T} WHERE id < 0 LIMIT 1`, stopIfEmpty: true }] },
    );
    for (const body of [undefined, {}, { confirmDelivery: false }]) {
      const r = await s.call('POST', `/workflows/${w.id}/actions/3/test`, { body });
      expect(r.status, r.text).toBe(428);
      expect(r.body.error.code).toBe('CONFIRMATION_REQUIRED');
    }
    expect(received('/t-ok')).toHaveLength(0);
    const ok = await s.call('POST', `/workflows/${w.id}/actions/3/test`, { body: { confirmDelivery: true } });
    expect(ok.status, ok.text).toBe(201);
    expect(ok.body.data).toMatchObject({ trigger: 'ACTION_TEST', status: 'SUCCESS' });
    expect(ok.body.data.actionAttempts.map((a: any) => a.actionOrder)).toEqual([3]);
    expect(received('/t-ok')).toHaveLength(1);
    expect(received('/t-bad')).toHaveLength(0);
    const bad = await s.call('POST', `/workflows/${w.id}/actions/4/test`, {
      body: { confirmDelivery: true },
    });
    expect(bad.status, bad.text).toBe(422);
    expect(bad.body.error.code).toBe('ACTION_TEST_FAILED');
    expect(bad.body.error.details.run).toMatchObject({ trigger: 'ACTION_TEST', status: 'FAILED' });
    expect(bad.body.error.details.run.actionAttempts[0]).toMatchObject({ statusCode: 400, status: 'FAILED' });
    const history = (await s.call('GET', `/workflows/${w.id}/runs`)).body.data;
    expect(history.map((r: any) => r.trigger)).toEqual(['ACTION_TEST', 'ACTION_TEST']);
  });

  it('finds the workflows whose draft references a credential (one Query with a filter)', async () => {
    const cred = '00000000-0000-4000-8000-00000000c0de';
    const w = await workflow([{ type: 'WEBHOOK', order: 0, config: hook('/c', { credentialId: cred }) }]);
    expect(await workflowStore.referencingCredential(s.app.orgId, cred)).toEqual([w.id]);
    expect(
      await workflowStore.referencingCredential(s.app.orgId, '00000000-0000-4000-8000-000000000000'),
    ).toEqual([]);
    await s.call('PATCH', `/workflows/${w.id}`, {
      body: { expectedDraftRevision: 1, actions: [{ type: 'WEBHOOK', config: hook('/c') }] },
    });
    expect(await workflowStore.referencingCredential(s.app.orgId, cred)).toEqual([]);
  });

  it('publishing refuses a webhook whose credential does not exist (400 naming the action)', async () => {
    const w = await workflow([
      {
        type: 'WEBHOOK',
        order: 0,
        config: hook('/cred', { credentialId: '00000000-0000-4000-8000-000000000001' }),
      },
    ]);
    const r = await s.call('PATCH', `/workflows/${w.id}`, { body: { isActive: true } });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.code).toBe('VALIDATION_ERROR');
    expect(r.body.error.details.issues.map((i: any) => i.path)).toContain('actions.0.config');
    expect((await s.call('GET', `/workflows/${w.id}`)).body.data.isActive).toBe(false);
  });

  it('a credential referenced by a draft or an active published version cannot be deleted (409 IN_USE); its header is sent but never stored', async () => {
    const token = `tok-${suffix}-${randomBytes(8).toString('hex')}`;
    const c = await s.call('POST', '/workflow-credentials', {
      body: { name: `bearer-${suffix}`, kind: 'BEARER', allowedHosts: [rx.hostname], config: { token } },
    });
    expect(c.status, c.text).toBe(201);
    const cred = c.body.data.id;
    const w = await workflow(
      [{ type: 'WEBHOOK', order: 0, config: hook('/authed', { credentialId: cred }) }],
      {
        steps: [{ query: `SELECT id FROM ${T} LIMIT 1`, stopIfEmpty: true }],
      },
    );
    const inUse = await s.call('DELETE', `/workflow-credentials/${cred}`);
    expect(inUse.status, inUse.text).toBe(409);
    expect(inUse.body.error.code).toBe('IN_USE');

    const run = (await s.call('POST', `/workflows/${w.id}/run`)).body.data;
    expect(run.status, run.error).toBe('SUCCESS');
    const [req] = received('/authed');
    expect(req.headers.authorization).toBe(`Bearer ${token}`);
    const stored = JSON.stringify((await s.call('GET', `/workflows/${w.id}/runs`)).body);
    expect(stored).not.toContain(token);
    expect(JSON.stringify(await db.query({ pk: `ORG#${s.app.orgId}#WF#${w.id}` }))).not.toContain(token);

    // Published and active, with the draft no longer using it: still in use.
    const warned = await s.call('PATCH', `/workflows/${w.id}`, { body: { isActive: true } });
    expect(warned.status, warned.text).toBe(422);
    const pub = await s.call('PATCH', `/workflows/${w.id}`, {
      body: { isActive: true, acknowledgedWarnings: warned.body.error.details.warnings },
    });
    expect(pub.status, pub.text).toBe(200);
    await s.call('PATCH', `/workflows/${w.id}`, {
      body: { expectedDraftRevision: 1, actions: [{ type: 'WEBHOOK', config: hook('/authed') }] },
    });
    expect((await s.call('DELETE', `/workflow-credentials/${cred}`)).status).toBe(409);
    // Deactivated: nothing references it any more.
    await s.call('PATCH', `/workflows/${w.id}`, { body: { isActive: false } });
    const ok = await s.call('DELETE', `/workflow-credentials/${cred}`);
    expect(ok.status, ok.text).toBe(200);
  });

  it('an email action in a run: the rendered message with its CSV lands in the local outbox', async () => {
    const w = await workflow([
      {
        type: 'EMAIL',
        order: 0,
        config: {
          to: ['ops@example.com'],
          subject: 'Orders for {{workflow.name}}: {{query_1.row_count}}',
          body: 'Rows:\n\n{{query_1.table}}',
          attachCsv: true,
        },
      },
    ]);
    const run = (await s.call('POST', `/workflows/${w.id}/run`)).body.data;
    expect(run.status, run.error).toBe('SUCCESS');
    expect(run.actionAttempts).toHaveLength(1);
    expect(run.actionAttempts[0]).toMatchObject({ status: 'SUCCESS', url: 'mailto:ops@example.com' });
    const dir = join(s.dataDir, 'outbox');
    const file = readdirSync(dir).find((f) => run.actionAttempts[0].responseBody.includes(f));
    expect(file).toBeDefined();
    const eml = readFileSync(join(dir, file!), 'utf8');
    expect(eml).toContain(`Subject: Orders for deliver-${suffix}: 2`);
    expect(eml).toMatch(/filename="?query_1/);
  });

  it('a draft too large for one item is refused naming the actions', async () => {
    const big = 'x'.repeat(90_000);
    const r = await s.call('POST', '/workflows', {
      body: {
        name: 'big',
        triggerType: 'MANUAL',
        connectionId: conn,
        steps: [{ query: `SELECT 1 AS a LIMIT 1` }],
        actions: [0, 1, 2, 3].map((order) => ({
          type: 'WEBHOOK',
          order,
          config: hook('/big', { bodyMode: 'RAW', bodyTemplate: big, contentType: 'text/plain' }),
        })),
      },
    });
    expect(r.status, r.text.slice(0, 300)).toBe(400);
    expect(r.body.error.details.issues[0].path).toBe('body.actions');
  });

  it('a published schedule delivers the published query to the receiver', async () => {
    const w = await workflow([{ type: 'WEBHOOK', order: 0, config: hook('/scheduled') }], {
      triggerType: 'SCHEDULE',
      triggerConfig: { preset: 'WEEKLY', dayOfWeek: 1, hour: 8, timezone: 'America/New_York' },
      steps: [{ query: `SELECT id FROM ${T} WHERE id = 1 LIMIT 1`, stopIfEmpty: true }],
    });
    const first = await s.call('PATCH', `/workflows/${w.id}`, { body: { isActive: true } });
    expect(first.status, first.text).toBe(422);
    const pub = await s.call('PATCH', `/workflows/${w.id}`, {
      body: { isActive: true, acknowledgedWarnings: first.body.error.details.warnings },
    });
    expect(pub.status, pub.text).toBe(200);
    await s.call('PATCH', `/workflows/${w.id}`, {
      body: { expectedDraftRevision: 1, steps: [{ query: `SELECT id FROM ${T} WHERE id = 2 LIMIT 1` }] },
    });
    const due = Date.now() - 500;
    await db.update({
      pk: 'SCHEDULES',
      sk: `SCHEDULE#wf-${w.id}`,
      update: 'SET nextFireAt = :t, gsi1sk = :g',
      values: { ':t': due, ':g': `${String(due).padStart(15, '0')}#wf-${w.id}` },
    });
    const until = Date.now() + 45_000;
    while (!received('/scheduled').length && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
    const [req] = received('/scheduled');
    expect(JSON.parse(req.body).rows).toEqual([{ id: 1 }]);
    let runs: any[] = [];
    while (Date.now() < until) {
      runs = (await s.call('GET', `/workflows/${w.id}/runs`)).body.data;
      if (runs[0] && runs[0].status !== 'RUNNING') break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(runs[0]).toMatchObject({ trigger: 'SCHEDULE', status: 'SUCCESS', definitionVersion: 1 });
    expect(runs[0].scheduledFor).toBe(new Date(Math.floor(due / 60_000) * 60_000).toISOString());
  });
});
