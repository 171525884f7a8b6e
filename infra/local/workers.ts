import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { withInvocationLogger } from '../../shared/platform/logger';
import { LocalQueue, localQueueSignals, type ReceivedMessage } from '../../shared/platform/queue/local';
import {
  LocalScheduler,
  localSchedulerSignals,
  renderInput,
  SCHEDULED_QUEUE,
  type ScheduledInvocation,
} from '../../shared/platform/scheduler/local';
import { workers as realManifest, type WorkerDef } from '../../shared/platform/workers';
import { lambdaContext } from './http-adapter';
import { type LocalService, startupTasks } from './startup';

export type WorkerHandler = (event: any, context: Context) => Promise<unknown>;
export type HandlerLoader = (name: string) => Promise<WorkerHandler>;

export interface WorkersOptions {
  /** The worker manifest (default: shared/platform/workers.ts). */
  manifest?: WorkerDef[];
  /** Loads a worker's handler (default: `handler` of functions/workers/<name>.ts). */
  load?: HandlerLoader;
  /** Milliseconds between polls; 0 runs no timer (the caller drives `runOnce`). Default 250. */
  pollIntervalMs?: number;
  now?: () => number;
  log?: (line: string) => void;
  /** How long `stop` waits for running invocations before giving their messages back (default 10 s). */
  stopWaitMs?: number;
}

export interface WorkersRuntime extends LocalService {
  readonly queue: LocalQueue;
  readonly scheduler: LocalScheduler;
  /** One full pass: fire due schedules, run due scheduled invocations, one receive cycle per queue. */
  runOnce(): Promise<void>;
}

/** Invocations of scheduled workers are tried this many times (Lambda's asynchronous invoke: 1 + 2 retries). */
export const SCHEDULED_MAX_ATTEMPTS = 3;
const MAX_STOP_WAIT_MS = 10_000;

export const defaultLoader: HandlerLoader = async (name) => {
  const mod = await import(`../../functions/workers/${name}.ts`);
  if (typeof mod.handler !== 'function')
    throw new Error(`functions/workers/${name}.ts does not export a handler function.`);
  return mod.handler as WorkerHandler;
};

/** What one run of a lane found: whether it handled anything, and the next time it knows work is due. */
export interface LaneOutcome {
  handled: number;
  /** Epoch ms when a waiting message becomes visible or a schedule is due, when the run saw one. */
  nextAt?: number;
}

/**
 * How long an idle lane sleeps at most (it doubles from the poll interval up to this) when nothing
 * tells it of new work: sends in this process and its instances wake lanes at once (localQueueSignals,
 * localSchedulerSignals), delayed messages, retries and schedules wake them when due; this bounds the
 * wait for work that arrives any other way (another process writing the store).
 */
export const MAX_IDLE_POLL_MS = 10_000;
/** The shortest wait before a lane runs for work its last run saw becoming due. */
const MIN_WAKE_MS = 10;

/**
 * A unit of polling that never overlaps itself, and starts nothing once closed. A kick during a run
 * makes it run once more after (a message sent while it was between its receive and its end is not
 * left waiting). With a poll interval, it schedules its own next run: at the interval while it finds
 * work, backing off (doubling up to MAX_IDLE_POLL_MS) while it finds none, and never later than the
 * next due time its last run saw.
 */
