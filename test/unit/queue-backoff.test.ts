/**
 * The local runtime's pollers back off when there is nothing to do (issue 33: idle, they made 36 store
 * queries a second), and work is still picked up: a send wakes its queue's lane at once, a delayed
 * message or a retry wakes it when it becomes visible, a schedule when it is due. The lane's timing is
 * checked with fake timers (no wall clock); the wake-ups with a poll interval so long that only a
 * wake-up can deliver the message.
 */
import type { SQSEvent } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type LaneOutcome, MAX_IDLE_POLL_MS, PollLane, startWorkers } from '../../infra/local/workers';
import type { WorkerDef } from '../../shared/platform/workers';
import { useTestStore } from '../support/store';
import { waitFor } from '../support/wait';

useTestStore('queue-backoff');

describe('a poll lane (fake timers)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A lane whose runs answer `outcomes` in turn (then nothing), with the times they ran at. */
  function lane(outcomes: LaneOutcome[], interval = 250) {
    const runs: number[] = [];
    const l = new PollLane(
      async () => {
        runs.push(Date.now());
        return outcomes.shift() ?? { handled: 0 };
      },
      () => {},
      interval,
      Date.now,
    );
    return { l, runs };
  }

  it('idle, it backs off from the interval, doubling, to at most MAX_IDLE_POLL_MS', async () => {
    vi.useFakeTimers({ now: 0 });
    const { l, runs } = lane([]);
    await l.kick();
    await vi.advanceTimersByTimeAsync(120_000);
    const gaps = runs.slice(1).map((t, i) => t - runs[i]);
    expect(gaps.slice(0, 6)).toEqual([500, 1000, 2000, 4000, 8000, MAX_IDLE_POLL_MS]);
    expect(Math.max(...gaps)).toBe(MAX_IDLE_POLL_MS);
    // About one run per 10 s once idle: a dozen in two minutes, not 480.
    expect(runs.length).toBeLessThan(20);
    await l.close();
  });

  it('while it finds work it polls at the interval; a kick resets the backoff and runs at once', async () => {
    vi.useFakeTimers({ now: 0 });
    const { l, runs } = lane([{ handled: 3 }, { handled: 1 }, { handled: 0 }]);
    await l.kick();
    await vi.advanceTimersByTimeAsync(250 + 250 + 500 + 1000);
    expect(runs).toEqual([0, 250, 500, 1000, 2000]);
    await vi.advanceTimersByTimeAsync(100);
    await l.kick();
    expect(runs.at(-1)).toBe(2100);
    await vi.advanceTimersByTimeAsync(500);
    expect(runs.at(-1)).toBe(2600); // back to the shortest idle wait
    await l.close();
  });

  it('wakes when work its runs saw becomes due, sooner than its backoff', async () => {
    vi.useFakeTimers({ now: 0 });
    const runs: number[] = [];
    // Every run sees a message that becomes visible at 3 s (as the receive query would, until then).
    const l = new PollLane(
      async () => {
        runs.push(Date.now());
        return { handled: 0, nextAt: 3_000 };
      },
      () => {},
      250,
      Date.now,
    );
    await l.kick();
    await vi.advanceTimersByTimeAsync(3_000);
    // Backing off (500, 1000 ms), then at 3 s rather than at 3.5 s.
    expect(runs).toEqual([0, 500, 1_500, 3_000]);
    await l.close();
  });

  it('a kick during a run makes it run once more (a send between its receive and its end is not missed)', async () => {
    vi.useFakeTimers({ now: 0 });
    let release: () => void = () => {};
    let runs = 0;
    const l = new PollLane(
      async () => {
        runs++;
        if (runs === 1) await new Promise<void>((r) => (release = r));
        return { handled: 0 };
      },
      () => {},
      250,
      Date.now,
    );
    const first = l.kick();
    void l.kick();
    release();
    await first;
    expect(runs).toBe(2);
    await l.close();
  });

  it('closed, it runs no more', async () => {
    vi.useFakeTimers({ now: 0 });
    const { l, runs } = lane([]);
    await l.kick();
    await l.close();
    await vi.advanceTimersByTimeAsync(60_000);
    await l.kick();
    expect(runs).toEqual([0]);
  });
});

describe('the local runtime picks up work without polling for it', () => {
  let n = 0;
  const def = (): WorkerDef => ({
    name: `backoff${++n}`,
    queue: { visibilityTimeoutSeconds: 30, maxReceiveCount: 3, batchSize: 10 },
  });
  // So long that no timer poll happens during a test: only a wake-up can deliver.
  const HOUR = 3_600_000;

  it('a message sent in this process is handled at once (the send wakes its lane)', async () => {
    const d = def();
    const seen: unknown[] = [];
    const rt = await startWorkers({
      manifest: [d],
      load: async () => async (event: SQSEvent) => {
        for (const r of event.Records) seen.push(JSON.parse(r.body));
      },
      pollIntervalMs: HOUR,
      log: () => {},
    });
    try {
      await rt.queue.send(d.name, { n: 1 });
      await waitFor('the message', async () => seen.length === 1, 10_000);
      expect(seen).toEqual([{ n: 1 }]);
    } finally {
      await rt.stop();
    }
  });

  it('a delayed message and a failed one (retried after its backoff) are handled when they become visible', async () => {
    const d = def();
    const seen: { n: number; count: string }[] = [];
    const rt = await startWorkers({
      manifest: [d],
      load: async () => async (event: SQSEvent) => {
        const failures = [];
        for (const r of event.Records) {
          const { n: id } = JSON.parse(r.body);
          seen.push({ n: id, count: r.attributes.ApproximateReceiveCount });
          if (id === 2 && r.attributes.ApproximateReceiveCount === '1')
            failures.push({ itemIdentifier: r.messageId });
        }
        return { batchItemFailures: failures };
      },
      pollIntervalMs: HOUR,
      log: () => {},
    });
    try {
      await rt.queue.send(d.name, { n: 1 }, { delaySeconds: 1 });
      await rt.queue.send(d.name, { n: 2 });
      // n: 2 at once (the send), again after its 1 s retry backoff; n: 1 when its delay is over.
      await waitFor('three deliveries', async () => seen.length === 3, 20_000);
      expect(seen).toEqual(
        expect.arrayContaining([
          { n: 2, count: '1' },
          { n: 2, count: '2' },
          { n: 1, count: '1' },
        ]),
      );
      // The last delivery's message is deleted after its handler returns: wait for that, then none is left.
      await waitFor('the queue emptied', async () => (await rt.queue.pending(d.name)).length === 0, 20_000);
      expect(await rt.queue.pending(d.name)).toEqual([]);
    } finally {
      await rt.stop();
    }
  });

  it('a message left in the queue by a previous run is handled when the runtime starts (a restart)', async () => {
    const d = def();
    const first = await startWorkers({
      manifest: [d],
      load: async () => async () => {},
      pollIntervalMs: 0,
      log: () => {},
    });
    await first.queue.send(d.name, { n: 9 });
    await first.stop();
    const seen: unknown[] = [];
    const rt = await startWorkers({
      manifest: [d],
      load: async () => async (event: SQSEvent) => {
        for (const r of event.Records) seen.push(JSON.parse(r.body));
      },
      pollIntervalMs: HOUR,
      log: () => {},
    });
    try {
      await waitFor('the message', async () => seen.length === 1, 10_000);
      expect(seen).toEqual([{ n: 9 }]);
    } finally {
      await rt.stop();
    }
  });
});
