import { availableParallelism } from 'node:os';
import { MessageChannel, Worker } from 'node:worker_threads';
import { config } from '../../shared/platform/config';
import { localRegistry } from '../../shared/platform/measures';
import type { Snapshot } from '../../shared/platform/measures/registry';
import { localQueueSignals } from '../../shared/platform/queue/local';
import { localSchedulerSignals } from '../../shared/platform/scheduler/local';
import type { InstanceData, InstanceMessage, MainMessage } from './instance';
import { LOCAL_YOUNG_GENERATION_MB } from './node-flags';
import { type StoreCall, serveStorePort } from './store-client';

/**
 * Default number of handler instances: one per core above 2 cores; one on 2 cores (its own thread beside
 * the main thread's store, queue and scheduler: on the quiet 2-core machine it served 925-938 requests/s of
 * the load bench against 658-669 in the main thread, at less CPU per request, for about 0.15 ms more per
 * request at 1 client: the store hops over a MessagePort); none on 1 core. Figures in
 * docs/internals/benchmarks.md.
 */
export const defaultInstances = (cores = availableParallelism()) => (cores > 2 ? cores : cores === 2 ? 1 : 0);

export interface Instances {
  port: number;
  readonly threads: Worker[];
  /** CPU time of the instance threads so far (µs). */
  cpuUsage(): Promise<{ user: number; system: number }>;
  /** Stops every instance; resolves with how many had to be terminated (0 when every thread ended on its own). */
  stop(): Promise<number>;
}

// An instance first lets its requests under way finish (LOUPE_DRAIN_MS), then closes its drivers and store.
const stopWaitMs = () => config().LOUPE_DRAIN_MS + 10_000;
const STOPPED_GRACE_MS = 5_000; // a loaded machine may take a few seconds to let an instance thread end
/** How long GET /metrics waits for each instance thread's registry. */
const SNAPSHOT_WAIT_MS = 2_000;

/**
 * Starts `count` handler instances, each in a worker thread loading the function modules as a Lambda
 * instance does (instance.ts), all listening on one port (SO_REUSEPORT: the kernel spreads connections
 * over them). The store stays in this thread: each instance reaches it over its own MessagePort. The
 * instances' queue and scheduler signals wake this thread's workers, which run here only, once.
 */
