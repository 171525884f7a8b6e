import { beforeEach, describe, expect, it } from 'vitest';
import { LocalQueue } from '../../shared/platform/queue/local';
import {
  LocalScheduler,
  renderInput,
  SCHEDULED_QUEUE,
  type ScheduledInvocation,
} from '../../shared/platform/scheduler/local';
import type { WorkerDef } from '../../shared/platform/workers';
import { useTestStore } from '../support/store';

const store = useTestStore('scheduler-local');

const MIN = 60_000;
let clock = Date.parse('2026-03-02T08:00:00Z');
const now = () => clock;
const manifest: WorkerDef[] = [
  { name: 'runner' },
  { name: 'health', schedule: { expression: 'rate(5 minutes)', payload: { kind: 'health' } } },
];
const queueSettings = { max: 100, visibilityTimeoutSeconds: 60, maxReceiveCount: 3 };

let queue: LocalQueue;
let sched: LocalScheduler;

/** Takes (and acknowledges) every queued invocation. */
async function takeInvocations(): Promise<ScheduledInvocation[]> {
  const msgs = await queue.receive(SCHEDULED_QUEUE, queueSettings);
  for (const m of msgs) await queue.ack(SCHEDULED_QUEUE, m);
  return msgs.map((m) => JSON.parse(m.body));
}

beforeEach(async () => {
  queue = new LocalQueue({ workers: manifest, now });
  sched = new LocalScheduler({ workers: manifest, now, queue });
  for (const s of await sched.list()) await sched.remove(s.name);
  await takeInvocations();
});

