import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { listEvents } from '../../shared/platform/events';
import { createConnection, postgresConnection } from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';

/**
 * The run deadline (5 minutes in production) shortened to 4 s through LOUPE_WORKFLOW_RUN_DEADLINE_MS: long
 * enough for `SELECT 1` on a loaded machine, far shorter than counting 200 million generated rows.
 */
describe('workflow run deadline', () => {
  let s: TestServer;
  let conn: string;
  const info = inject('postgres');
  beforeAll(async () => {
    s = await startTestServer({ env: { LOUPE_WORKFLOW_RUN_DEADLINE_MS: '4000' } });
    conn = await createConnection(s, postgresConnection(info, { name: 'deadline-pg' }));
  });
  afterAll(() => s?.stop());

  it('a step still running at the deadline ends the run TIMED_OUT, without actions, with both events', async () => {
    const c = await s.call('POST', '/workflows', {
      body: {
        name: 'slow',
        triggerType: 'MANUAL',
        connectionId: conn,
        steps: [
          { query: 'SELECT 1 AS fast' },
          // No sleep function (the read-only guard refuses pg_sleep): just a lot of rows to count.
          { query: 'SELECT count(*) AS n FROM generate_series(1, 200000000) AS g' },
          { query: 'SELECT 3 AS never' },
        ],
      },
    });
    expect(c.status, c.text).toBe(201);
    const r = await s.call('POST', `/workflows/${c.body.data.id}/run`);
    expect(r.status, r.text).toBe(201);
    const run = r.body.data;
    expect(run.status).toBe('TIMED_OUT');
    expect(run.error).toMatch(/deadline/);
    expect(run.durationMs).toBeGreaterThanOrEqual(3900);
    expect(JSON.parse(run.stepResults).map((x: any) => x.status)).toEqual([
      'SUCCESS',
      'TIMED_OUT',
      'SKIPPED',
    ]);
    expect(run.actionResults).toBeNull();
    const types = (await listEvents(s.app.orgId, { limit: 100 }))
      .filter((e) => (e.data as any).runId === run.id)
      .map((e) => e.type)
      .sort();
    expect(types).toEqual(['workflow.run.completed', 'workflow.run.failed']);
    const listed = (await s.call('GET', `/workflows/${c.body.data.id}/runs`)).body.data;
    expect(listed.map((x: any) => [x.id, x.status])).toEqual([[run.id, 'TIMED_OUT']]);
  });
});
