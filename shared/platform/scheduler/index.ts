import { config } from '../config';
import { parseNameMap } from '../queue/name-map';
import { EventBridgeScheduler } from './eventbridge';
import { LocalScheduler } from './local';
import type { Scheduler } from './port';

export type { Scheduler, ScheduleSpec } from './port';

let instance: Scheduler | undefined;

/** The scheduler port for this runtime: EventBridge Scheduler in AWS, the durable local scheduler otherwise. */
export function scheduler(): Scheduler {
  if (instance) return instance;
  const cfg = config();
  if (cfg.runtime === 'aws') {
    if (!cfg.LOUPE_SCHEDULER_GROUP || !cfg.LOUPE_SCHEDULER_ROLE_ARN)
      throw new Error(
        'Invalid configuration: LOUPE_SCHEDULER_GROUP and LOUPE_SCHEDULER_ROLE_ARN are required in AWS.',
      );
    instance = new EventBridgeScheduler({
      group: cfg.LOUPE_SCHEDULER_GROUP,
      roleArn: cfg.LOUPE_SCHEDULER_ROLE_ARN,
      workerArns: parseNameMap('LOUPE_WORKER_ARNS', cfg.LOUPE_WORKER_ARNS),
    });
  } else instance = new LocalScheduler();
  return instance;
}

export function resetScheduler(): void {
  instance = undefined;
}