describe('local scheduler', () => {
  it('fires a cron schedule when due, with the payload and the scheduled time', async () => {
    await sched.upsert({
      name: 'wf-daily',
      expression: 'cron(0 9 * * ? *)',
      worker: 'runner',
      payload: { workflowId: 'w1', at: '<aws.scheduler.scheduled-time>' },
    });
    expect((await sched.get('wf-daily'))?.nextFireAt).toBe(Date.parse('2026-03-02T09:00:00Z'));
    clock = Date.parse('2026-03-02T08:59:59Z');
    expect(await sched.fireDue()).toEqual([]);
    clock = Date.parse('2026-03-02T09:00:00Z');
    const [fired, ...more] = await sched.fireDue();
    expect(more).toEqual([]);
    expect(fired).toMatchObject({
      schedule: 'wf-daily',
      worker: 'runner',
      scheduledTime: '2026-03-02T09:00:00Z',
    });
    expect(JSON.parse(renderInput(fired, 'exec-1', 1))).toEqual({
      workflowId: 'w1',
      at: '2026-03-02T09:00:00Z',
    });
    expect(await takeInvocations()).toEqual([fired]);
    expect((await sched.get('wf-daily'))?.nextFireAt).toBe(Date.parse('2026-03-03T09:00:00Z'));
    expect(await sched.fireDue()).toEqual([]);
  });

  it('evaluates cron in the schedule time zone', async () => {
    clock = Date.parse('2026-07-01T00:00:00Z');
    await sched.upsert({
      name: 'wf-paris',
      expression: 'cron(0 9 * * ? *)',
      timezone: 'Europe/Paris',
      worker: 'runner',
      payload: {},
    });
    expect((await sched.get('wf-paris'))?.nextFireAt).toBe(Date.parse('2026-07-01T07:00:00Z'));
  });

  it('fires once, not once per missed time, for a schedule that came due while the process was down', async () => {
    clock = Date.parse('2026-03-02T10:00:00Z');
    await sched.upsert({
      name: 'wf-every5',
      expression: 'rate(5 minutes)',
      worker: 'runner',
      payload: { n: 1 },
    });
    expect(await sched.fireDue()).toHaveLength(1); // a rate schedule starts at once
    await takeInvocations();

    await store.close();
    clock += 3 * 60 * MIN + 2 * MIN; // down for 3 h 2 min: 36 runs missed
    await store.open();
    const restarted = new LocalScheduler({
      workers: manifest,
      now,
      queue: new LocalQueue({ workers: manifest, now }),
    });
    const fired = await restarted.fireDue();
    expect(fired).toHaveLength(1);
    expect(fired[0].scheduledTime).toBe('2026-03-02T13:00:00Z'); // stands for the latest missed time
    expect(await restarted.fireDue()).toEqual([]);
    expect(await takeInvocations()).toHaveLength(1);
    // the rate grid stays anchored at creation: next is 13:05, the next multiple of 5 minutes
    expect((await restarted.get('wf-every5'))?.nextFireAt).toBe(Date.parse('2026-03-02T13:05:00Z'));
  });

  it('fires a daily cron missed on three days once, for the latest missed day', async () => {
    clock = Date.parse('2026-03-02T08:00:00Z');
    await sched.upsert({ name: 'wf-report', expression: 'cron(0 9 * * ? *)', worker: 'runner', payload: {} });
    clock = Date.parse('2026-03-05T10:00:00Z');
    const fired = await sched.fireDue();
    expect(fired.map((f) => f.scheduledTime)).toEqual(['2026-03-05T09:00:00Z']);
    expect((await sched.get('wf-report'))?.nextFireAt).toBe(Date.parse('2026-03-06T09:00:00Z'));
  });

  it('fires a due schedule once even when several timers look at the same moment', async () => {
    clock = Date.parse('2026-03-02T11:00:00Z');
    await sched.upsert({ name: 'wf-race', expression: 'rate(1 hour)', worker: 'runner', payload: {} });
    const timers = Array.from({ length: 5 }, () => new LocalScheduler({ workers: manifest, now, queue }));
    const fired = (await Promise.all(timers.map((t) => t.fireDue()))).flat();
    expect(fired).toHaveLength(1);
    expect(await takeInvocations()).toHaveLength(1);
  });

  it('fires an at() schedule once and then removes it', async () => {
    clock = Date.parse('2026-03-02T12:00:00Z');
    await sched.upsert({
      name: 'once',
      expression: 'at(2026-03-02T13:30:00)',
      timezone: 'Europe/London',
      worker: 'runner',
      payload: { one: true },
    });
    clock = Date.parse('2026-03-02T13:30:00Z');
    expect(await sched.fireDue()).toHaveLength(1);
    expect(await sched.get('once')).toBeUndefined();
    clock += 24 * 60 * MIN;
    expect(await sched.fireDue()).toEqual([]);
  });

  it('keeps the next due time when an unchanged schedule is saved again, and recomputes it when the expression changes', async () => {
    clock = Date.parse('2026-03-02T12:00:00Z');
    const spec = { name: 'wf-keep', expression: 'cron(0 18 * * ? *)', worker: 'runner', payload: { v: 1 } };
    await sched.upsert(spec);
    const before = await sched.get('wf-keep');
    clock += 60 * MIN;
    await sched.upsert({ ...spec, payload: { v: 2 } });
    const after = await sched.get('wf-keep');
    expect(after?.nextFireAt).toBe(before?.nextFireAt);
    expect(JSON.parse(after!.input)).toEqual({ v: 2 });
    await sched.upsert({ ...spec, expression: 'cron(0 14 * * ? *)' });
    expect((await sched.get('wf-keep'))?.nextFireAt).toBe(Date.parse('2026-03-02T14:00:00Z'));
  });

  it('starts a rate given a start there, keeps its grid for a start on it, and moves it for one off it', async () => {
    clock = Date.parse('2026-03-02T12:00:10Z');
    const spec = { name: 'wf-grid', expression: 'rate(5 minutes)', worker: 'runner', payload: {} };
    await sched.upsert({ ...spec, startAt: new Date('2026-03-02T12:01:00Z') });
    expect(await sched.get('wf-grid')).toMatchObject({
      anchorAt: Date.parse('2026-03-02T12:01:00Z'),
      nextFireAt: Date.parse('2026-03-02T12:01:00Z'),
    });
    expect(await sched.fireDue()).toEqual([]); // not at once
    clock = Date.parse('2026-03-02T12:01:00Z');
    expect((await sched.fireDue()).map((f) => f.scheduledTime)).toEqual(['2026-03-02T12:01:00Z']);
    // Saved again with the grid's next point: nothing moves (a pending due time is not skipped).
    clock = Date.parse('2026-03-02T12:06:30Z');
    await sched.upsert({ ...spec, startAt: new Date('2026-03-02T12:11:00Z') });
    expect((await sched.get('wf-grid'))?.nextFireAt).toBe(Date.parse('2026-03-02T12:06:00Z'));
    expect((await sched.fireDue()).map((f) => f.scheduledTime)).toEqual(['2026-03-02T12:06:00Z']);
    // A start off the grid starts a new one there.
    await sched.upsert({ ...spec, startAt: new Date('2026-03-02T12:08:00Z') });
    expect(await sched.get('wf-grid')).toMatchObject({
      anchorAt: Date.parse('2026-03-02T12:08:00Z'),
      nextFireAt: Date.parse('2026-03-02T12:08:00Z'),
    });
    // Re-created after it was lost: at the given start, not at once.
    await sched.remove('wf-grid');
    await sched.upsert({ ...spec, startAt: new Date('2026-03-02T12:13:00Z') });
    expect((await sched.get('wf-grid'))?.nextFireAt).toBe(Date.parse('2026-03-02T12:13:00Z'));
    expect(await sched.fireDue()).toEqual([]);
    await takeInvocations();
  });

  it('does not fire a removed schedule', async () => {
    clock = Date.parse('2026-03-02T12:00:00Z');
    await sched.upsert({ name: 'wf-gone', expression: 'rate(1 minute)', worker: 'runner', payload: {} });
    await sched.remove('wf-gone');
    await sched.remove('wf-gone'); // removing twice is fine
    expect(await sched.fireDue()).toEqual([]);
  });

  it('keeps a schedule across a restart of the store and fires it when due', async () => {
    clock = Date.parse('2026-03-02T12:00:00Z');
    await sched.upsert({
      name: 'wf-durable',
      expression: 'cron(30 12 * * ? *)',
      worker: 'runner',
      payload: { d: 1 },
    });
    await store.close();
    await store.open();
    clock = Date.parse('2026-03-02T12:30:00Z');
    const fresh = new LocalScheduler({ workers: manifest, now, queue });
    const [fired] = await fresh.fireDue();
    expect(fired).toMatchObject({ schedule: 'wf-durable', scheduledTime: '2026-03-02T12:30:00Z' });
  });

  it('keeps one schedule per fixed schedule of the manifest and drops those no longer in it', async () => {
    clock = Date.parse('2026-03-02T12:00:00Z');
    await sched.syncSystemSchedules();
    expect((await sched.list('system.')).map((s) => s.name)).toEqual(['system.health']);
    const [fired] = await sched.fireDue();
    expect(fired).toMatchObject({ worker: 'health' });
    expect(JSON.parse(fired.input)).toEqual({ kind: 'health' });
    // a restart within the period does not fire again
    clock += 2 * MIN;
    await new LocalScheduler({ workers: manifest, now, queue }).syncSystemSchedules();
    expect(await sched.fireDue()).toEqual([]);
    // the worker lost its schedule
    await new LocalScheduler({
      workers: [{ name: 'runner' }, { name: 'health' }],
      now,
      queue,
    }).syncSystemSchedules();
    expect(await sched.list('system.')).toEqual([]);
  });

  it('rejects invalid schedules with a validation error', async () => {
    const base = { name: 'ok', expression: 'rate(5 minutes)', worker: 'runner', payload: {} };
    await expect(sched.upsert({ ...base, name: 'bad name!' })).rejects.toMatchObject({ status: 400 });
    await expect(sched.upsert({ ...base, expression: 'rate(5 minute)' })).rejects.toMatchObject({
      status: 400,
    });
    await expect(sched.upsert({ ...base, timezone: 'Mars/Olympus' })).rejects.toMatchObject({ status: 400 });
    await expect(sched.upsert({ ...base, worker: 'ghost' })).rejects.toThrow(/No worker named "ghost"/);
    expect(await sched.list()).toEqual([]);
  });
});
