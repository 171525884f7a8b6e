import { config } from '../config';
import { parseNameMap } from '../queue/name-map';
import type { Scheduler } from './port';

export type { Scheduler, ScheduleSpec } from './port';

let instance: Scheduler | undefined;

/**
 * The scheduler port for this runtime: EventBridge Scheduler in AWS, the durable local scheduler
 * otherwise. The configuration is checked here (a missing setting fails at once); the implementation
 * is loaded with the first schedule change, a lazy chunk: the functions that import this answer most
 * requests without touching a schedule, and the local scheduler (timers, the local queue, the worker
 * manifest) is never used in AWS.
 */
export function scheduler(): Scheduler {
  if (instance) return instance;
  const cfg = config();
  let load: () => Promise<Scheduler>;
  if (cfg.runtime === 'aws') {
    if (!cfg.LOUPE_SCHEDULER_GROUP || !cfg.LOUPE_SCHEDULER_ROLE_ARN)
      throw new Error(
        'Invalid configuration: LOUPE_SCHEDULER_GROUP and LOUPE_SCHEDULER_ROLE_ARN are required in AWS.',
      );
    const settings = {
      group: cfg.LOUPE_SCHEDULER_GROUP,
      roleArn: cfg.LOUPE_SCHEDULER_ROLE_ARN,
      workerArns: parseNameMap('LOUPE_WORKER_ARNS', cfg.LOUPE_WORKER_ARNS),
    };
    load = async () => new (await import('./eventbridge')).EventBridgeScheduler(settings);
  } else load = async () => new (await import('./local')).LocalScheduler();
  let impl: Promise<Scheduler> | undefined;
  const get = () =>
    (impl ??= load().catch((e) => {
      impl = undefined;
      throw e;
    }));
  instance = {
    upsert: async (spec) => (await get()).upsert(spec),
    remove: async (name) => (await get()).remove(name),
  };
  return instance;
}

export function resetScheduler(): void {
  instance = undefined;
}
