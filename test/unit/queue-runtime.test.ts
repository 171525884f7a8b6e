import type { SQSEvent } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import { failedIds, startWorkers, type WorkerHandler } from '../../infra/local/workers';
import { LocalQueue } from '../../shared/platform/queue/local';
import { queueWorker } from '../../shared/platform/queue/worker';
import type { WorkerDef } from '../../shared/platform/workers';
import { useTestStore } from '../support/store';

useTestStore('queue-runtime');

let n = 0;
const queueDef = (maxReceiveCount = 3, batchSize = 10): WorkerDef => ({
  name: `w${++n}`,
  queue: { visibilityTimeoutSeconds: 30, maxReceiveCount, batchSize },
});
const noLog = () => {};

describe('local workers runtime', () => {
  it('invokes a queue worker with a real SQS event and deletes the messages it handled', async () => {
    let clock = Date.parse('2026-04-01T00:00:00Z');
    const def = queueDef();
    const events: SQSEvent[] = [];
    const rt = await startWorkers({
      manifest: [def],
      load: async () => async (event: SQSEvent) => {
        events.push(event);
      },
      pollIntervalMs: 0,
      now: () => clock,
      log: noLog,
    });
    await rt.queue.send(def.name, { orderId: 7 }, { dedupeId: 'order-7' });
    await rt.queue.send(def.name, { orderId: 8 });
    await rt.runOnce();
    expect(events).toHaveLength(1);
    const records = events[0].Records;
    expect(records.map((r) => JSON.parse(r.body))).toEqual(
      expect.arrayContaining([{ orderId: 7 }, { orderId: 8 }]),
    );
    const r7 = records.find((r) => JSON.parse(r.body).orderId === 7)!;
    expect(r7).toMatchObject({
      eventSource: 'aws:sqs',
      eventSourceARN: `arn:aws:sqs:local:000000000000:loupe-${def.name}`,
      attributes: { ApproximateReceiveCount: '1', SentTimestamp: String(clock), SenderId: 'local' },
      messageAttributes: { dedupeId: { stringValue: 'order-7', dataType: 'String' } },
    });
    expect(r7.messageId).toMatch(/^[0-9a-f-]{36}$/);
    expect(r7.receiptHandle).toBeTruthy();
    expect(await rt.queue.pending(def.name)).toEqual([]);
    clock += 3600_000;
    await rt.runOnce();
    expect(events).toHaveLength(1);
    await rt.stop();
  });

  it('retries only the records reported in batchItemFailures, after the backoff, with a higher receive count', async () => {
    let clock = Date.parse('2026-04-01T00:00:00Z');
    const def = queueDef();
    const seen: Array<{ id: number; count: string }> = [];
    const handler: WorkerHandler = async (event: SQSEvent) => {
      const failures = [];
      for (const r of event.Records) {
        const { id } = JSON.parse(r.body);
        seen.push({ id, count: r.attributes.ApproximateReceiveCount });
        if (id === 2 && r.attributes.ApproximateReceiveCount === '1')
          failures.push({ itemIdentifier: r.messageId });
      }
      return { batchItemFailures: failures };
    };
    const rt = await startWorkers({
      manifest: [def],
      load: async () => handler,
      pollIntervalMs: 0,
      now: () => clock,
      log: noLog,
    });
    for (const id of [1, 2, 3]) await rt.queue.send(def.name, { id });
    await rt.runOnce();
    expect(seen.map((s) => s.id).sort()).toEqual([1, 2, 3]);
    await rt.runOnce(); // backoff not passed yet
    expect(seen).toHaveLength(3);
    clock += 1000;
    await rt.runOnce();
    expect(seen.slice(3)).toEqual([{ id: 2, count: '2' }]);
    expect(await rt.queue.pending(def.name)).toEqual([]);
    await rt.stop();
  });

  it('fails the whole batch when the handler throws, and dead-letters after maxReceiveCount', async () => {
    let clock = Date.parse('2026-04-01T00:00:00Z');
    const def = queueDef(2);
    let calls = 0;
    const logs: string[] = [];
    const rt = await startWorkers({
      manifest: [def],
      load: async () => async () => {
        calls++;
        throw new Error('database unavailable');
      },
      pollIntervalMs: 0,
      now: () => clock,
      log: (l) => logs.push(l),
    });
    await rt.queue.send(def.name, { doomed: true });
    for (let i = 0; i < 4; i++) {
      await rt.runOnce();
      clock += 60_000;
    }
    expect(calls).toBe(2);
    expect(await rt.queue.pending(def.name)).toEqual([]);
    const dead = await rt.queue.deadLetters(def.name);
    expect(dead).toHaveLength(1);
    expect(dead[0].lastError).toBe('database unavailable');
    expect(logs.some((l) => l.includes('dead-lettered after 2 receives'))).toBe(true);
    await rt.stop();
  });

  it('treats a failure naming a message that is not in the batch as a whole-batch failure', () => {
    const msgs = [{ id: 'a' }, { id: 'b' }] as Parameters<typeof failedIds>[1];
    expect(failedIds(undefined, msgs)).toEqual(new Set());
    expect(failedIds({ batchItemFailures: [] }, msgs)).toEqual(new Set());
    expect(failedIds({ batchItemFailures: [{ itemIdentifier: 'b' }] }, msgs)).toEqual(new Set(['b']));
    expect(failedIds({ batchItemFailures: [{ itemIdentifier: 'zzz' }] }, msgs)).toEqual(new Set(['a', 'b']));
    expect(failedIds({ batchItemFailures: [{ itemIdentifier: '' }] }, msgs)).toEqual(new Set(['a', 'b']));
    expect(failedIds('not an object', msgs)).toEqual(new Set(['a', 'b']));
  });

  it('runs a queueWorker handler: a valid body is processed, an invalid one is retried until dead-lettered', async () => {
    let clock = Date.parse('2026-04-01T00:00:00Z');
    const def = queueDef(2);
    const processed: number[] = [];
    const handler = queueWorker(
      async (body: { amount: number }, meta) => {
        expect(meta.receiveCount).toBeGreaterThanOrEqual(1);
        processed.push(body.amount);
      },
      { schema: z.object({ amount: z.number() }) },
    );
    const rt = await startWorkers({
      manifest: [def],
      load: async () => handler,
      pollIntervalMs: 0,
      now: () => clock,
      log: noLog,
    });
    await rt.queue.send(def.name, { amount: 5 });
    await rt.queue.send(def.name, { amount: 'five' });
    for (let i = 0; i < 3; i++) {
      await rt.runOnce();
      clock += 60_000;
    }
    expect(processed).toEqual([5]);
    const dead = await rt.queue.deadLetters(def.name);
    expect(dead.map((d) => JSON.parse(d.body))).toEqual([{ amount: 'five' }]);
    await rt.stop();
  });

  it('retries a message when the worker module cannot be loaded', async () => {
    let clock = Date.parse('2026-04-01T00:00:00Z');
    const def = queueDef();
    let attempts = 0;
    const rt = await startWorkers({
      manifest: [def],
      load: async () => {
        attempts++;
        if (attempts === 1) throw new Error('syntax error in module');
        return async () => undefined;
      },
      pollIntervalMs: 0,
      now: () => clock,
      log: noLog,
    });
    await rt.queue.send(def.name, { x: 1 });
    await rt.runOnce();
    expect((await rt.queue.pending(def.name))[0].receiveCount).toBe(1);
    clock += 1000;
    await rt.runOnce();
    expect(await rt.queue.pending(def.name)).toEqual([]);
    await rt.stop();
  });

  it('invokes a fixed scheduled worker of the manifest with its payload at its rate', async () => {
    let clock = Date.parse('2026-04-01T00:00:00Z');
    const name = `sweep${++n}`;
    const events: unknown[] = [];
    const rt = await startWorkers({
      manifest: [{ name, schedule: { expression: 'rate(10 minutes)', payload: { sweep: 'approvals' } } }],
      load: async () => async (event: unknown) => {
        events.push(event);
      },
      pollIntervalMs: 0,
      now: () => clock,
      log: noLog,
    });
    await rt.runOnce();
    expect(events).toEqual([{ sweep: 'approvals' }]);
    clock += 9 * 60_000;
    await rt.runOnce();
    expect(events).toHaveLength(1);
    clock += 60_000;
    await rt.runOnce();
    expect(events).toEqual([{ sweep: 'approvals' }, { sweep: 'approvals' }]);
    await rt.stop();
    await rt.scheduler.remove(`system.${name}`);
  });

  it('invokes the worker of a schedule created through the Scheduler port, filling in the scheduled time', async () => {
    let clock = Date.parse('2026-04-01T08:59:00Z');
    const name = `runner${++n}`;
    const events: unknown[] = [];
    const rt = await startWorkers({
      manifest: [{ name }],
      load: async () => async (event: unknown) => {
        events.push(event);
      },
      pollIntervalMs: 0,
      now: () => clock,
      log: noLog,
    });
    await rt.scheduler.upsert({
      name: `wf-${name}`,
      expression: 'cron(0 9 * * ? *)',
      worker: name,
      payload: { workflowId: 'w1', scheduledFor: '<aws.scheduler.scheduled-time>' },
    });
    await rt.runOnce();
    expect(events).toEqual([]);
    clock += 60_000;
    await rt.runOnce();
    expect(events).toEqual([{ workflowId: 'w1', scheduledFor: '2026-04-01T09:00:00Z' }]);
    await rt.scheduler.remove(`wf-${name}`);
    await rt.stop();
  });

  it('tries a failing scheduled invocation three times in all', async () => {
    let clock = Date.parse('2026-04-01T00:00:00Z');
    const name = `flaky${++n}`;
    const attempts: unknown[] = [];
    const logs: string[] = [];
    const rt = await startWorkers({
      manifest: [{ name }],
      load: async () => async (event: unknown) => {
        attempts.push(event);
        throw new Error('nope');
      },
      pollIntervalMs: 0,
      now: () => clock,
      log: (l) => logs.push(l),
    });
    await rt.scheduler.upsert({
      name: `once-${name}`,
      expression: 'at(2026-04-01T00:00:00)',
      worker: name,
      payload: { attempt: '<aws.scheduler.attempt-number>' },
    });
    for (let i = 0; i < 6; i++) {
      await rt.runOnce();
      clock += 60_000;
    }
    expect(attempts).toEqual([{ attempt: '1' }, { attempt: '2' }, { attempt: '3' }]);
    expect(logs.at(-1)).toMatch(/attempt 3 failed: nope; giving up/);
    await rt.stop();
  });

  it('starts and stops with an empty manifest', async () => {
    const rt = await startWorkers({ manifest: [], log: noLog });
    await rt.runOnce();
    await rt.stop();
  });

  it('polls on its own timer, wakes on a send, waits for a running handler when stopped, then starts nothing', async () => {
    const def = queueDef();
    const bodies: unknown[] = [];
    let release!: () => void;
    const gate = new Promise<void>((ok) => {
      release = ok;
    });
    let finished = false;
    const rt = await startWorkers({
      manifest: [def],
      load: async () => async (event: SQSEvent) => {
        bodies.push(...event.Records.map((r) => JSON.parse(r.body)));
        if (bodies.length === 2) {
          await gate;
          finished = true;
        }
      },
      pollIntervalMs: 50,
      log: noLog,
    });
    await new LocalQueue({ workers: [def] }).send(def.name, { first: true });
    await vi.waitFor(() => expect(bodies).toEqual([{ first: true }]), { timeout: 10_000, interval: 20 });
    await rt.queue.send(def.name, { second: true });
    await vi.waitFor(() => expect(bodies).toHaveLength(2), { timeout: 10_000, interval: 20 });
    const stopping = rt.stop();
    release();
    await stopping;
    expect(finished).toBe(true);
    expect(await rt.queue.pending(def.name)).toEqual([]);
    // once stopped it starts nothing: the message waits in the durable queue for the next start
    await rt.queue.send(def.name, { third: true });
    await rt.runOnce();
    expect(bodies).toHaveLength(2);
    expect(await rt.queue.pending(def.name)).toHaveLength(1);
  });

  it('a stop that cannot wait for a handler gives its message back, delivered at once on the next start', async () => {
    const base = queueDef();
    const def = { ...base, queue: { ...base.queue!, visibilityTimeoutSeconds: 600 } };
    const seen: string[] = [];
    const lines: string[] = [];
    const rt = await startWorkers({
      manifest: [def],
      load: async () => async (event: SQSEvent) => {
        seen.push(
          ...event.Records.map((r) => `${JSON.parse(r.body).n}#${r.attributes.ApproximateReceiveCount}`),
        );
        await new Promise(() => {}); // never ends (a handler cut by the stop)
      },
      pollIntervalMs: 50,
      stopWaitMs: 100,
      log: (l) => lines.push(l),
    });
    await rt.queue.send(def.name, { n: 1 });
    await vi.waitFor(() => expect(seen).toEqual(['1#1']), { timeout: 10_000, interval: 20 });
    await rt.stop();
    expect(lines.join('\n')).toContain('1 given back');
    // Visible again now, not after its 600 s visibility timeout.
    const [held] = await rt.queue.pending(def.name);
    expect(held.visibleAt).toBeLessThanOrEqual(Date.now());
    const next = await startWorkers({
      manifest: [def],
      load: async () => async (event: SQSEvent) => {
        seen.push(
          ...event.Records.map((r) => `${JSON.parse(r.body).n}#${r.attributes.ApproximateReceiveCount}`),
        );
      },
      pollIntervalMs: 0,
      log: noLog,
    });
    await next.runOnce();
    expect(seen).toEqual(['1#1', '1#2']);
    expect(await next.queue.pending(def.name)).toEqual([]);
    await next.stop();
  });
});
