import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { handler as runnerWorker } from '../../functions/workers/workflow-runner';
import { startLocalStore } from '../../infra/local/store';
import { createOrganization } from '../../shared/auth/bootstrap';
import { config, resetConfig } from '../../shared/platform/config';
import { resetDocumentClient } from '../../shared/platform/db/client';
import { db } from '../../shared/platform/db/store';
import { listEvents } from '../../shared/platform/events';
import { LocalScheduler } from '../../shared/platform/scheduler/local';
import { sweepStaleRuns } from '../../shared/workflows/runner';
import { runStore } from '../../shared/workflows/store';
import { createConnection, postgresClient, postgresConnection } from '../support/connections';
import { freePort } from '../support/databases';
import { startTestServer, type TestServer } from '../support/server';

const suffix = randomBytes(4).toString('hex');
const T = `wf_orders_${suffix}`;

describe('workflows over HTTP with real PostgreSQL', () => {
  let s: TestServer;
  let client: pg.Client;
  let conn: string;
  let dataDir: string;
  const info = inject('postgres');

  beforeAll(async () => {
    s = await startTestServer();
    dataDir = s.dataDir;
    client = await postgresClient(info);
    await client.query(`CREATE TABLE ${T} (id int, status text, total int)`);
    await client.query(
      `INSERT INTO ${T} SELECT g, CASE WHEN g % 2 = 0 THEN 'paid' ELSE 'open' END, g * 10 FROM generate_series(1, 150) g`,
    );
    conn = await createConnection(s, postgresConnection(info, { name: `wf-pg-${suffix}` }));
  });
  afterAll(async () => {
    await s?.stop();
    await client?.query(`DROP TABLE IF EXISTS ${T}`);
    await client?.end();
  });

  const step = (query: string, over: Record<string, unknown> = {}) => ({ query, ...over });
  const create = (over: Record<string, unknown> = {}, key?: string) =>
    s.call('POST', '/workflows', {
      key,
      body: {
        name: `wf-${suffix}`,
        triggerType: 'MANUAL',
        connectionId: conn,
        steps: [step(`SELECT count(*)::int AS n FROM ${T} LIMIT 1`)],
        ...over,
      },
    });
  const workflow = async (over: Record<string, unknown> = {}) => {
    const r = await create(over);
    expect(r.status, r.text).toBe(201);
    return r.body.data;
  };
  const patch = (id: string, body: Record<string, unknown>, key?: string) =>
    s.call('PATCH', `/workflows/${id}`, { body, key });
  const runNow = async (id: string) => {
    const r = await s.call('POST', `/workflows/${id}/run`);
    expect(r.status, r.text).toBe(201);
    return r.body.data;
  };
  const runs = async (id: string, q = '') => {
    const r = await s.call('GET', `/workflows/${id}/runs${q}`);
    expect(r.status, r.text).toBe(200);
    return r.body;
  };
  /** Publishes, acknowledging whatever warnings the first attempt returns. */
  const publish = async (id: string) => {
    const first = await patch(id, { isActive: true });
    if (first.status === 200) return first.body.data;
    expect(first.status, first.text).toBe(422);
    const r = await patch(id, { isActive: true, acknowledgedWarnings: first.body.error.details.warnings });
    expect(r.status, r.text).toBe(200);
    return r.body.data;
  };

  it('creates an inactive draft at revision 1 that nothing schedules, and reads it back', async () => {
    const w = await workflow({
      description: 'Counts orders',
      steps: [
        step(`SELECT id FROM ${T} WHERE status = 'paid' LIMIT 5`, {
          name: 'paid',
          order: 2,
          stopIfEmpty: true,
        }),
        step(`SELECT count(*) AS n FROM ${T}`, { order: 1 }),
      ],
    });
    expect(w).toMatchObject({
      orgId: s.app.orgId,
      name: `wf-${suffix}`,
      description: 'Counts orders',
      connectionId: conn,
      projectId: null,
      triggerType: 'MANUAL',
      triggerConfig: null,
      isActive: false,
      draftRevision: 1,
      publishedVersion: null,
      publishedDraftRevision: null,
      publishedAt: null,
      hasUnpublishedChanges: true,
      actions: [],
    });
    // Steps come back in run order; unnamed steps are named after their template variable.
    expect(w.steps.map((x: any) => [x.order, x.name, x.stopIfEmpty, x.connectionId])).toEqual([
      [1, 'query_1', false, null],
      [2, 'paid', true, null],
    ]);
    expect((await s.call('GET', `/workflows/${w.id}`)).body.data).toEqual(w);
    const scheduled = await new LocalScheduler().get(`wf-${w.id}`);
    expect(scheduled).toBeUndefined();
  });

  it('lists workflows paginated, newest first', async () => {
    const a = await workflow({ name: `list-a-${suffix}` });
    const b = await workflow({ name: `list-b-${suffix}` });
    const r = await s.call('GET', '/workflows?pageSize=1');
    expect(r.status).toBe(200);
    expect(r.body.data).toHaveLength(1);
    expect(r.body.data[0].id).toBe(b.id);
    expect(r.body.meta.pagination.pageSize).toBe(1);
    expect(r.body.meta.pagination.total).toBeGreaterThanOrEqual(2);
    const p2 = await s.call('GET', '/workflows?pageSize=1&page=2');
    expect(p2.body.data[0].id).toBe(a.id);
    expect((await s.call('GET', '/workflows?pageSize=101')).status).toBe(400);
  });

  it('enforces every limit with VALIDATION_ERROR details naming the field', async () => {
    const q = `SELECT 1 AS one FROM ${T} LIMIT 1`;
    const cases: [Record<string, unknown>, string, number?][] = [
      [{ steps: [] }, 'body.steps'],
      [{ steps: Array.from({ length: 6 }, () => step(q)) }, 'body.steps'],
      [{ steps: [{ name: 'no query' }] }, 'body.steps.0.query'],
      [{ steps: [step('')] }, 'body.steps.0.query'],
      [{ steps: [step('x'.repeat(100_001))] }, 'body.steps.0.query'],
      [{ steps: [step(q, { order: -1 })] }, 'body.steps.0.order'],
      [{ steps: [step(q, { order: 1 }), step(q, { order: 1 })] }, 'body.steps.1.order'],
      [{ steps: [step(q, { stopIfEmpty: 'yes' })] }, 'body.steps.0.stopIfEmpty'],
      [{ name: '' }, 'body.name'],
      [{ name: 'x'.repeat(201) }, 'body.name'],
      [{ triggerType: 'CRON' }, 'body.triggerType'],
      [
        { triggerType: 'SCHEDULE', triggerConfig: { preset: 'EVERY_N_MINUTES', minutes: 4 } },
        'body.triggerConfig.minutes',
      ],
      [{ triggerType: 'SCHEDULE', triggerConfig: '{"preset":"DAILY"}' }, 'body.triggerConfig.hour'],
      [{ triggerType: 'SCHEDULE', triggerConfig: '{oops' }, 'body.triggerConfig'],
      [{ triggerConfig: { preset: 'WEEKLY', dayOfWeek: 7, hour: 1 } }, 'body.triggerConfig.dayOfWeek'],
      [{ triggerConfig: { preset: 'HOURLY', timezone: 'Nowhere/City' } }, 'body.triggerConfig.timezone'],
      [{ actions: Array.from({ length: 11 }, () => ({ type: 'EMAIL', config: {} })) }, 'body.actions'],
      [{ actions: [{ type: 'SMS', config: {} }] }, 'body.actions.0.type'],
      [{ actions: [{ type: 'WEBHOOK' }] }, 'body.actions.0.config'],
      [{ connectionId: null }, 'body.steps.0.connectionId'],
      [
        {
          steps: [
            step('x'.repeat(99_000)),
            step('x'.repeat(99_000)),
            step('x'.repeat(99_000)),
            step('x'.repeat(99_000)),
          ],
        },
        'body.steps',
      ],
    ];
    for (const [over, path] of cases) {
      const r = await create(over);
      expect(r.status, `${path}: ${r.text.slice(0, 300)}`).toBe(400);
      expect(r.body.error.code, path).toBe('VALIDATION_ERROR');
      expect(JSON.stringify(r.body.error.details), path).toContain(`"${path}`);
    }
    // A write is refused by the read-only guard at save time, naming the step.
    const w = await create({ steps: [step(`DELETE FROM ${T}`)] });
    expect(w.status).toBe(400);
    expect(w.body.error.code).toBe('READ_ONLY_VIOLATION');
    expect(w.body.error.details.path).toBe('body.steps.0.query');
    // An unknown connection is 404 naming the field (the same answer as a connection of another org).
    const missing = await create({
      steps: [step(q, { connectionId: '00000000-0000-4000-8000-000000000000' })],
    });
    expect(missing.status).toBe(404);
    expect(missing.body.error.details.path).toBe('body.steps.0.connectionId');
    expect((await client.query(`SELECT count(*)::int AS n FROM ${T}`)).rows[0].n).toBe(150);
  });

  it('hostile inputs: refused with a clear 4xx, nothing stored, the database unchanged', async () => {
    const before = (await db.query({ pk: `ORG#${s.app.orgId}`, prefix: 'WF#' })).length;
    const q = `SELECT id FROM ${T} LIMIT 1`;
    const cases: [string, Record<string, unknown>, number, string][] = [
      ['stacked statements', { steps: [step(`SELECT 1; DROP TABLE ${T}`)] }, 400, 'READ_ONLY_VIOLATION'],
      [
        'data-modifying CTE',
        { steps: [step(`WITH d AS (DELETE FROM ${T} RETURNING *) SELECT * FROM d`)] },
        400,
        'READ_ONLY_VIOLATION',
      ],
      [
        'SELECT INTO',
        { steps: [step(`SELECT * INTO stolen_${suffix} FROM ${T}`)] },
        400,
        'READ_ONLY_VIOLATION',
      ],
      ['side-effecting function', { steps: [step(`SELECT pg_sleep(10)`)] }, 400, 'READ_ONLY_VIOLATION'],
      ['locking read', { steps: [step(`SELECT * FROM ${T} FOR UPDATE`)] }, 400, 'READ_ONLY_VIOLATION'],
      [
        'write in a later step',
        { steps: [step(q), step(`UPDATE ${T} SET total = 0`)] },
        400,
        'READ_ONLY_VIOLATION',
      ],
      ['order as text', { steps: [step(q, { order: '1' })] }, 400, 'VALIDATION_ERROR'],
      ['order as float', { steps: [step(q, { order: 1.5 })] }, 400, 'VALIDATION_ERROR'],
      ['steps as object', { steps: { 0: step(q) } }, 400, 'VALIDATION_ERROR'],
      ['query as array', { steps: [{ query: [q] }] }, 400, 'VALIDATION_ERROR'],
      ['connection id path', { connectionId: '../../CONN#x' }, 404, 'NOT_FOUND'],
      [
        'triggerConfig proto',
        { triggerConfig: '{"__proto__":{"preset":"HOURLY"}}' },
        400,
        'VALIDATION_ERROR',
      ],
      ['triggerConfig number', { triggerConfig: 5 }, 400, 'VALIDATION_ERROR'],
      [
        'timezone injection',
        { triggerConfig: { preset: 'HOURLY', timezone: 'UTC) rate(1 minute' } },
        400,
        'VALIDATION_ERROR',
      ],
      ['actions not array', { actions: 'WEBHOOK' }, 400, 'VALIDATION_ERROR'],
      ['action config not JSON', { actions: [{ type: 'EMAIL', config: '{"to":' }] }, 400, 'VALIDATION_ERROR'],
      [
        'duplicate action orders',
        {
          actions: [
            { type: 'EMAIL', config: {}, order: 1 },
            { type: 'EMAIL', config: {}, order: 1 },
          ],
        },
        400,
        'VALIDATION_ERROR',
      ],
    ];
    for (const [what, over, status, code] of cases) {
      const r = await create(over);
      expect(r.status, `${what}: ${r.text.slice(0, 300)}`).toBe(status);
      expect(r.body.error.code, what).toBe(code);
      expect(r.body.data, what).toBeNull();
    }
    const w = await workflow();
    const patches: [string, Record<string, unknown>, number][] = [
      ['revision 0', { expectedDraftRevision: 0, name: 'x' }, 400],
      ['revision as text', { expectedDraftRevision: '1', name: 'x' }, 400],
      ['revision negative', { expectedDraftRevision: -1, name: 'x' }, 400],
      ['warnings not strings', { isActive: true, acknowledgedWarnings: [1, 2] }, 400],
      ['warnings without isActive', { acknowledgedWarnings: ['x'] }, 400],
      ['isActive as text', { isActive: 'true' }, 400],
      ['write via PATCH', { expectedDraftRevision: 1, steps: [step(`DELETE FROM ${T}`)] }, 400],
    ];
    for (const [what, body, status] of patches) {
      const r = await patch(w.id, body);
      expect(r.status, `${what}: ${r.text.slice(0, 300)}`).toBe(status);
    }
    expect((await s.call('GET', `/workflows/${w.id}`)).body.data).toEqual(w);
    for (const path of [
      `/workflows/${w.id}%00`,
      `/workflows/${'x'.repeat(300)}`,
      `/workflows/${w.id}/actions/-1/test`,
      `/workflows/${w.id}/actions/abc/test`,
    ]) {
      const r = path.endsWith('/test')
        ? await s.call('POST', path, { body: { confirmDelivery: true } })
        : await s.call('GET', path);
      expect([400, 404], `${path}: ${r.text.slice(0, 200)}`).toContain(r.status);
    }
    expect((await db.query({ pk: `ORG#${s.app.orgId}`, prefix: 'WF#' })).length).toBe(before + 1);
    const rows = await client.query(`SELECT count(*)::int AS n, sum(total)::int AS t FROM ${T}`);
    expect(rows.rows[0]).toEqual({ n: 150, t: 113250 });
    const stolen = await client.query(`SELECT to_regclass('stolen_${suffix}') AS t`);
    expect(stolen.rows[0].t).toBeNull();
  });

  it('PATCH: 428 without expectedDraftRevision, 409 with a stale one, and isActive alone needs none', async () => {
    const w = await workflow();
    const no = await patch(w.id, { name: 'renamed' });
    expect(no.status).toBe(428);
    expect(no.body.error.code).toBe('PRECONDITION_REQUIRED');
    const ok = await patch(w.id, { name: 'renamed', expectedDraftRevision: 1 });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data).toMatchObject({ name: 'renamed', draftRevision: 2 });
    const stale = await patch(w.id, { description: 'x', expectedDraftRevision: 1 });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('DRAFT_REVISION_CONFLICT');
    expect(stale.body.error.details.currentDraftRevision).toBe(2);
    const off = await patch(w.id, { isActive: false });
    expect(off.status, off.text).toBe(200);
    expect(off.body.data.draftRevision).toBe(2);
    // Steps are replaced wholesale.
    const steps = await patch(w.id, {
      expectedDraftRevision: 2,
      steps: [step(`SELECT 1 AS a FROM ${T} LIMIT 1`), step(`SELECT 2 AS b FROM ${T} LIMIT 1`)],
    });
    expect(steps.status, steps.text).toBe(200);
    expect(steps.body.data.steps).toHaveLength(2);
    expect(steps.body.data.draftRevision).toBe(3);
  });

  it('two concurrent PATCHes with the same revision: exactly one wins', async () => {
    const w = await workflow();
    for (let round = 0; round < 3; round++) {
      const rev = w.draftRevision + round;
      const answers = await Promise.all(
        ['first', 'second', 'third'].map((n) =>
          patch(w.id, { name: `${n}-${round}`, expectedDraftRevision: rev }),
        ),
      );
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses, answers.map((a) => a.text).join('\n')).toEqual([200, 409, 409]);
      const winner = answers.find((a) => a.status === 200)!.body.data;
      const now = (await s.call('GET', `/workflows/${w.id}`)).body.data;
      expect(now.draftRevision).toBe(rev + 1);
      expect(now.name).toBe(winner.name);
    }
  });

  it('publishing: 422 until every warning is acknowledged, then an immutable version; hasUnpublishedChanges tracks the draft', async () => {
    const w = await workflow({ steps: [step(`SELECT id FROM ${T}`)] });
    const first = await patch(w.id, { isActive: true });
    expect(first.status).toBe(422);
    expect(first.body.error.code).toBe('WARNINGS_NOT_ACKNOWLEDGED');
    const warnings: string[] = first.body.error.details.warnings;
    expect(warnings).toEqual([
      'Step 1 ("query_1") has no row limit (LIMIT, TOP, FETCH FIRST or a MongoDB limit); each run reads up to 1,000 rows from it.',
      'No actions are configured: runs only record their query results.',
    ]);
    const partial = await patch(w.id, { isActive: true, acknowledgedWarnings: [warnings[0]] });
    expect(partial.status).toBe(422);
    expect(partial.body.error.details.unacknowledged).toEqual([warnings[1]]);
    expect((await s.call('GET', `/workflows/${w.id}`)).body.data.isActive).toBe(false);
    const ok = await patch(w.id, { isActive: true, acknowledgedWarnings: warnings });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data).toMatchObject({
      isActive: true,
      publishedVersion: 1,
      publishedDraftRevision: 1,
      hasUnpublishedChanges: false,
    });
    expect(Date.parse(ok.body.data.publishedAt)).not.toBeNaN();
    // A draft change shows as unpublished; changing it back shows none again.
    const changed = await patch(w.id, { expectedDraftRevision: 1, name: 'other' });
    expect(changed.body.data).toMatchObject({
      hasUnpublishedChanges: true,
      draftRevision: 2,
      publishedVersion: 1,
    });
    const back = await patch(w.id, { expectedDraftRevision: 2, name: w.name });
    expect(back.body.data).toMatchObject({ hasUnpublishedChanges: false, draftRevision: 3 });
    const again = await patch(w.id, {
      expectedDraftRevision: 3,
      name: 'v2',
      isActive: true,
      acknowledgedWarnings: warnings,
    });
    expect(again.status, again.text).toBe(200);
    expect(again.body.data).toMatchObject({ publishedVersion: 2, publishedDraftRevision: 4, name: 'v2' });
    // Publishing what is already live is a no-op (no warnings to acknowledge again, no new version).
    const same = await patch(w.id, { isActive: true });
    expect(same.status, same.text).toBe(200);
    expect(same.body.data).toMatchObject({ publishedVersion: 2, isActive: true });
    // The first version is still stored as it was published.
    const v1 = await db.get(`ORG#${s.app.orgId}#WF#${w.id}`, 'PUB#000000000001');
    expect((v1 as any).definition.name).toBe(w.name);
    expect((v1 as any).version).toBe(1);
    const off = await patch(w.id, { isActive: false });
    expect(off.body.data).toMatchObject({ isActive: false, publishedVersion: 2 });
    // Reactivating the unchanged draft reuses version 2 (same publishedAt, the stored version untouched).
    const v2 = await db.get(`ORG#${s.app.orgId}#WF#${w.id}`, 'PUB#000000000004');
    const on = await patch(w.id, { isActive: true, acknowledgedWarnings: warnings });
    expect(on.status, on.text).toBe(200);
    expect(on.body.data).toMatchObject({
      isActive: true,
      publishedVersion: 2,
      publishedAt: again.body.data.publishedAt,
    });
    expect(await db.get(`ORG#${s.app.orgId}#WF#${w.id}`, 'PUB#000000000004')).toEqual(v2);
  });

  it('publishing errors are 400 (SCHEDULE without triggerConfig), before anything changes', async () => {
    const w = await workflow({ triggerType: 'SCHEDULE', steps: [step(`SELECT 1 AS a FROM ${T} LIMIT 1`)] });
    const r = await patch(w.id, { isActive: true });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('VALIDATION_ERROR');
    expect(r.body.error.details.issues[0].path).toBe('triggerConfig');
    const both = await patch(w.id, { isActive: true, expectedDraftRevision: 1, name: 'not saved' });
    expect(both.status).toBe(400);
    expect((await s.call('GET', `/workflows/${w.id}`)).body.data).toMatchObject({
      draftRevision: 1,
      isActive: false,
    });
  });

  it('runs the draft now: SUCCESS, CONDITION_NOT_MET and FAILED for real, newest first in the history, with events', async () => {
    const w = await workflow({
      steps: [
        step(`SELECT count(*)::int AS n FROM ${T} WHERE status = 'paid'`),
        step(`SELECT id, total FROM ${T} WHERE id <= 3 ORDER BY id`, { stopIfEmpty: true }),
      ],
    });
    const ok = await runNow(w.id);
    expect(ok).toMatchObject({
      workflowId: w.id,
      trigger: 'MANUAL',
      status: 'SUCCESS',
      definitionVersion: null,
      draftRevision: 1,
      scheduledFor: null,
      error: null,
      actionAttempts: [],
    });
    const results = JSON.parse(ok.stepResults);
    expect(results.map((r: any) => [r.status, r.rowCount])).toEqual([
      ['SUCCESS', 1],
      ['SUCCESS', 3],
    ]);
    expect(results[0].rows).toEqual([{ n: 75 }]);
    expect(results[1].rows).toEqual([
      { id: 1, total: 10 },
      { id: 2, total: 20 },
      { id: 3, total: 30 },
    ]);
    expect(ok.durationMs).toBeGreaterThanOrEqual(0);

    await patch(w.id, {
      expectedDraftRevision: 1,
      steps: [
        step(`SELECT id FROM ${T} WHERE id < 0`, { stopIfEmpty: true }),
        step(`SELECT id FROM ${T} LIMIT 1`),
      ],
    });
    const empty = await runNow(w.id);
    expect(empty.status).toBe('CONDITION_NOT_MET');
    expect(JSON.parse(empty.stepResults).map((r: any) => r.status)).toEqual(['SUCCESS', 'SKIPPED']);
    expect(empty.actionResults).toBeNull();

    await patch(w.id, { expectedDraftRevision: 2, steps: [step(`SELECT no_such_column FROM ${T}`)] });
    const failed = await runNow(w.id);
    expect(failed.status).toBe('FAILED');
    expect(failed.error).toMatch(/Step 1 \("query_1"\) failed: .*no_such_column/);
    expect(JSON.parse(failed.stepResults)[0]).toMatchObject({ status: 'FAILED', errorCode: 'QUERY_FAILED' });

    const h = await runs(w.id);
    expect(h.data.map((r: any) => r.status)).toEqual(['FAILED', 'CONDITION_NOT_MET', 'SUCCESS']);
    expect(h.meta.pagination).toEqual({ total: 3, page: 1, pageSize: 20, totalPages: 1 });
    const p2 = await runs(w.id, '?pageSize=2&page=2');
    expect(p2.data.map((r: any) => r.id)).toEqual([ok.id]);
    expect((await runs(w.id, '?page=5')).data).toEqual([]);

    const events = (await listEvents(s.app.orgId, { limit: 1000 })).filter(
      (e) => (e.data as any).workflowId === w.id,
    );
    const completed = events
      .filter((e) => e.type === 'workflow.run.completed')
      .map((e) => (e.data as any).status);
    expect(completed.sort()).toEqual(['CONDITION_NOT_MET', 'FAILED', 'SUCCESS']);
    const failedEvents = events.filter((e) => e.type === 'workflow.run.failed');
    expect(failedEvents.map((e) => (e.data as any).runId)).toEqual([failed.id]);
  });

  it('bounds stored step results: every step fact, rows only as far as 64 KiB allows', async () => {
    const w = await workflow({ steps: [step(`SELECT id, repeat('x', 500) AS pad FROM ${T} ORDER BY id`)] });
    const run = await runNow(w.id);
    expect(run.status).toBe('SUCCESS');
    expect(Buffer.byteLength(run.stepResults)).toBeLessThanOrEqual(64 * 1024);
    const [r] = JSON.parse(run.stepResults);
    expect(r.rowCount).toBe(150);
    expect(r.rowsStored).toBeGreaterThan(50);
    expect(r.rowsStored).toBeLessThan(150);
  });

  it('preview runs the draft steps (at most 100 rows each) and stores nothing', async () => {
    const w = await workflow({
      steps: [
        step(`SELECT id FROM ${T} ORDER BY id`),
        step(`SELECT id FROM ${T} WHERE id < 0`, { stopIfEmpty: true }),
      ],
    });
    const before = await db.query({ pk: `ORG#${s.app.orgId}#WF#${w.id}` });
    const p = await s.call('POST', `/workflows/${w.id}/preview`);
    expect(p.status, p.text).toBe(200);
    expect(p.body.data).toMatchObject({
      workflowId: w.id,
      draftRevision: 1,
      status: 'CONDITION_NOT_MET',
      wouldRunActions: false,
      actionsConfigured: 0,
      rowsLimitedTo: 100,
    });
    const [a, b] = p.body.data.steps;
    expect(a).toMatchObject({ status: 'SUCCESS', rowCount: 100, conditionMet: true, columns: ['id'] });
    expect(a.rows).toHaveLength(100);
    expect(b).toMatchObject({ status: 'SUCCESS', rowCount: 0, conditionMet: false });
    expect(await db.query({ pk: `ORG#${s.app.orgId}#WF#${w.id}` })).toEqual(before);
    expect((await runs(w.id)).meta.pagination.total).toBe(0);
    expect((await s.call('GET', `/workflows/${w.id}`)).body.data).toEqual(w);
  });

  it('preview is 422 PREVIEW_FAILED when a source is unavailable', async () => {
    const down = await createConnection(
      s,
      postgresConnection(info, { name: `down-${suffix}`, port: await freePort() }),
    );
    const w = await workflow({ steps: [step(`SELECT 1 AS a LIMIT 1`, { connectionId: down })] });
    const p = await s.call('POST', `/workflows/${w.id}/preview`);
    expect(p.status, p.text).toBe(422);
    expect(p.body.error.code).toBe('PREVIEW_FAILED');
    expect(p.body.error.details).toMatchObject({ step: 1, connectionId: down, reason: 'CONNECTION_FAILED' });
    expect((await runs(w.id)).meta.pagination.total).toBe(0);
  });

  it('action test without confirmation is 428 CONFIRMATION_REQUIRED; an unknown order is 404', async () => {
    const w = await workflow();
    expect(
      (await s.call('POST', `/workflows/${w.id}/actions/0/test`, { body: { confirmDelivery: true } })).status,
    ).toBe(404);
  });

  it('a scheduled run uses the published version while the draft differs, with definitionVersion and scheduledFor', async () => {
    const w = await workflow({
      name: `sched-${suffix}`,
      triggerType: 'SCHEDULE',
      triggerConfig: { preset: 'DAILY', hour: 6, minute: 30, timezone: 'Europe/Paris' },
      steps: [step(`SELECT 'published' AS which, count(*)::int AS n FROM ${T} LIMIT 1`)],
    });
    const published = await publish(w.id);
    expect(published.publishedVersion).toBe(1);
    const sched = new LocalScheduler();
    const stored = await sched.get(`wf-${w.id}`);
    expect(stored).toMatchObject({
      expression: 'cron(30 6 * * ? *)',
      timezone: 'Europe/Paris',
      worker: 'workflow-runner',
    });
    expect(JSON.parse(stored!.input)).toEqual({
      orgId: s.app.orgId,
      workflowId: w.id,
      version: 1,
      scheduledTime: '<aws.scheduler.scheduled-time>',
    });
    // The draft moves on without being published.
    const changed = await patch(w.id, {
      expectedDraftRevision: 1,
      steps: [step(`SELECT 'draft' AS which LIMIT 1`)],
    });
    expect(changed.body.data.hasUnpublishedChanges).toBe(true);
    // Make the schedule due now: the local durable scheduler fires it through the runner worker.
    const due = Date.now() - 1000;
    await db.update({
      pk: 'SCHEDULES',
      sk: `SCHEDULE#wf-${w.id}`,
      update: 'SET nextFireAt = :t, gsi1sk = :g',
      values: { ':t': due, ':g': `${String(due).padStart(15, '0')}#wf-${w.id}` },
    });
    const run = await waitForRuns(w.id, 1);
    expect(run[0]).toMatchObject({
      trigger: 'SCHEDULE',
      status: 'SUCCESS',
      definitionVersion: 1,
      draftRevision: 1,
      scheduledFor: new Date(Math.floor(due / 60_000) * 60_000).toISOString(),
    });
    expect(JSON.parse(run[0].stepResults)[0].rows).toEqual([{ which: 'published', n: 150 }]);

    // The same due time delivered again (schedulers deliver at least once) makes no second run.
    const payload = JSON.parse(stored!.input);
    const again = await Promise.all([
      runnerWorker({ ...payload, scheduledTime: new Date(due).toISOString() }),
      runnerWorker({ ...payload, scheduledTime: new Date(due).toISOString() }),
    ]);
    expect(again).toEqual([{ skipped: 'duplicate' }, { skipped: 'duplicate' }]);
    const twice = await Promise.all([
      runnerWorker({ ...payload, scheduledTime: '2030-01-01T06:30:00Z' }),
      runnerWorker({ ...payload, scheduledTime: '2030-01-01T06:30:12Z' }),
    ]);
    expect(twice.filter((r) => 'runId' in r)).toHaveLength(1);
    expect(twice.filter((r) => 'skipped' in r)).toEqual([{ skipped: 'duplicate' }]);
    expect((await runs(w.id)).meta.pagination.total).toBe(2);

    // Deactivated: the schedule is gone and a late delivery runs nothing.
    await patch(w.id, { isActive: false });
    expect(await sched.get(`wf-${w.id}`)).toBeUndefined();
    expect(await runnerWorker({ ...payload, scheduledTime: '2030-01-02T06:30:00Z' })).toEqual({
      skipped: 'inactive',
    });
  });

  it('a due time missed while the process was down runs once after the restart', async () => {
    const w = await workflow({
      triggerType: 'SCHEDULE',
      triggerConfig: { preset: 'EVERY_N_MINUTES', minutes: 5 },
      steps: [step(`SELECT 1 AS one FROM ${T} LIMIT 1`)],
    });
    await publish(w.id);
    const adminKey = s.adminKey;
    await s.stop({ keepData: true });
    // While the process is down, three due times pass (the stored next time is 15 minutes ago).
    const store = await startLocalStore(dataDir, config().LOUPE_TABLE_NAME);
    process.env.LOUPE_DYNAMODB_ENDPOINT = store.endpoint;
    resetConfig();
    resetDocumentClient();
    const item: any = await db.get('SCHEDULES', `SCHEDULE#wf-${w.id}`);
    const overdue = Date.now() - 15 * 60_000;
    await db.update({
      pk: 'SCHEDULES',
      sk: `SCHEDULE#wf-${w.id}`,
      update: 'SET nextFireAt = :t, anchorAt = :a, gsi1sk = :g',
      values: {
        ':t': overdue,
        ':a': item.anchorAt - 15 * 60_000,
        ':g': `${String(overdue).padStart(15, '0')}#wf-${w.id}`,
      },
    });
    resetDocumentClient();
    await store.close();
    s = await startTestServer({ dataDir, adminKey });
    const got = await waitForRuns(w.id, 1);
    await new Promise((r) => setTimeout(r, 1500));
    expect((await runs(w.id)).data).toHaveLength(1);
    expect(got[0]).toMatchObject({ trigger: 'SCHEDULE', status: 'SUCCESS', definitionVersion: 1 });
  });

  it('a run left RUNNING by a crash is swept to TIMED_OUT with its events', async () => {
    const w = await workflow();
    const seq = await runStore.nextSequence(s.app.orgId, w.id);
    const started = Date.now() - 10 * 60_000;
    await runStore.start({
      id: `crashed-${suffix}`,
      orgId: s.app.orgId,
      workflowId: w.id,
      workflowName: w.name,
      sequence: seq,
      trigger: 'SCHEDULE',
      status: 'RUNNING',
      definitionVersion: 1,
      draftRevision: 1,
      scheduledFor: new Date(started).toISOString(),
      stepResults: null,
      actionResults: null,
      durationMs: null,
      error: null,
      startedAt: new Date(started).toISOString(),
      completedAt: null,
      deadlineAt: started + 300_000,
    });
    // (The local runtime's own every-minute sweep may get there first; either way it is closed once.)
    await sweepStaleRuns();
    const [r] = (await runs(w.id)).data;
    expect(r).toMatchObject({ id: `crashed-${suffix}`, status: 'TIMED_OUT', durationMs: 300_000 });
    expect(r.error).toMatch(/interrupted/);
    expect(await sweepStaleRuns()).toBe(0);
    const types = (await listEvents(s.app.orgId, { limit: 1000 }))
      .filter((e) => (e.data as any).runId === r.id)
      .map((e) => e.type)
      .sort();
    expect(types).toEqual(['workflow.run.completed', 'workflow.run.failed']);
  });

  it('DELETE removes versions, runs and the schedule; a second DELETE is 404', async () => {
    const w = await workflow({
      triggerType: 'SCHEDULE',
      triggerConfig: { preset: 'HOURLY' },
      steps: [step(`SELECT 1 AS one FROM ${T} LIMIT 1`)],
    });
    await publish(w.id);
    await runNow(w.id);
    expect(await new LocalScheduler().get(`wf-${w.id}`)).toBeDefined();
    const d = await s.call('DELETE', `/workflows/${w.id}`);
    expect(d.status, d.text).toBe(200);
    expect(d.body.data).toEqual({ deleted: true });
    expect(await db.query({ pk: `ORG#${s.app.orgId}#WF#${w.id}` })).toEqual([]);
    expect(await db.get(`ORG#${s.app.orgId}`, `WF#${w.id}`)).toBeUndefined();
    expect(await new LocalScheduler().get(`wf-${w.id}`)).toBeUndefined();
    expect((await s.call('GET', `/workflows/${w.id}`)).status).toBe(404);
    expect((await s.call('DELETE', `/workflows/${w.id}`)).status).toBe(404);
  });

  it('another organization gets 404 everywhere; members only see workflows on their connections', async () => {
    const w = await workflow();
    const outsider = (
      await createOrganization({ name: `other-${suffix}`, adminEmail: `o-${suffix}@x.example` })
    ).key;
    for (const [method, path, body] of [
      ['GET', `/workflows/${w.id}`],
      ['PATCH', `/workflows/${w.id}`, { isActive: false }],
      ['POST', `/workflows/${w.id}/run`],
      ['POST', `/workflows/${w.id}/preview`],
      ['GET', `/workflows/${w.id}/runs`],
      ['POST', `/workflows/${w.id}/actions/0/test`, { confirmDelivery: true }],
      ['DELETE', `/workflows/${w.id}`],
    ] as [string, string, unknown?][]) {
      const r = await s.call(method, path, { key: outsider, body });
      expect(r.status, `${method} ${path}`).toBe(404);
    }
    expect((await s.call('GET', '/workflows', { key: outsider })).body.data).toEqual([]);
    // Creating on a connection of another org is 404 naming the field.
    const foreign = await create({}, outsider);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.details.path).toBe('body.connectionId');

    const other = await createConnection(s, postgresConnection(info, { name: `unassigned-${suffix}` }));
    const m = await s.call('POST', '/members', {
      body: { email: `m-${suffix}@x.example`, name: 'M', role: 'member', connectionIds: [conn] },
    });
    const memberKey = (await s.call('POST', `/members/${m.body.data.id}/keys`, { body: { name: 'k' } })).body
      .data.key;
    const hidden = await workflow({
      steps: [step(`SELECT 1 AS a FROM ${T} LIMIT 1`, { connectionId: other })],
    });
    expect((await s.call('GET', `/workflows/${hidden.id}`, { key: memberKey })).status).toBe(404);
    expect((await s.call('GET', `/workflows/${w.id}`, { key: memberKey })).status).toBe(200);
    const listed = (await s.call('GET', '/workflows?pageSize=100', { key: memberKey })).body.data.map(
      (x: any) => x.id,
    );
    expect(listed).toContain(w.id);
    expect(listed).not.toContain(hidden.id);
    const refused = await create(
      { steps: [step(`SELECT 1 AS a LIMIT 1`, { connectionId: other })] },
      memberKey,
    );
    expect(refused.status).toBe(404);
    expect(refused.body.error.details.path).toBe('body.steps.0.connectionId');
    const mine = await create({}, memberKey);
    expect(mine.status, mine.text).toBe(201);
    // A key without the workflows scope is 403.
    const scoped = await s.call('POST', '/keys', { body: { name: 'q', scopes: ['query'] } });
    expect((await s.call('GET', '/workflows', { key: scoped.body.data.key })).status).toBe(403);
  });

  async function waitForRuns(id: string, n: number, timeoutMs = 45_000) {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const h = await runs(id);
      const done = h.data.filter((r: any) => r.status !== 'RUNNING');
      if (done.length >= n) return done;
      if (Date.now() > until) throw new Error(`expected ${n} finished runs, saw ${JSON.stringify(h.data)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
});
