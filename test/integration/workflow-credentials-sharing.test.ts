import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createOrganization } from '../../shared/auth/bootstrap';
import { runScheduled } from '../../shared/workflows/runner';
import { workflowStore } from '../../shared/workflows/store';
import { createConnection, postgresClient, postgresConnection } from '../support/connections';
import { type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver';
import { startTestServer, type TestServer } from '../support/server';

const suffix = randomBytes(4).toString('hex');
const T = `wf_share_${suffix}`;

/**
 * Who may attach and send a workflow credential (shared/credentials/access.ts): admins, and members once
 * an admin shared the credential with members. Real PostgreSQL for the steps, a real HTTPS receiver read
 * back to prove that a refused credential sends nothing.
 */
describe('workflow credentials shared with members', () => {
  let s: TestServer;
  let rx: HttpsReceiver;
  let client: pg.Client;
  let conn: string;
  let memberKey: string;
  let memberId: string;
  let credId: string;
  const token = `share-token-${randomBytes(8).toString('hex')}`;
  const info = inject('postgres');

  beforeAll(async () => {
    rx = await startHttpsReceiver((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
    s = await startTestServer({ env: { LOUPE_OUTBOUND_TEST_HOSTS: rx.testHostEntry } });
    client = await postgresClient(info);
    await client.query(`CREATE TABLE ${T} (id int)`);
    await client.query(`INSERT INTO ${T} VALUES (1), (2)`);
    conn = await createConnection(s, postgresConnection(info, { name: `share-${suffix}` }));
    const m = await s.call('POST', '/members', {
      body: { email: `share-${suffix}@x.example`, name: 'M', role: 'member', connectionIds: [conn] },
    });
    memberId = m.body.data.id;
    memberKey = (await s.call('POST', `/members/${memberId}/keys`, { body: { name: 'k' } })).body.data.key;
    const c = await s.call('POST', '/workflow-credentials', {
      body: { name: `bearer ${suffix}`, kind: 'BEARER', allowedHosts: [rx.hostname], config: { token } },
    });
    expect(c.status, c.text).toBe(201);
    expect(c.body.data.sharedWithMembers).toBe(false);
    credId = c.body.data.id;
  });
  afterAll(async () => {
    await s?.stop();
    await rx?.close();
    await client?.query(`DROP TABLE IF EXISTS ${T}`);
    await client?.end();
  });

  const action = (path: string, credentialId: string = credId) => ({
    type: 'WEBHOOK',
    order: 0,
    config: {
      version: 2,
      url: `${rx.url}${path}`,
      method: 'POST',
      bodyMode: 'JSON',
      bodyTemplate: '{"n": {{query_1.row_count}}}',
      credentialId,
      retry: { maxAttempts: 1, baseDelayMs: 100 },
    },
  });
  const body = (path: string, over: Record<string, unknown> = {}) => ({
    name: `share ${path} ${suffix}`,
    triggerType: 'MANUAL',
    connectionId: conn,
    steps: [{ query: `SELECT id FROM ${T} ORDER BY id` }],
    actions: [action(path)],
    ...over,
  });
  const sentTo = (path: string) => rx.requests.filter((r) => r.url.startsWith(path));
  const share = async (sharedWithMembers: boolean) => {
    const r = await s.call('PATCH', `/workflow-credentials/${credId}`, { body: { sharedWithMembers } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.sharedWithMembers).toBe(sharedWithMembers);
  };

  it('saving: a member naming an unshared credential is 403, one it cannot know 404; nothing is stored', async () => {
    const before = (await workflowStore.list(s.app.orgId)).length;
    const refused = await s.call('POST', '/workflows', { key: memberKey, body: body('/save') });
    expect(refused.status, refused.text).toBe(403);
    expect(refused.body.error.code).toBe('FORBIDDEN');
    expect(refused.body.error.message).toContain('not shared with members');
    expect(refused.text).not.toContain(token);
    const other = await createOrganization({
      name: `Share other ${suffix}`,
      adminEmail: `o-${suffix}@x.example`,
    });
    const foreign = await s.call('POST', '/workflow-credentials', {
      key: other.key,
      body: {
        name: 'theirs',
        kind: 'BEARER',
        allowedHosts: [rx.hostname],
        config: { token: 'theirs-token' },
      },
    });
    expect(foreign.status).toBe(201);
    for (const id of [foreign.body.data.id, '0b0b0b0b-1111-4222-8333-444444444444']) {
      const r = await s.call('POST', '/workflows', {
        key: memberKey,
        body: { ...body('/save'), actions: [action('/save', id)] },
      });
      expect(r.status, r.text).toBe(404);
    }
    // PATCH with actions naming it is refused too, on a workflow the member may otherwise edit.
    const mine = await s.call('POST', '/workflows', { key: memberKey, body: body('/save', { actions: [] }) });
    expect(mine.status, mine.text).toBe(201);
    const patched = await s.call('PATCH', `/workflows/${mine.body.data.id}`, {
      key: memberKey,
      body: { expectedDraftRevision: 1, actions: [action('/save')] },
    });
    expect(patched.status, patched.text).toBe(403);
    expect((await s.call('GET', `/workflows/${mine.body.data.id}`)).body.data.actions).toEqual([]);
    expect((await workflowStore.list(s.app.orgId)).length).toBe(before + 1);
    // An admin may name it.
    expect((await s.call('POST', '/workflows', { body: body('/save-admin') })).status).toBe(201);
    expect(sentTo('/save')).toEqual([]);
  });

  it('action test and run: a member cannot send an unshared credential (403 / action FAILED, nothing sent)', async () => {
    const w = (await s.call('POST', '/workflows', { body: body('/admin-wf') })).body.data;
    const test = await s.call('POST', `/workflows/${w.id}/actions/0/test`, {
      key: memberKey,
      body: { confirmDelivery: true },
    });
    expect(test.status, test.text).toBe(403);
    expect(test.body.error.message).toContain('not shared with members');
    const run = await s.call('POST', `/workflows/${w.id}/run`, { key: memberKey });
    expect(run.status, run.text).toBe(201);
    expect(run.body.data.status).toBe('FAILED');
    expect(run.body.data.error).toContain('not shared with members');
    expect(JSON.stringify(run.body.data)).not.toContain(token);
    expect(sentTo('/admin-wf')).toEqual([]);
    // The admin's own test sends it.
    const adminTest = await s.call('POST', `/workflows/${w.id}/actions/0/test`, {
      body: { confirmDelivery: true },
    });
    expect(adminTest.status, adminTest.text).toBe(201);
    expect(sentTo('/admin-wf').map((r) => r.headers.authorization)).toEqual([`Bearer ${token}`]);
  });

  it('shared: the member may save, test and run it; unshared again, the next run sends nothing', async () => {
    await share(true);
    const saved = await s.call('POST', '/workflows', { key: memberKey, body: body('/member-wf') });
    expect(saved.status, saved.text).toBe(201);
    const id = saved.body.data.id;
    const test = await s.call('POST', `/workflows/${id}/actions/0/test`, {
      key: memberKey,
      body: { confirmDelivery: true },
    });
    expect(test.status, test.text).toBe(201);
    expect(sentTo('/member-wf').map((r) => r.headers.authorization)).toEqual([`Bearer ${token}`]);
    await share(false);
    const run = await s.call('POST', `/workflows/${id}/run`, { key: memberKey });
    expect(run.body.data.status).toBe('FAILED');
    expect(run.body.data.actionAttempts[0]).toMatchObject({ status: 'FAILED', statusCode: null });
    expect(run.body.data.actionAttempts[0].error).toContain('not shared with members');
    expect(sentTo('/member-wf')).toHaveLength(1);
  });

  it('a scheduled run published by a member who can no longer use the credential fails that action, sending nothing', async () => {
    await share(true);
    const saved = await s.call('POST', '/workflows', {
      key: memberKey,
      body: body('/scheduled', {
        triggerType: 'SCHEDULE',
        triggerConfig: { preset: 'EVERY_N_MINUTES', minutes: 5 },
      }),
    });
    expect(saved.status, saved.text).toBe(201);
    const id = saved.body.data.id;
    const warnings = (await s.call('PATCH', `/workflows/${id}`, { key: memberKey, body: { isActive: true } }))
      .body.error.details.warnings;
    const published = await s.call('PATCH', `/workflows/${id}`, {
      key: memberKey,
      body: { isActive: true, acknowledgedWarnings: warnings },
    });
    expect(published.status, published.text).toBe(200);
    await share(false);
    const outcome = await runScheduled({
      orgId: s.app.orgId,
      workflowId: id,
      scheduledTime: new Date().toISOString(),
    });
    expect(outcome).toMatchObject({ status: 'FAILED' });
    const runs = await s.call('GET', `/workflows/${id}/runs`);
    expect(runs.body.data[0].error).toContain('not shared with members');
    expect(sentTo('/scheduled')).toEqual([]);
    // Publishing again as the member is refused while the credential is not shared.
    const again = await s.call('PATCH', `/workflows/${id}`, {
      key: memberKey,
      body: { isActive: true, acknowledgedWarnings: warnings },
    });
    expect(again.status, again.text).toBe(403);
  });

  it('sharing is admin only, and changing it alone keeps the secret', async () => {
    const asMember = await s.call('PATCH', `/workflow-credentials/${credId}`, {
      key: memberKey,
      body: { sharedWithMembers: true },
    });
    expect(asMember.status).toBe(403);
    const bad = await s.call('PATCH', `/workflow-credentials/${credId}`, {
      body: { sharedWithMembers: 'yes' },
    });
    expect(bad.status).toBe(400);
    const hostsWithoutSecret = await s.call('PATCH', `/workflow-credentials/${credId}`, {
      body: { allowedHosts: ['evil.example.com'] },
    });
    expect(hostsWithoutSecret.status).toBe(400);
    expect(hostsWithoutSecret.body.error.details.issues[0].path).toBe('body.config');
    const got = await s.call('GET', `/workflow-credentials/${credId}`);
    expect(got.body.data).toMatchObject({ sharedWithMembers: false, allowedHosts: [rx.hostname] });
  });
});
