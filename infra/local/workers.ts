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

/** A unit of polling that never overlaps itself, and starts nothing once closed. */
class Lane {
  private running: Promise<void> | undefined;
  private closed = false;
  constructor(
    private readonly run: () => Promise<void>,
    private readonly onError: (e: unknown) => void,
  ) {}
  kick(): Promise<void> {
    if (this.closed) return this.running ?? Promise.resolve();
    this.running ??= this.run()
      .catch(this.onError)
      .finally(() => {
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

  async function pollQueue(def: WorkerDef & { queue: NonNullable<WorkerDef['queue']> }): Promise<number> {
    const settings = {
      visibilityTimeoutSeconds: def.queue.visibilityTimeoutSeconds,
      maxReceiveCount: def.queue.maxReceiveCount,
    };
    const messages = await queue.receive(def.name, { max: Math.min(def.queue.batchSize, 100), ...settings });
    if (!messages.length) return 0;
    const unhold = hold(def.name, messages);
    try {
      await handleBatch(def, messages, settings);
    } finally {
      unhold();
    }
    return messages.length;
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

  async function runScheduled(): Promise<number> {
    const settings = {
      visibilityTimeoutSeconds: scheduledVisibility,
      maxReceiveCount: SCHEDULED_MAX_ATTEMPTS,
    };
    const messages = await queue.receive(SCHEDULED_QUEUE, { max: 10, ...settings });
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
    return messages.length;
  }

  const onError = (what: string) => (e: unknown) => {
    if (!stopped) log(`local workers: ${what} poll failed: ${(e as Error)?.message ?? e}`);
  };
  const drain = (cycle: () => Promise<number>, full: number) => async () => {
    while (!stopped && (await cycle()) >= full) {}
  };

  // A queue worker gets `localPollers` lanes (default 1): like Lambda's concurrent invocations, one slow
  // batch then does not hold up the rest of its queue (each receive claims its messages).
  // A message sent while every lane of its queue is busy (each holding a slow batch) gets a new lane, up
  // to the queue's maxConcurrency, as the SQS event source scales out: it does not wait for a slow batch.
  const queueLanes = new Map<string, Lane[]>();
  const laneLimit = new Map<string, number>();
  const newLane = (d: WorkerDef & { queue: NonNullable<WorkerDef['queue']> }) =>
    new Lane(
      drain(() => pollQueue(d), Math.min(d.queue.batchSize, 100)),
      onError(d.name),
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
      Array.from({ length: initial }, () => newLane(d)),
    );
  }
  const scheduledLane = new Lane(drain(runScheduled, 10), onError('scheduled invocations'));
  const schedulerLane = new Lane(async () => {
    const fired = await scheduler.fireDue();
    if (fired.length && interval > 0) void scheduledLane.kick();
  }, onError('scheduler'));

  await scheduler.syncSystemSchedules();

  const active = manifest.length > 0;
  const allLanes = [schedulerLane, scheduledLane, ...[...queueLanes.values()].flat()];
  // The timer polls the manifest's lanes only: lanes added under pressure run when messages are sent.
  const polledLanes = [...allLanes];
  let timer: NodeJS.Timeout | undefined;
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
    const tick = () => {
      if (stopped) return;
      for (const lane of polledLanes) void lane.kick();
      timer = setTimeout(tick, interval);
      timer.unref();
    };
    localQueueSignals.on('sent', onSent);
    localSchedulerSignals.on('changed', onChanged);
    tick();
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
      clearTimeout(timer);
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