export async function startInstances(opts: {
  count: number;
  port: number;
  store: StoreCall;
  log: (line: string) => void;
}): Promise<Instances> {
  const threads: Worker[] = [];
  const stopped = new Set<Worker>();
  // GET /metrics in any instance: every instance thread's registry and this thread's (the workers').
  const gathering = new Map<number, { left: Set<Worker>; got: Snapshot[]; finish: () => void }>();
  let nextGather = 0;
  const snapshotsOf = async (): Promise<Snapshot[]> => {
    const id = ++nextGather;
    const live = threads.filter((t) => t.threadId !== -1 && !stopped.has(t));
    const got: Snapshot[] = [localRegistry().snapshot()];
    await new Promise<void>((resolve) => {
      const left = new Set(live);
      // A thread that does not answer (stopping, busy in a synchronous loop) is left out, not waited for.
      const timer = setTimeout(() => finish(), SNAPSHOT_WAIT_MS);
      const finish = () => {
        clearTimeout(timer);
        gathering.delete(id);
        resolve();
      };
      gathering.set(id, { left, got, finish });
      if (!left.size) finish();
      for (const t of live) t.postMessage({ type: 'snapshot-wanted', id } satisfies MainMessage);
    });
    return got;
  };
  let stopping = false;
  let port = opts.port;
  const start = (index: number) =>
    new Promise<Worker>((resolve, reject) => {
      const channel = new MessageChannel();
      serveStorePort(channel.port1, opts.store);
      const data: InstanceData = { index, port, store: channel.port2 };
      const worker = new Worker(new URL('./instance-entry.mjs', import.meta.url), {
        workerData: data,
        transferList: [channel.port2],
        name: `loupe-instance-${index}`,
        resourceLimits: { maxYoungGenerationSizeMb: LOCAL_YOUNG_GENERATION_MB },
      });
      threads.push(worker);
      let ready = false;
      worker.on('message', (m: InstanceMessage) => {
        if (m.type === 'ready') {
          port = m.port;
          ready = true;
          resolve(worker);
        } else if (m.type === 'log') opts.log(`[instance ${index}] ${m.line}`);
        else if (m.type === 'queue-sent') localQueueSignals.emit('sent', m.queue);
        else if (m.type === 'schedules-changed') localSchedulerSignals.emit('changed');
        else if (m.type === 'stopped') stopped.add(worker);
        else if (m.type === 'snapshot') {
          const g = gathering.get(m.id);
          if (g?.left.delete(worker)) {
            g.got.push(m.snapshot);
            if (!g.left.size) g.finish();
          }
        } else if (m.type === 'snapshots-wanted')
          void snapshotsOf().then((snapshots) =>
            worker.postMessage({ type: 'snapshots', id: m.id, snapshots } satisfies MainMessage),
          );
      });
      worker.once('error', (e: Error) => {
        opts.log(`instance ${index}: ${e.stack ?? e.message}`);
        reject(e);
      });
      worker.once('exit', (code) => {
        channel.port1.close();
        if (stopped.has(worker) || stopping) return;
        const why = `instance ${index} exited unexpectedly (code ${code})`;
        if (!ready) {
          opts.log(why);
          reject(new Error(why));
          return;
        }
        // As Lambda replaces a failed instance: a new one (cold, its caches empty) takes its place.
        opts.log(`${why}; starting a new one`);
        threads.splice(threads.indexOf(worker), 1);
        start(index).catch((e: Error) =>
          opts.log(`instance ${index} could not be started again: ${e.message}`),
        );
      });
    });
  try {
    // The first instance picks the port (when 0), the others join it.
    await start(1);
    await Promise.all(Array.from({ length: opts.count - 1 }, (_, i) => start(i + 2)));
  } catch (e) {
    await Promise.all(threads.map((t) => t.terminate()));
    throw e;
  }
  return {
    port,
    threads,
    async cpuUsage() {
      const all = await Promise.all(threads.map((t) => t.cpuUsage().catch(() => ({ user: 0, system: 0 }))));
      return all.reduce((a, b) => ({ user: a.user + b.user, system: a.system + b.system }), {
        user: 0,
        system: 0,
      });
    },
    async stop() {
      stopping = true;
      let terminated = 0;
      await Promise.all(
        threads.map(async (t) => {
          if (t.threadId === -1) return; // already ended
          const index = threads.indexOf(t) + 1;
          const exited = new Promise<void>((ok) => t.once('exit', () => ok()));
          const finished = new Promise<void>((ok) => {
            if (stopped.has(t)) ok();
            else t.on('message', (m: InstanceMessage) => m.type === 'stopped' && ok());
          });
          t.postMessage('stop');
          let timer: NodeJS.Timeout | undefined;
          const wait = (ms: number) =>
            new Promise<'timeout'>((ok) => {
              timer = setTimeout(() => ok('timeout'), ms);
            });
          // The instance closes its server, drivers and store channel, then reports 'stopped' and ends
          // when nothing is left. A request still in flight (a query being cancelled) may hold a timer for
          // a while: like a Lambda instance that is frozen, it is then terminated after a grace period.
          const first = await Promise.race([
            exited.then(() => 'exited' as const),
            finished.then(() => 'stopped' as const),
            wait(stopWaitMs()),
          ]);
          clearTimeout(timer);
          let outcome: string = first;
          if (first === 'stopped') {
            outcome = await Promise.race([exited.then(() => 'exited'), wait(STOPPED_GRACE_MS)]);
            clearTimeout(timer);
          }
          if (outcome === 'exited') return;
          terminated++;
          stopped.add(t);
          if (first === 'timeout')
            opts.log(`instance ${index} did not stop within ${stopWaitMs() / 1000} s: terminated`);
          else
            opts.log(
              `instance ${index} stopped with work still pending (an interrupted request): terminated`,
            );
          await t.terminate();
        }),
      );
      return terminated;
    },
  };
}
