import { beforeEach, describe, expect, it } from 'vitest';
import { DEDUPE_WINDOW_MS, LocalQueue, retryDelaySeconds } from '../../shared/platform/queue/local';
import type { WorkerDef } from '../../shared/platform/workers';
import { useTestStore } from '../support/store';

const store = useTestStore('queue-local');

const workers: WorkerDef[] = [
  { name: 'mailer', queue: { visibilityTimeoutSeconds: 30, maxReceiveCount: 3, batchSize: 10 } },
  { name: 'nightly', schedule: { expression: 'cron(0 3 * * ? *)' } },
];
const settings = { max: 10, visibilityTimeoutSeconds: 30, maxReceiveCount: 3 };

let clock = Date.parse('2026-03-01T12:00:00Z');
const now = () => clock;
let q: LocalQueue;
let n = 0;
/** Each test uses its own queue name so that tests do not see each other's messages. */
let name: string;

beforeEach(() => {
  q = new LocalQueue({ workers, now });
  name = `q${++n}`;
});

describe('local durable queue', () => {
  it('delivers a sent message once with its JSON body and first receive count', async () => {
    await q.enqueue(name, { hello: 'world', n: 1 });
    const [m, ...more] = await q.receive(name, settings);
    expect(more).toEqual([]);
    expect(JSON.parse(m.body)).toEqual({ hello: 'world', n: 1 });
    expect(m.receiveCount).toBe(1);
    expect(m.md5).toMatch(/^[0-9a-f]{32}$/);
    expect(await q.receive(name, settings)).toEqual([]); // invisible while in flight
    expect(await q.ack(name, m)).toBe(true);
    expect(await q.pending(name)).toEqual([]);
  });

  it('delivers in batches no larger than asked', async () => {
    for (let i = 0; i < 5; i++) await q.enqueue(name, { i });
    const first = await q.receive(name, { ...settings, max: 3 });
    const second = await q.receive(name, { ...settings, max: 3 });
    expect(first).toHaveLength(3);
    expect(second).toHaveLength(2);
    expect(new Set([...first, ...second].map((m) => JSON.parse(m.body).i))).toEqual(new Set([0, 1, 2, 3, 4]));
  });

  it('holds a delayed message until its delay has passed', async () => {
    await q.enqueue(name, { later: true }, { delaySeconds: 60 });
    expect(await q.receive(name, settings)).toEqual([]);
    clock += 59_000;
    expect(await q.receive(name, settings)).toEqual([]);
    clock += 1_000;
    expect(await q.receive(name, settings)).toHaveLength(1);
  });

  it('retries a failed message after a backoff with a growing receive count, then dead-letters it after maxReceiveCount', async () => {
    await q.enqueue(name, { flaky: true });
    const counts: number[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      const [m] = await q.receive(name, settings);
      counts.push(m.receiveCount);
      const outcome = await q.fail(name, m, { ...settings, error: `boom ${attempt}` });
      expect(outcome).toBe(attempt < 3 ? 'retry' : 'dead');
      if (attempt < 3) {
        // not visible before the backoff has passed
        clock += retryDelaySeconds(m.receiveCount, 30) * 1000 - 1;
        expect(await q.receive(name, settings)).toEqual([]);
        clock += 1;
      }
    }
    expect(counts).toEqual([1, 2, 3]);
    expect(await q.pending(name)).toEqual([]);
    const dead = await q.deadLetters(name);
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ queue: name, receiveCount: 3, lastError: 'boom 3' });
    expect(JSON.parse(dead[0].body)).toEqual({ flaky: true });
  });

  it('backs off 1 s, 2 s, 4 s … capped at the visibility timeout', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((c) => retryDelaySeconds(c, 30))).toEqual([1, 2, 4, 8, 16, 30, 30]);
  });

  it('redelivers a message whose visibility timeout expired, and dead-letters it when that exceeds maxReceiveCount', async () => {
    await q.enqueue(name, { crashy: true });
    for (let i = 1; i <= 3; i++) {
      const [m] = await q.receive(name, settings);
      expect(m.receiveCount).toBe(i);
      clock += 30_000; // the consumer "crashed": no ack, no fail
    }
    expect(await q.receive(name, settings)).toEqual([]);
    expect(await q.deadLetters(name)).toHaveLength(1);
    expect(await q.pending(name)).toEqual([]);
  });

  it('ignores an acknowledgement or failure carrying a stale receipt', async () => {
    await q.enqueue(name, { x: 1 });
    const [first] = await q.receive(name, settings);
    clock += 30_000;
    const [second] = await q.receive(name, settings);
    expect(second.id).toBe(first.id);
    expect(await q.ack(name, first)).toBe(false);
    expect(await q.pending(name)).toHaveLength(1);
    expect(await q.ack(name, second)).toBe(true);
  });

  it('gives a message to exactly one of many concurrent pollers', async () => {
    await q.enqueue(name, { only: 'once' });
    const pollers = Array.from({ length: 6 }, () => new LocalQueue({ workers, now }));
    const results = await Promise.all(pollers.map((p) => p.receive(name, settings)));
    expect(results.flat()).toHaveLength(1);
  });

  it('drops a repeated send with the same dedupeId within the window, and accepts it after', async () => {
    expect(await q.enqueue(name, { a: 1 }, { dedupeId: 'run-42' })).toBeTypeOf('string');
    expect(await q.enqueue(name, { a: 1 }, { dedupeId: 'run-42' })).toBeUndefined();
    expect(await q.pending(name)).toHaveLength(1);
    clock += DEDUPE_WINDOW_MS;
    expect(await q.enqueue(name, { a: 1 }, { dedupeId: 'run-42' })).toBeTypeOf('string');
    expect(await q.pending(name)).toHaveLength(2);
    const [m] = await q.receive(name, { ...settings, max: 1 });
    expect(m.dedupeId).toBe('run-42');
  });

  it('send() accepts only queue workers of the manifest', async () => {
    await expect(q.send('nope', {})).rejects.toThrow(/No queue worker named "nope"/);
    await expect(q.send('nightly', {})).rejects.toThrow(/No queue worker named "nightly"/);
    await q.send('mailer', { to: 'a@example.com' });
    const [m] = await q.receive('mailer', settings);
    expect(JSON.parse(m.body)).toEqual({ to: 'a@example.com' });
    await q.ack('mailer', m);
  });

  it('rejects sends SQS would reject: delay outside 0-900, non-JSON bodies, bodies over 256 KiB', async () => {
    await expect(q.enqueue(name, {}, { delaySeconds: 901 })).rejects.toThrow(/delaySeconds/);
    await expect(q.enqueue(name, {}, { delaySeconds: 1.5 })).rejects.toThrow(/delaySeconds/);
    await expect(q.enqueue(name, undefined)).rejects.toThrow(/JSON/);
    await expect(q.enqueue(name, { big: 'x'.repeat(256 * 1024) })).rejects.toThrow(/at most/);
    await expect(q.enqueue(name, {}, { dedupeId: 'has space' })).rejects.toThrow(/dedupeId/);
    expect(await q.pending(name)).toEqual([]);
  });

  it('keeps a pending message across a restart of the store', async () => {
    await q.enqueue(name, { survives: 'restart' }, { delaySeconds: 5 });
    await store.close();
    await store.open(); // a new dynalite on the same directory
    clock += 5_000;
    const [m] = await new LocalQueue({ workers, now }).receive(name, settings);
    expect(JSON.parse(m.body)).toEqual({ survives: 'restart' });
  });
});
