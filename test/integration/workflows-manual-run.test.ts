import { randomBytes } from 'node:crypto';
import type { SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { handler as runnerWorker } from '../../functions/workers/workflow-runner';
import { handler as sweepWorker } from '../../functions/workers/workflow-sweep';
import { resetConfig } from '../../shared/platform/config';
import { newId } from '../../shared/platform/ids';
import { CUT_ATTEMPT } from '../../shared/workflows/runner';
import { runStore } from '../../shared/workflows/store';
import { createConnection, postgresConnection } from '../support/connections';
import { type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver';
import { startTestServer, type TestServer } from '../support/server';
import { waitFor } from '../support/wait';

const suffix = randomBytes(4).toString('hex');

/**
 * Issue 22, item 3: POST /workflows/{id}/run and the action test hand the run to the runner worker (its
 * queue) and answer within their wait: finished, or RUNNING while the run goes on; the run's record then
 * shows its progress and final state with every attempt final. Real PostgreSQL for the step, a real
 * HTTPS receiver that answers as slowly as the URL asks (`?delay=ms`).
 */
describe('manual runs answer in time whatever their actions do', () => {
  let s: TestServer;
  let rx: HttpsReceiver;
  let conn: string;
  const info = inject('postgres');

  beforeAll(async () => {
    rx = await startHttpsReceiver((req, res) => {
      const delay = Number(/delay=(\d+)/.exec(req.url)?.[1] ?? 0);
      const status = Number(/status=(\d+)/.exec(req.url)?.[1] ?? 200);
      setTimeout(() => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end('{"ok":true}');
      }, delay);
    });
    // The wait is 1 s here so that the cases run fast; the last case restores the default 20 s.
    s = await startTestServer({
      env: { LOUPE_OUTBOUND_TEST_HOSTS: rx.testHostEntry, LOUPE_MANUAL_RUN_WAIT_MS: '1000' },
    });
    conn = await createConnection(s, postgresConnection(info, { name: `manual-${suffix}` }));
  });
  afterAll(async () => {
    await s?.stop();
    await rx?.close();
  });

  const hook = (path: string, over: Record<string, unknown> = {}) => ({
    version: 2,
    url: `${rx.url}${path}`,
    method: 'POST',
    bodyMode: 'JSON',
    bodyTemplate: '{"count": {{query_1.row_count}}}',
    retry: { maxAttempts: 1, baseDelayMs: 100 },
    ...over,
  });
  const workflow = async (actions: unknown[]) => {
    const r = await s.call('POST', '/workflows', {
      body: {
        name: `manual-${suffix}-${newId().slice(0, 8)}`,
        triggerType: 'MANUAL',
        connectionId: conn,
        steps: [{ query: 'SELECT 1 AS one' }],
        actions,
      },
    });
    expect(r.status, r.text).toBe(201);
    return r.body.data as { id: string; actions: { id: string }[] };
  };
  const runOf = async (workflowId: string, runId: string) => {
    const r = await s.call('GET', `/workflows/${workflowId}/runs`);
    expect(r.status, r.text).toBe(200);
    return (r.body.data as any[]).find((x) => x.id === runId);
  };
  const finished = (workflowId: string, runId: string, ms = 60_000) =>
    waitFor(
      'the run to end',
      async () => {
        const run = await runOf(workflowId, runId);
        return run && run.status !== 'RUNNING' ? run : undefined;
      },
      ms,
    );
  const expectAttemptsFinal = (run: any) => {
    expect(run.actionAttempts.length).toBeGreaterThan(0);
    for (const a of run.actionAttempts) {
      expect(['SUCCESS', 'FAILED'], JSON.stringify(a)).toContain(a.status);
      expect(a.completedAt, JSON.stringify(a)).not.toBeNull();
    }
  };
  const received = (path: string) => rx.requests.filter((r) => r.url.startsWith(path));

  it('a run longer than the wait: 201 with the run RUNNING, then its progress and final state', async () => {
    const w = await workflow([{ type: 'WEBHOOK', order: 0, config: hook('/slow-run?delay=4000') }]);
    const r = await s.call('POST', `/workflows/${w.id}/run`);
    expect(r.status, r.text).toBe(201);
    const run = r.body.data;
    expect(run).toMatchObject({ workflowId: w.id, trigger: 'MANUAL', status: 'RUNNING', completedAt: null });
    // Progress: while the receiver holds the answer, the record shows the attempt under way.
    const during = await waitFor('the attempt under way', async () => {
      const now = await runOf(w.id, run.id);
      return now?.actionAttempts?.length ? now : undefined;
    });
    expect(['RUNNING', 'SUCCESS']).toContain(during.actionAttempts[0].status);
    const done = await finished(w.id, run.id);
    expect(done.status, done.error).toBe('SUCCESS');
    expect(done.completedAt).not.toBeNull();
    expectAttemptsFinal(done);
    expect(done.actionAttempts).toHaveLength(1);
    expect(received('/slow-run')).toHaveLength(1);
  });

  it('a quick run is answered finished, as before', async () => {
    const w = await workflow([{ type: 'WEBHOOK', order: 0, config: hook('/quick') }]);
    const r = await s.call('POST', `/workflows/${w.id}/run`);
    expect(r.status, r.text).toBe(201);
    expect(r.body.data.status, r.body.data.error).toBe('SUCCESS');
    expectAttemptsFinal(r.body.data);
  });

  it('an action test longer than the wait answers 201 RUNNING; a quick failing one 422 ACTION_TEST_FAILED', async () => {
    const w = await workflow([
      { type: 'WEBHOOK', order: 0, config: hook('/slow-test?delay=3000') },
      { type: 'WEBHOOK', order: 1, config: hook('/fail-test?status=400') },
    ]);
    const slow = await s.call('POST', `/workflows/${w.id}/actions/0/test`, {
      body: { confirmDelivery: true },
    });
    expect(slow.status, slow.text).toBe(201);
    expect(slow.body.data).toMatchObject({ trigger: 'ACTION_TEST', status: 'RUNNING' });
    const done = await finished(w.id, slow.body.data.id);
    expect(done.status, done.error).toBe('SUCCESS');
    expectAttemptsFinal(done);
    expect(received('/fail-test')).toHaveLength(0); // only the tested action is sent

    const failed = await s.call('POST', `/workflows/${w.id}/actions/1/test`, {
      body: { confirmDelivery: true },
    });
    expect(failed.status, failed.text).toBe(422);
    expect(failed.body.error.code).toBe('ACTION_TEST_FAILED');
    expect(failed.body.error.details.run.status).toBe('FAILED');
    expectAttemptsFinal(failed.body.error.details.run);
  });

  it('a repeated or forged runner message runs nothing twice and nothing foreign', async () => {
    const w = await workflow([{ type: 'WEBHOOK', order: 0, config: hook('/once') }]);
    const r = await s.call('POST', `/workflows/${w.id}/run`);
    expect(r.body.data.status, r.text).toBe('SUCCESS');
    const sequence = await runStore.total(s.app.orgId, w.id);
    const deliver = (body: unknown) =>
      runnerWorker({
        Records: [
          {
            messageId: newId(),
            receiptHandle: 'r',
            body: JSON.stringify(body),
            attributes: { ApproximateReceiveCount: '2' },
            messageAttributes: {},
            eventSource: 'aws:sqs',
          },
        ],
      } as unknown as SQSEvent);
    // The same message again (SQS delivers at least once), the same run under another organization,
    // a run that was never handed over, and bodies that are not a manual-run message.
    expect(await deliver({ orgId: s.app.orgId, workflowId: w.id, sequence })).toEqual({
      batchItemFailures: [],
    });
    await deliver({ orgId: newId(), workflowId: w.id, sequence });
    await deliver({ orgId: s.app.orgId, workflowId: w.id, sequence: sequence + 5 });
    for (const bad of [{ orgId: s.app.orgId }, { orgId: s.app.orgId, workflowId: w.id, sequence: -1 }, 'x']) {
      const out = (await deliver(bad)) as { batchItemFailures: unknown[] };
      expect(out.batchItemFailures, JSON.stringify(bad)).toHaveLength(1);
    }
    expect(received('/once')).toHaveLength(1);
    const run = await runOf(w.id, r.body.data.id);
    expect(run.actionAttempts).toHaveLength(1);
    expect(await runStore.total(s.app.orgId, w.id)).toBe(sequence);
  });

  it('a run that reaches its deadline during a delivery ends TIMED_OUT with every attempt final', async () => {
    const before = process.env.LOUPE_WORKFLOW_RUN_DEADLINE_MS;
    process.env.LOUPE_WORKFLOW_RUN_DEADLINE_MS = '2000';
    resetConfig();
    try {
      const w = await workflow([
        { type: 'WEBHOOK', order: 0, config: hook('/past-deadline?delay=8000', { timeoutMs: 30_000 }) },
      ]);
      const r = await s.call('POST', `/workflows/${w.id}/run`);
      expect(r.status, r.text).toBe(201);
      const done = await finished(w.id, r.body.data.id);
      expect(done.status).toBe('TIMED_OUT');
      expectAttemptsFinal(done);
    } finally {
      if (before === undefined) delete process.env.LOUPE_WORKFLOW_RUN_DEADLINE_MS;
      else process.env.LOUPE_WORKFLOW_RUN_DEADLINE_MS = before;
      resetConfig();
    }
  });

  it('the sweep closes a run its runner left RUNNING with every attempt in a final state', async () => {
    const w = await workflow([{ type: 'WEBHOOK', order: 0, config: hook('/never') }]);
    // What a runner that died mid-delivery leaves: the run RUNNING past its deadline, an attempt RUNNING.
    const sequence = await runStore.nextSequence(s.app.orgId, w.id);
    const started = Date.now() - 10 * 60_000;
    const run = {
      id: newId(),
      orgId: s.app.orgId,
      workflowId: w.id,
      workflowName: 'crashed',
      sequence,
      trigger: 'MANUAL' as const,
      status: 'RUNNING' as const,
      definitionVersion: null,
      draftRevision: 1,
      scheduledFor: null,
      stepResults: null,
      actionResults: null,
      durationMs: null,
      error: null,
      startedAt: new Date(started).toISOString(),
      completedAt: null,
      deadlineAt: started + 5 * 60_000,
    };
    await runStore.start(run);
    await runStore.putAttempt(s.app.orgId, w.id, sequence, {
      id: newId(),
      runId: run.id,
      actionId: w.actions[0].id,
      actionOrder: 0,
      attempt: 1,
      status: 'RUNNING',
      method: 'POST',
      url: `${rx.url}/never`,
      requestBodyBytes: 12,
      statusCode: null,
      durationMs: null,
      responseHeaders: null,
      responseBody: null,
      error: null,
      startedAt: new Date(started + 1000).toISOString(),
      completedAt: null,
    });
    expect((await sweepWorker()).closed).toBeGreaterThanOrEqual(1);
    const swept = await runOf(w.id, run.id);
    expect(swept.status).toBe('TIMED_OUT');
    expect(swept.completedAt).not.toBeNull();
    expectAttemptsFinal(swept);
    expect(swept.actionAttempts[0]).toMatchObject({ status: 'FAILED', error: CUT_ATTEMPT });
  });

  it('with the default 20 s wait, a 35 s webhook action is answered RUNNING, then ends with every attempt final', async () => {
    const before = process.env.LOUPE_MANUAL_RUN_WAIT_MS;
    delete process.env.LOUPE_MANUAL_RUN_WAIT_MS;
    resetConfig();
    try {
      // The receiver answers after 35 s; the action waits at most 30 s (its longest timeout), once.
      const w = await workflow([
        { type: 'WEBHOOK', order: 0, config: hook('/35s?delay=35000', { timeoutMs: 30_000 }) },
      ]);
      const r = await s.call('POST', `/workflows/${w.id}/run`);
      expect(r.status, r.text).toBe(201);
      expect(r.body.data.status).toBe('RUNNING');
      const done = await finished(w.id, r.body.data.id, 90_000);
      expect(done.status).toBe('FAILED');
      expectAttemptsFinal(done);
      expect(done.actionAttempts[0].status).toBe('FAILED');
    } finally {
      process.env.LOUPE_MANUAL_RUN_WAIT_MS = before;
      resetConfig();
    }
  }, 150_000);
});
