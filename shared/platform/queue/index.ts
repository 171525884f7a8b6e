import { config } from '../config';
import { LocalQueue } from './local';
import { parseNameMap } from './name-map';
import type { Queue } from './port';
import { SqsQueue } from './sqs';

export type { Queue } from './port';

let instance: Queue | undefined;

/** The queue port for this runtime: SQS in AWS, the durable local queue (in the table) otherwise. */
export function queue(): Queue {
  if (instance) return instance;
  const cfg = config();
  instance =
    cfg.runtime === 'aws'
      ? new SqsQueue(parseNameMap('LOUPE_QUEUE_URLS', cfg.LOUPE_QUEUE_URLS))
      : new LocalQueue();
  return instance;
}

export function resetQueue(): void {
  instance = undefined;
}
