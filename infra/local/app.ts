import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { config, resetConfig } from '../../shared/platform/config';
import { resetDocumentClient, setStoreCall } from '../../shared/platform/db/client';
import { resetEncryption } from '../../shared/platform/encryption';
import { bootstrapLocal } from './bootstrap';
import { instanceServer, STAGE } from './instance';
import { defaultInstances, type Instances, startInstances } from './instances';
import { type LocalService, startupTasks } from './startup';
import { startLocalStore, startStoreProcess } from './store';
import './demo';
import './outbound';
import './workers';
import { closeAllDrivers } from '../../shared/databases/drivers/index';

export interface LocalApp {
  url: string;
  port: number;
  dataDir: string;
  orgId: string;
  adminUserId: string;
  /** Set when the bootstrap admin key was created on this start. */
  createdKey?: string;
  /** Handler instances in worker threads (0: the handlers run in this thread). */
  instances: number;
  /** CPU time of the instance threads so far, µs (undefined when the handlers run in this thread). */
  instancesCpuUsage?(): Promise<{ user: number; system: number }>;
  stop(): Promise<void>;
}

export interface LocalOptions {
  port?: number;
  dataDir?: string;
  /** Extra environment for this runtime (applied to process.env before configuration is read). */
  env?: Record<string, string | undefined>;
  log?: (line: string) => void;
  /**
   * Runs the store (dynalite) in a child process instead of this one (a crash of it then stops the
   * runtime). Off by default: on the 2-core machine it measured slower for the query path whenever
   * other work shares the cores (each store call then waits for the other process to be scheduled).
   */
  storeProcess?: boolean;
  /**
   * Handler instances, each in a worker thread with its own module-level caches as a Lambda instance
   * (instances.ts); 0 runs the handlers in this thread. Default: LOUPE_LOCAL_INSTANCES, else
   * `defaultInstances()` (one per core above 2 cores, one on 2 cores, none on 1).
   * The store, the local queue and scheduler workers and the startup tasks always run in this thread.
   */
  instances?: number;
}

/**
 * Lines to stdout, written together at most every 50 ms: a write per request (a system call, a pipe's
 * reader woken each time) cost the server about 0.1 ms of CPU per request. Whatever is left is written
 * before the process exits.
 */
let stdoutLog: ((line: string) => void) | undefined;
function stdoutLines(): (line: string) => void {
  let pending = '';
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (!pending) return;
    const text = pending;
    pending = '';
    process.stdout.write(text);
  };
  process.once('exit', flush);
  return (line: string) => {
    pending += `${line}\n`;
    if (pending.length > 64 * 1024) flush();
    else timer ??= setTimeout(flush, 50).unref();
  };
}

/**
 * The whole service on one machine: dynalite on disk, the same Lambda handlers invoked with API
 * Gateway REST proxy events, and the local queue, scheduler and startup tasks.
 */
export async function startLocal(opts: LocalOptions = {}): Promise<LocalApp> {
  for (const [k, v] of Object.entries(opts.env ?? {})) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  const dataDir = resolve(opts.dataDir ?? process.env.LOUPE_DATA_DIR ?? '.data');
  process.env.LOUPE_DATA_DIR = dataDir;
  process.env.LOUPE_RUNTIME = 'local';
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  stdoutLog ??= stdoutLines(); // one buffer (and exit hook) per process
  const log = opts.log ?? stdoutLog;

  resetConfig();
  resetDocumentClient();
  resetEncryption();
  const store = opts.storeProcess
    ? await startStoreProcess(dataDir, config().LOUPE_TABLE_NAME, {
        onCrash: (reason) => {
          console.error(reason);
          log(reason);
          process.exit(1);
        },
      })
    : await startLocalStore(dataDir, config().LOUPE_TABLE_NAME);
  process.env.LOUPE_DYNAMODB_ENDPOINT = store.endpoint;
  resetConfig();
  // This thread's store calls go straight into the store (no HTTP, no SDK serialization) when it runs here.
  const call = store.call;
  setStoreCall(call);

  const boot = await bootstrapLocal(dataDir, process.env.LOUPE_ADMIN_KEY || undefined);
  const services: LocalService[] = [];
  for (const task of startupTasks) {
    const s = await task({
      dataDir,
      orgId: boot.orgId,
      adminUserId: boot.adminUserId,
      firstStart: boot.firstStart,
      log,
    });
    if (s) services.push(s);
  }

  // With the store in a process of its own (storeProcess) the handlers run in this thread.
  const count = opts.instances ?? (call ? (config().LOUPE_LOCAL_INSTANCES ?? defaultInstances()) : 0);
  let front: { port: number; close(): Promise<unknown> };
  let instances: Instances | undefined;
  try {
    if (count > 0) {
      if (!call) throw new Error('Handler instances need the store in this process (not storeProcess).');
      instances = await startInstances({ count, port: opts.port ?? 3000, store: call, log });
      front = { port: instances.port, close: instances.stop };
    } else front = await instanceServer(opts.port ?? 3000, log);
  } catch (e) {
    for (const s of services.reverse()) await s.stop();
    setStoreCall(undefined);
    await store.close();
    throw e;
  }
  const port = front.port;

  return {
    url: `http://localhost:${port}/${STAGE}`,
    port,
    dataDir,
    orgId: boot.orgId,
    adminUserId: boot.adminUserId,
    createdKey: boot.createdKey,
    instances: instances?.threads.length ?? 0,
    instancesCpuUsage: instances ? () => instances.cpuUsage() : undefined,
    async stop() {
      await front.close();
      for (const s of services.reverse()) await s.stop();
      await closeAllDrivers(); // database pools and SQLite processes (a runaway statement is killed)
      setStoreCall(undefined);
      await store.close();
    },
  };
}