export class PollLane {
  private running: Promise<void> | undefined;
  private again = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private idleMs: number;
  constructor(
    private readonly run: () => Promise<LaneOutcome>,
    private readonly onError: (e: unknown) => void,
    private readonly interval = 0,
    private readonly now: () => number = Date.now,
  ) {
    this.idleMs = interval;
  }
  kick(): Promise<void> {
    if (this.closed) return this.running ?? Promise.resolve();
    this.idleMs = this.interval;
    if (this.running) {
      this.again = true;
      return this.running;
    }
    clearTimeout(this.timer);
    this.running = this.loop().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }
  private async loop(): Promise<void> {
    let outcome: LaneOutcome | undefined;
    do {
      this.again = false;
      outcome = await this.run().catch((e) => {
        this.onError(e);
        return undefined;
      });
    } while (this.again && !this.closed);
    this.schedule(outcome);
  }
  private schedule(outcome: LaneOutcome | undefined): void {
    if (this.closed || this.interval <= 0) return;
    if (outcome && outcome.handled > 0) this.idleMs = this.interval;
    else this.idleMs = Math.min(MAX_IDLE_POLL_MS, Math.max(this.interval, this.idleMs * 2));
    let wait = outcome && outcome.handled > 0 ? this.interval : this.idleMs;
    if (outcome?.nextAt !== undefined)
      wait = Math.min(wait, Math.max(MIN_WAKE_MS, outcome.nextAt - this.now()));
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.timedKick();
    }, wait);
    this.timer.unref();
  }
  /** A timer's run keeps the lane's backoff (a kick from a signal resets it). */
  private timedKick(): Promise<void> {
    if (this.closed || this.running) return this.running ?? Promise.resolve();
    this.running = this.loop().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }
  /** True while a run is under way. */
  get busy(): boolean {
    return this.running !== undefined;
  }
  async settle(): Promise<void> {
    await this.running;
  }
  /** Stops new runs and waits for the current one. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.running;
  }
}

/**
 * The local stand-in for SQS event source mappings and EventBridge Scheduler: polls each queue
 * worker's durable queue and invokes its handler with a real SQSEvent, honouring
 * `batchItemFailures` (failed records come back after a backoff and are dead-lettered after
 * maxReceiveCount receives); fires the manifest's fixed schedules and the schedules created through
 * the Scheduler port, invoking the worker's handler with the payload (retried up to 3 attempts).
 */
