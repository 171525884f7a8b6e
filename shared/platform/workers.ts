/**
 * Background workers: each is one Lambda function (functions/workers/<name>.ts). A queue worker is fed
 * by its own SQS queue (with a dead-letter queue) and exports `handler(event: SQSEvent):
 * Promise<SQSBatchResponse>`; a scheduled worker is invoked by an EventBridge Scheduler schedule with
 * `payload` as its event. The CDK stack and the local runtime both read this list.
 */
export interface WorkerDef {
  name: string;
  queue?: {
    /** Seconds a received message stays invisible (also the function timeout bound). */
    visibilityTimeoutSeconds: number;
    /** Receives before a message moves to the dead-letter queue. */
    maxReceiveCount: number;
    batchSize: number;
    /** Local runtime only: concurrent pollers of this queue (default 1); Lambda scales invocations itself. */
    localPollers?: number;
  };
  schedule?: {
    /** EventBridge Scheduler expression: `rate(5 minutes)` or `cron(…)`. */
    expression: string;
    payload?: unknown;
  };
  timeoutSeconds?: number;
  memoryMb?: number;
}

export const workers: WorkerDef[] = [
  {
    name: 'health-fanout',
    schedule: { expression: 'rate(5 minutes)', payload: { scheduledTime: '<aws.scheduler.scheduled-time>' } },
    timeoutSeconds: 60,
  },
  {
    name: 'health-check',
    queue: { visibilityTimeoutSeconds: 90, maxReceiveCount: 3, batchSize: 10 },
    timeoutSeconds: 60,
  },
  {
    name: 'annotate',
    queue: { visibilityTimeoutSeconds: 900, maxReceiveCount: 3, batchSize: 1 },
    timeoutSeconds: 840,
  },
  {
    name: 'webhook-fanout',
    queue: { visibilityTimeoutSeconds: 120, maxReceiveCount: 5, batchSize: 10 },
    timeoutSeconds: 60,
  },
  {
    name: 'webhook-deliver',
    queue: { visibilityTimeoutSeconds: 120, maxReceiveCount: 5, batchSize: 10, localPollers: 4 },
    timeoutSeconds: 60,
  },
  { name: 'webhook-sweep', schedule: { expression: 'rate(5 minutes)' }, timeoutSeconds: 120 },
];

export const workerNamed = (name: string): WorkerDef | undefined => workers.find((w) => w.name === name);
