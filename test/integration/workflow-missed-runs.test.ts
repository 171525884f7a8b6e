import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { handler as sweepWorker } from '../../functions/workers/workflow-sweep';
import { db } from '../../shared/platform/db/store';
import { LocalScheduler } from '../../shared/platform/scheduler/local';
import { dueMinute, nextDue } from '../../shared/workflows/due-times';
import { sweepMissedRuns } from '../../shared/workflows/missed-runs';
import { runScheduled } from '../../shared/workflows/runner';
import { cadenceOf } from '../../shared/workflows/schedule-watch';
import { runStore, watchStore, workflowStore } from '../../shared/workflows/store';
import { createConnection, placeSqlite } from '../support/connections';
import { type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver';
import { startTestServer, type TestServer } from '../support/server';
import { waitFor } from '../support/wait';

/**
 * Scheduled runs that never start (shared/workflows/missed-runs.ts), on the real local runtime: its
 * store, its durable scheduler and queue, its runner worker, a real SQLite database for the steps and a
 * real HTTPS receiver for the deliveries, read back to prove what ran once.
 *
 * The late threshold is 10 minutes here, so that the runtime's own every-minute sweep never reaches the
 * due times these tests look at (they are in the future of the wall clock): each test calls the sweep
 * with a `now` past a due time plus the threshold, as the every-minute sweep would see it then.
 */
const LATE_MS = 600_000;
const MIN = 60_000;

async function scrape(s: TestServer): Promise<Map<string, number>> {
  const res = await fetch(`${s.url.replace(/\/v1$/, '')}/metrics`, {
    headers: { authorization: `Bearer ${s.adminKey}` },
  });
  expect(res.status).toBe(200);
  const series = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    const m = /^([^#\s]\S*) (\S+)$/.exec(line);
    if (m) series.set(m[1], Number(m[2]));
  }
  return series;
}
const moved = (before: Map<string, number>, after: Map<string, number>, name: string) =>
  (after.get(name) ?? 0) - (before.get(name) ?? 0);
const MISSED = (cause: string) => `loupe_scheduled_runs_missed_total{cause="${cause}"}`;

describe('scheduled runs that never start: counted, the schedule re-created, run once', () => {
  let s: TestServer;
  let rx: HttpsReceiver;
  let conn: string;
  const dir = mkdtempSync(join(tmpdir(), 'loupe-missed-'));
  const created: string[] = [];

  beforeAll(async () => {
    const file = join(dir, 'sales.sqlite');
    const d = new DatabaseSync(file);
    d.exec('CREATE TABLE sales (id INTEGER PRIMARY KEY); INSERT INTO sales VALUES (1), (2), (3);');
    d.close();
    rx = await startHttpsReceiver();
    s = await startTestServer({
      env: { LOUPE_SCHEDULE_LATE_MS: String(LATE_MS), LOUPE_OUTBOUND_TEST_HOSTS: rx.testHostEntry },
    });
    conn = await createConnection(s, { name: 'sales', type: 'SQLITE', database: placeSqlite(s, file) });
  });
  afterEach(async () => {
    // Deactivated: no watch is left for the next test's sweep.
    for (const id of created.splice(0))
      await s.call('PATCH', `/workflows/${id}`, { body: { isActive: false } });
  });
  afterAll(async () => {
    await s?.stop();
    await rx?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** PATCH with `isActive: true` (and `body`), acknowledging the publish warnings when there are any. */
  async function publish(id: string, body: Record<string, unknown>) {
    const first = await s.call('PATCH', `/workflows/${id}`, { body: { ...body, isActive: true } });
    if (first.status !== 422) {
      expect(first.status, first.text).toBe(200);
      return first.body.data;
    }
    const acknowledgedWarnings = first.body.error.details.warnings;
    const again = await s.call('PATCH', `/workflows/${id}`, {
      body: { ...body, isActive: true, acknowledgedWarnings },
    });
    expect(again.status, again.text).toBe(200);
    return again.body.data;
  }

  /** A published SCHEDULE workflow whose webhook receives `{scheduledFor, n}` at `/<path>`. */
  async function scheduled(path: string, triggerConfig: Record<string, unknown>) {
    const saved = await s.call('POST', '/workflows', {
      body: {
        name: `missed ${path}`,
        triggerType: 'SCHEDULE',
        triggerConfig,
        connectionId: conn,
        steps: [{ query: 'SELECT count(*) AS n FROM sales LIMIT 1', stopIfEmpty: true }],
        actions: [
          {
            type: 'WEBHOOK',
            order: 0,
            config: {
              version: 2,
              url: `${rx.url}/${path}`,
              method: 'POST',
              bodyMode: 'JSON',
              bodyTemplate: '{"scheduledFor": {{run.scheduledFor}}, "n": {{query_1.row_count}}}',
            },
          },
        ],
      },
    });
    expect(saved.status, saved.text).toBe(201);
    const id = saved.body.data.id as string;
    created.push(id);
    await publish(id, {});
    const watch = await watchStore.get(s.app.orgId, id);
    expect(watch, 'publishing arms the watch').toBeDefined();
    return { id, dueAt: watch!.dueAt };
  }
  /** A daily time twelve hours from now (never due while the test runs). */
  const farDaily = (timezone = 'UTC') => ({
    preset: 'DAILY',
    hour: (new Date().getUTCHours() + 12) % 24,
    minute: 7,
    timezone,
  });
  const runsOf = async (id: string) => (await s.call('GET', `/workflows/${id}/runs?pageSize=50`)).body;
  const finishedRuns = (id: string, n: number) =>
    waitFor(`${n} finished runs of ${id}`, async () => {
      const r = await runsOf(id);
      const done = r.data.filter((x: { status: string }) => x.status !== 'RUNNING');
      return done.length >= n && done;
    });
  const received = (path: string) =>
    rx.requests.filter((r) => r.url === `/${path}`).map((r) => JSON.parse(r.body));
  const localSchedule = (id: string) => new LocalScheduler().get(`wf-${id}`);

  it('a cron workflow whose local schedule entry was deleted: counted once, /metrics shows it, the schedule is back and the run happens once', async () => {
    const { id, dueAt } = await scheduled('lost', farDaily('America/New_York'));
    expect(await localSchedule(id)).toMatchObject({ nextFireAt: dueAt, timezone: 'America/New_York' });
    await new LocalScheduler().remove(`wf-${id}`); // the schedule is lost
    const before = await scrape(s);
    const at = dueAt + LATE_MS + 30_000;

    // Two sweeps at once (two overlapping invocations): the due time is counted and repaired once.
    const both = await Promise.all([sweepMissedRuns(at), sweepMissedRuns(at)]);
    expect(both.map((r) => r.missed).sort()).toEqual([0, 1]);
    const after = await scrape(s);
    expect(moved(before, after, MISSED('not_started'))).toBe(1);
    expect(moved(before, after, MISSED('abandoned'))).toBe(0);

    // The schedule is written again, for its next due time in its zone.
    expect(await localSchedule(id)).toMatchObject({ expression: expect.stringMatching(/^cron\(7 /) });
    // The missed due time runs once, with its own scheduledFor, and delivers once.
    const [run] = await finishedRuns(id, 1);
    expect(run).toMatchObject({ trigger: 'SCHEDULE', status: 'SUCCESS', scheduledFor: dueMinute(dueAt) });
    await waitFor('the delivery', async () => received('lost').length >= 1);
    // The scheduler's own invocation arriving late for the same due time runs nothing.
    expect(
      await runScheduled({ orgId: s.app.orgId, workflowId: id, scheduledTime: dueMinute(dueAt) }),
    ).toEqual({
      skipped: 'duplicate',
    });
    // Sweeping again (now, or any later time before the next due time) finds nothing more.
    expect((await sweepMissedRuns(at)).missed).toBe(0);
    expect((await sweepMissedRuns(at + 5 * MIN)).missed).toBe(0);
    expect((await runsOf(id)).meta.pagination.total).toBe(1);
    expect(received('lost')).toEqual([{ scheduledFor: dueMinute(dueAt), n: 1 }]);
    const watch = await watchStore.get(s.app.orgId, id);
    expect(watch).toMatchObject({ missed: 1, dueAt: nextDue(cadenceOf(watch!), dueAt) });
    expect(watch!.dueAt - dueAt).toBeGreaterThanOrEqual(23 * 60 * MIN); // tomorrow, in its zone
    const final = await scrape(s);
    expect(moved(before, final, MISSED('not_started'))).toBe(1);
    expect(moved(before, final, 'loupe_workflow_runs_total{trigger="SCHEDULE",outcome="SUCCESS"}')).toBe(1);
  });

  it('a rate workflow whose invocation merely arrives late: not missed, not run twice', async () => {
    const { id, dueAt } = await scheduled('late', { preset: 'EVERY_N_MINUTES', minutes: 5 });
    // Its grid starts on a whole minute at least 30 s after publishing, the same in the scheduler.
    expect(dueAt % MIN).toBe(0);
    expect(await localSchedule(id)).toMatchObject({ anchorAt: dueAt, nextFireAt: dueAt });
    await new LocalScheduler().remove(`wf-${id}`); // this test delivers the invocation itself
    const before = await scrape(s);
    // The invocation comes 11 minutes after its due time (a retried invocation): it runs, late.
    const late = await runScheduled(
      { orgId: s.app.orgId, workflowId: id, scheduledTime: new Date(dueAt).toISOString() },
      dueAt + LATE_MS + MIN,
    );
    expect(late).toMatchObject({ status: 'SUCCESS' });
    // The sweep after it: the due time ran, nothing is missed or made up.
    expect(await sweepMissedRuns(dueAt + LATE_MS + 2 * MIN)).toMatchObject({ missed: 0, caughtUp: 0 });
    const after = await scrape(s);
    expect(moved(before, after, 'loupe_scheduled_runs_late_total')).toBe(1);
    expect(moved(before, after, MISSED('not_started'))).toBe(0);
    expect((await watchStore.get(s.app.orgId, id))?.dueAt).toBe(dueAt + 5 * MIN);
    await new Promise((r) => setTimeout(r, 500)); // nothing queued: nothing more arrives
    expect((await runsOf(id)).meta.pagination.total).toBe(1);
    expect(received('late')).toEqual([{ scheduledFor: dueMinute(dueAt), n: 1 }]);
  });

  it('a rate workflow swept before its late invocations: made up once, and the invocation runs nothing', async () => {
    const { id, dueAt } = await scheduled('sweep-first', { preset: 'EVERY_N_MINUTES', minutes: 5 });
    await new LocalScheduler().remove(`wf-${id}`);
    // Three due times unrun for longer than the threshold (10 minutes; the rate is 5): counted, and
    // only the latest is made up.
    const at = dueAt + 10 * MIN + LATE_MS + 30_000;
    expect(await sweepMissedRuns(at)).toMatchObject({ missed: 3, caughtUp: 1 });
    const [run] = await finishedRuns(id, 1);
    expect(run).toMatchObject({ status: 'SUCCESS', scheduledFor: dueMinute(dueAt + 10 * MIN) });
    // The schedule is back on its grid: next at the grid's first point after the sweep, not at once.
    expect(await localSchedule(id)).toMatchObject({
      anchorAt: dueAt + 25 * MIN,
      nextFireAt: dueAt + 25 * MIN,
    });
    // The invocation of the made-up due time arrives now: nothing runs. That of an older due time
    // arrives too: it was not made up, so it runs (late, once).
    const deliver = (k: number) =>
      runScheduled({
        orgId: s.app.orgId,
        workflowId: id,
        scheduledTime: new Date(dueAt + k * MIN).toISOString(),
      });
    expect(await deliver(10)).toEqual({ skipped: 'duplicate' });
    expect(await deliver(0)).toMatchObject({ status: 'SUCCESS' });
    expect(await deliver(0)).toEqual({ skipped: 'duplicate' });
    expect((await runsOf(id)).meta.pagination.total).toBe(2);
    expect(
      received('sweep-first')
        .map((b) => b.scheduledFor)
        .sort(),
    ).toEqual([dueMinute(dueAt), dueMinute(dueAt + 10 * MIN)]);
    // Swept again: nothing more is missed or made up.
    expect(await sweepMissedRuns(at)).toMatchObject({ missed: 0, caughtUp: 0 });
  });

  it('a runner that stopped after claiming a due time: counted abandoned, taken over once, the run keeps its number', async () => {
    const a = await scheduled('crash-claimed', farDaily());
    const b = await scheduled('crash-bound', farDaily('Europe/Paris'));
    for (const w of [a, b]) await new LocalScheduler().remove(`wf-${w.id}`);
    const longAgo = new Date(Date.now() - LATE_MS - MIN).toISOString();
    const slot = (w: { id: string; dueAt: number }) => ({
      pk: `ORG#${s.app.orgId}#WF#${w.id}`,
      sk: `SLOT#${dueMinute(w.dueAt)}`,
      type: 'workflow-slot',
      runId: `crashed-${w.id}`,
      claimedAt: longAgo,
    });
    // a: claimed, then the runner died; b: its run was numbered too, then the runner died.
    await db.put(slot(a));
    const seq = await runStore.nextSequence(s.app.orgId, b.id);
    await db.put({ ...slot(b), sequence: seq, boundAt: longAgo });
    const before = await scrape(s);
    const at = Math.max(a.dueAt, b.dueAt) + LATE_MS + 30_000;
    expect(await sweepMissedRuns(at)).toMatchObject({ missed: 2, caughtUp: 2 });
    expect(moved(before, await scrape(s), MISSED('abandoned'))).toBe(2);
    const [ra] = await finishedRuns(a.id, 1);
    const [rb] = await finishedRuns(b.id, 1);
    expect(ra).toMatchObject({ status: 'SUCCESS', scheduledFor: dueMinute(a.dueAt) });
    expect(rb).toMatchObject({ status: 'SUCCESS', scheduledFor: dueMinute(b.dueAt) });
    expect((await runStore.get(s.app.orgId, b.id, seq))?.id).toBe(rb.id);
    // The claims are the catch-ups' now: a repeated catch-up or a late invocation runs nothing.
    for (const w of [a, b])
      expect(
        await runScheduled({ orgId: s.app.orgId, workflowId: w.id, scheduledTime: dueMinute(w.dueAt) }),
      ).toEqual({
        skipped: 'duplicate',
      });
    expect(await sweepMissedRuns(at)).toMatchObject({ missed: 0 });
    expect(received('crash-claimed')).toHaveLength(1);
    expect(received('crash-bound')).toHaveLength(1);
  });

  it('a workflow no longer active or scheduled has missed nothing; its leftover watch is dropped', async () => {
    const gone = await scheduled('gone', farDaily());
    // Deactivated behind the API's back (as if the request stopped before removing the watch).
    expect(await workflowStore.deactivate(s.app.orgId, gone.id, new Date().toISOString())).toBeDefined();
    const stopped = await scheduled('stopped', farDaily());
    const off = await s.call('PATCH', `/workflows/${stopped.id}`, { body: { isActive: false } });
    expect(off.status).toBe(200);
    expect(await watchStore.get(s.app.orgId, stopped.id)).toBeUndefined();
    const before = await scrape(s);
    expect(await sweepMissedRuns(Math.max(gone.dueAt, stopped.dueAt) + LATE_MS + MIN)).toMatchObject({
      missed: 0,
      caughtUp: 0,
    });
    expect(await watchStore.get(s.app.orgId, gone.id)).toBeUndefined();
    expect(moved(before, await scrape(s), MISSED('not_started'))).toBe(0);
    expect((await runsOf(gone.id)).meta.pagination.total).toBe(0);
  });

  it('publishing again keeps the watch of an unchanged schedule and re-arms a changed one; the sweep worker runs both sweeps', async () => {
    const w = await scheduled('rearm', { preset: 'EVERY_N_MINUTES', minutes: 5 });
    const armed = await watchStore.get(s.app.orgId, w.id);
    // Unchanged schedule, another draft revision published: same grid, same next due time.
    const current = (await s.call('GET', `/workflows/${w.id}`)).body.data;
    const renamed = await publish(w.id, {
      expectedDraftRevision: current.draftRevision,
      name: 'missed rearm 2',
    });
    expect(renamed).toMatchObject({ name: 'missed rearm 2', publishedVersion: 2 });
    expect(await watchStore.get(s.app.orgId, w.id)).toEqual(armed);
    expect((await localSchedule(w.id))?.anchorAt).toBe(armed!.anchorAt);
    // Another schedule: a new watch for it.
    await publish(w.id, {
      expectedDraftRevision: renamed.draftRevision,
      triggerConfig: { preset: 'WEEKLY', dayOfWeek: 3, hour: 4, timezone: 'Asia/Kolkata' },
    });
    const rearmed = await watchStore.get(s.app.orgId, w.id);
    expect(rearmed).toMatchObject({ expression: 'cron(0 4 ? * WED *)', timezone: 'Asia/Kolkata' });
    expect(new Date(rearmed!.dueAt).getUTCDay()).toBe(2); // Wednesday 04:00 in Kolkata is Tuesday 22:30 UTC
    // The scheduled worker: stale runs and missed runs, nothing to do for either right now.
    expect(await sweepWorker()).toMatchObject({ closed: 0, missed: 0, caughtUp: 0 });
  });
});
