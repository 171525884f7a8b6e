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
  };
  schedule?: {
    /** EventBridge Scheduler expression: `rate(5 minutes)` or `cron(…)`. */
    expression: string;
    payload?: unknown;
  };
  timeoutSeconds?: number;
  memoryMb?: number;
}

export const workers: WorkerDef[] = [];

export const workerNamed = (name: string): WorkerDef | undefined => workers.find((w) => w.name === name);