export async function startWorkers(opts: WorkersOptions = {}): Promise<WorkersRuntime> {
  const manifest = opts.manifest ?? realManifest;
  const load = opts.load ?? defaultLoader;
  const now = opts.now ?? Date.now;
  const log = opts.log ?? ((line: string) => console.log(line));
  const interval = opts.pollIntervalMs ?? 250;
  const queue = new LocalQueue({ workers: manifest, now });
  const scheduler = new LocalScheduler({ workers: manifest, now, queue });
  let stopped = false;

  const handlers = new Map<string, Promise<WorkerHandler>>();
  const handlerFor = (name: string) => {
    let h = handlers.get(name);
    if (!h) {
      h = load(name);
      handlers.set(name, h);
      h.catch(() => handlers.delete(name)); // a broken module is loaded again next time
    }
    return h;
  };
  const timeoutMs = (def: WorkerDef | undefined) =>
    (def?.timeoutSeconds ?? def?.queue?.visibilityTimeoutSeconds ?? 60) * 1000;

  async function invoke(def: WorkerDef | undefined, name: string, event: unknown): Promise<unknown> {
    const handler = await handlerFor(name);
    const limit = timeoutMs(def);
    const context: Context = lambdaContext(`loupe-${name}`, limit);
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        // Its own logger with its own Lambda context: its lines never carry an HTTP request's.
        withInvocationLogger(context, () => handler(event, context)),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`timed out after ${limit / 1000} s`)), limit);
          timer.unref();
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** One receive-and-invoke cycle of a queue worker; returns how many messages it handled. */
  /** Messages whose handler is still running, by id: a stop that cannot wait for them gives them back. */
  const held = new Map<string, { queue: string; message: ReceivedMessage }>();
  const hold = (name: string, messages: ReceivedMessage[]) => {
    for (const m of messages) held.set(m.id, { queue: name, message: m });
    return () => {
      for (const m of messages) held.delete(m.id);
    };
  };

  async function pollQueue(
    def: WorkerDef & { queue: NonNullable<WorkerDef['queue']> },
  ): Promise<LaneOutcome> {
    const settings = {
      visibilityTimeoutSeconds: def.queue.visibilityTimeoutSeconds,
      maxReceiveCount: def.queue.maxReceiveCount,
    };
    const { messages, nextVisibleAt } = await queue.receiveAndLook(def.name, {
      max: Math.min(def.queue.batchSize, 100),
      ...settings,
    });
    if (!messages.length) return { handled: 0, nextAt: nextVisibleAt };
    const unhold = hold(def.name, messages);
    try {
      await handleBatch(def, messages, settings);
    } finally {
      unhold();
    }
    return { handled: messages.length, nextAt: nextVisibleAt };
  }

  async function handleBatch(
    def: WorkerDef,
    messages: ReceivedMessage[],
    settings: { visibilityTimeoutSeconds: number; maxReceiveCount: number },
  ): Promise<void> {
    const event: SQSEvent = { Records: messages.map((m) => sqsRecord(def.name, m)) };
    let failed: Set<string>;
    let error: string | undefined;
    try {
      failed = failedIds(await invoke(def, def.name, event), messages);
      if (failed.size) error = 'reported in batchItemFailures';
    } catch (e) {
      failed = new Set(messages.map((m) => m.id));
      error = (e as Error)?.message ?? String(e);
      log(`worker ${def.name}: batch of ${messages.length} failed: ${error}`);
    }
    for (const m of messages) {
      if (!failed.has(m.id)) {
        await queue.ack(def.name, m);
        continue;
      }
      const outcome = await queue.fail(def.name, m, { ...settings, error });
      if (outcome === 'dead')
        log(`worker ${def.name}: message ${m.id} dead-lettered after ${m.receiveCount} receives`);
    }
  }

  const scheduledVisibility = Math.max(60, ...manifest.map((w) => timeoutMs(w) / 1000));

  async function runScheduled(): Promise<LaneOutcome> {
    const settings = {
      visibilityTimeoutSeconds: scheduledVisibility,
      maxReceiveCount: SCHEDULED_MAX_ATTEMPTS,
    };
    const { messages, nextVisibleAt } = await queue.receiveAndLook(SCHEDULED_QUEUE, { max: 10, ...settings });
    const unhold = hold(SCHEDULED_QUEUE, messages);
    await Promise.all(
      messages.map(async (m) => {
        let inv: ScheduledInvocation | undefined;
        try {
          inv = JSON.parse(m.body) as ScheduledInvocation;
          const def = manifest.find((w) => w.name === inv!.worker);
          if (!def) throw new Error(`no worker named "${inv.worker}" in the manifest`);
          await invoke(def, def.name, JSON.parse(renderInput(inv, m.id, m.receiveCount)));
          await queue.ack(SCHEDULED_QUEUE, m);
        } catch (e) {
          const error = (e as Error)?.message ?? String(e);
          const outcome = await queue.fail(SCHEDULED_QUEUE, m, { ...settings, error });
          log(
            `schedule ${inv?.schedule ?? '?'} (worker ${inv?.worker ?? '?'}) attempt ${m.receiveCount} failed: ${error}` +
              (outcome === 'dead' ? '; giving up' : '; will retry'),
          );
        }
      }),
    ).finally(unhold);
    return { handled: messages.length, nextAt: nextVisibleAt };
  }

  const onError = (what: string) => (e: unknown) => {
    if (!stopped) log(`local workers: ${what} poll failed: ${(e as Error)?.message ?? e}`);
  };
  /** Runs `cycle` while it gets full batches; the outcome sums what it handled, with the last look-ahead. */
  const drain = (cycle: () => Promise<LaneOutcome>, full: number) => async (): Promise<LaneOutcome> => {
    let handled = 0;
    let last: LaneOutcome = { handled: 0 };
    do {
      last = await cycle();
      handled += last.handled;
    } while (!stopped && last.handled >= full);
    return { handled, nextAt: last.nextAt };
  };

  // A queue worker gets `localPollers` lanes (default 1): like Lambda's concurrent invocations, one slow
  // batch then does not hold up the rest of its queue (each receive claims its messages).
  // A message sent while every lane of its queue is busy (each holding a slow batch) gets a new lane, up
  // to the queue's maxConcurrency, as the SQS event source scales out: it does not wait for a slow batch.
  const queueLanes = new Map<string, PollLane[]>();
  const laneLimit = new Map<string, number>();
  // Lanes added under pressure (`polled` false) run only when kicked: when messages are sent.
  const newLane = (d: WorkerDef & { queue: NonNullable<WorkerDef['queue']> }, polled = false) =>
    new PollLane(
      drain(() => pollQueue(d), Math.min(d.queue.batchSize, 100)),
      onError(d.name),
      polled ? interval : 0,
      now,
    );
  const queueDefs = new Map<string, WorkerDef & { queue: NonNullable<WorkerDef['queue']> }>();
  for (const def of manifest) {
    if (!def.queue) continue;
    const d = def as WorkerDef & { queue: NonNullable<WorkerDef['queue']> };
    const initial = Math.max(1, d.queue.localPollers ?? 1);
    queueDefs.set(def.name, d);
    laneLimit.set(def.name, Math.max(initial, d.queue.maxConcurrency ?? initial));
    queueLanes.set(
      def.name,
      Array.from({ length: initial }, () => newLane(d, true)),
    );
  }
  const scheduledLane = new PollLane(
    drain(runScheduled, 10),
    onError('scheduled invocations'),
    interval,
    now,
  );
  const schedulerLane = new PollLane(
    async () => {
      const { fired, nextDueAt } = await scheduler.fireDueAndLook();
      if (fired.length && interval > 0) void scheduledLane.kick();
      return { handled: fired.length, nextAt: nextDueAt };
    },
    onError('scheduler'),
    interval,
    now,
  );

  await scheduler.syncSystemSchedules();

  const active = manifest.length > 0;
  const allLanes = [schedulerLane, scheduledLane, ...[...queueLanes.values()].flat()];
  // The manifest's lanes poll on their own timers; lanes added under pressure run when messages are sent.
  const polledLanes = [...allLanes];
  const onSent = (name: string) => {
    if (stopped) return;
    if (name === SCHEDULED_QUEUE) {
      void scheduledLane.kick();
      return;
    }
    const lanes = queueLanes.get(name);
    const def = queueDefs.get(name);
    if (!lanes || !def) return;
    if (lanes.every((l) => l.busy) && lanes.length < (laneLimit.get(name) ?? 1)) {
      const lane = newLane(def);
      lanes.push(lane);
      allLanes.push(lane);
    }
    for (const lane of lanes) void lane.kick();
  };
  const onChanged = () => {
    if (!stopped) void schedulerLane.kick();
  };
  if (active && interval > 0) {
    localQueueSignals.on('sent', onSent);
    localSchedulerSignals.on('changed', onChanged);
    // The first run of every lane (a restart finds what was left, delayed or due); each then schedules its own.
    for (const lane of polledLanes) void lane.kick();
  }

  return {
    queue,
    scheduler,
    async runOnce() {
      if (!active) return;
      for (const lane of allLanes) {
        await lane.settle();
        await lane.kick();
      }
    },
    async stop() {
      stopped = true;
      localQueueSignals.off('sent', onSent);
      localSchedulerSignals.off('changed', onChanged);
      let giveUp: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(allLanes.map((l) => l.close())),
        new Promise<void>((ok) => {
          giveUp = setTimeout(ok, opts.stopWaitMs ?? MAX_STOP_WAIT_MS);
          giveUp.unref();
        }),
      ]);
      clearTimeout(giveUp);
      // Handlers still running hold their messages until the visibility timeout (minutes): give them back
      // so the next start delivers them at once (each worker is idempotent; a manual run's job is claimed
      // once, and a run cut here is closed by the sweep).
      if (held.size) {
        const cut = [...held.values()];
        held.clear();
        let released = 0;
        for (const { queue: name, message } of cut)
          if (await queue.release(name, message).catch(() => false)) released++;
        log(
          `local workers: stopped with ${cut.length} message(s) still being handled; ${released} given back`,
        );
      }
    },
  };
}

