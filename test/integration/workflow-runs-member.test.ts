import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createConnection, postgresClient, postgresConnection } from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';

const suffix = randomBytes(4).toString('hex');
const T = `wf_runs_member_${suffix}`;

/**
 * A member reads a workflow's run history only as far as its connections allow: a run of an earlier
 * version that read a connection not assigned to the member keeps its status, but not its rows or errors.
 */
describe('workflow runs read by a member', () => {
  let s: TestServer;
  let client: pg.Client;
  const info = inject('postgres');

  beforeAll(async () => {
    s = await startTestServer();
    client = await postgresClient(info);
    await client.query(`CREATE TABLE ${T} (secret text)`);
    await client.query(`INSERT INTO ${T} VALUES ('only-for-admins-${suffix}')`);
  });
  afterAll(async () => {
    await s?.stop();
    await client?.query(`DROP TABLE IF EXISTS ${T}`);
    await client?.end();
  });

  it('withholds rows and errors of runs on an unassigned connection; shows its own', async () => {
    const hidden = await createConnection(s, postgresConnection(info, { name: `hidden-${suffix}` }));
    const mine = await createConnection(s, postgresConnection(info, { name: `mine-${suffix}` }));
    const m = await s.call('POST', '/members', {
      body: { email: `runs-${suffix}@x.example`, name: 'M', role: 'member', connectionIds: [mine] },
    });
    const memberKey = (await s.call('POST', `/members/${m.body.data.id}/keys`, { body: { name: 'k' } })).body
      .data.key;
    const w = (
      await s.call('POST', '/workflows', {
        body: {
          name: `runs ${suffix}`,
          triggerType: 'MANUAL',
          connectionId: hidden,
          steps: [{ query: `SELECT secret FROM ${T}` }],
        },
      })
    ).body.data;
    expect((await s.call('POST', `/workflows/${w.id}/run`)).status).toBe(201);
    // The admin moves the draft to the member's connection: the member now sees the workflow.
    const moved = await s.call('PATCH', `/workflows/${w.id}`, {
      body: { expectedDraftRevision: 1, connectionId: mine },
    });
    expect(moved.status, moved.text).toBe(200);
    expect((await s.call('POST', `/workflows/${w.id}/run`, { key: memberKey })).status).toBe(201);

    const asAdmin = await s.call('GET', `/workflows/${w.id}/runs`);
    expect(asAdmin.text).toContain(`only-for-admins-${suffix}`);
    const asMember = await s.call('GET', `/workflows/${w.id}/runs`, { key: memberKey });
    expect(asMember.status).toBe(200);
    const [newest, oldest] = asMember.body.data;
    expect(oldest.status).toBe('SUCCESS');
    expect(oldest.stepResults).toBeNull();
    expect(JSON.stringify(oldest)).not.toContain(hidden);
    expect(newest.stepResults).toContain(mine);
    // Its own run (on its connection) reads the same table, so only the old run's text is withheld.
    expect(asMember.text.split(`only-for-admins-${suffix}`).length - 1).toBe(1);
  });
});