function sqsRecord(worker: string, m: ReceivedMessage): SQSRecord {
  return {
    messageId: m.id,
    receiptHandle: m.receipt,
    body: m.body,
    attributes: {
      ApproximateReceiveCount: String(m.receiveCount),
      SentTimestamp: String(m.sentAt),
      SenderId: 'local',
      ApproximateFirstReceiveTimestamp: String(m.firstReceivedAt),
    },
    messageAttributes: m.dedupeId
      ? {
          dedupeId: {
            dataType: 'String',
            stringValue: m.dedupeId,
            stringListValues: [],
            binaryListValues: [],
          },
        }
      : {},
    md5OfBody: m.md5,
    eventSource: 'aws:sqs',
    eventSourceARN: `arn:aws:sqs:local:000000000000:loupe-${worker}`,
    awsRegion: 'local',
  };
}

/**
 * Which messages failed, read as Lambda reads a ReportBatchItemFailures response: no response or no
 * failures is success; a failure naming no message of the batch fails the whole batch.
 */
export function failedIds(response: unknown, messages: ReceivedMessage[]): Set<string> {
  const all = new Set(messages.map((m) => m.id));
  if (response === undefined || response === null) return new Set();
  if (typeof response !== 'object') return all;
  const failures = (response as Partial<SQSBatchResponse>).batchItemFailures;
  if (failures === undefined || failures === null) return new Set();
  if (!Array.isArray(failures)) return all;
  const out = new Set<string>();
  for (const f of failures) {
    const id = (f as { itemIdentifier?: unknown })?.itemIdentifier;
    if (typeof id !== 'string' || !all.has(id)) return all;
    out.add(id);
  }
  return out;
}

startupTasks.push((env) => startWorkers({ log: env.log }));
