/**
 * Background workers: each is one Lambda function (functions/workers/<name>.ts). A queue worker is fed
 * by its own SQS queue (with a dead-letter queue) and exports `handler(event: SQSEvent):
 * Promise<SQSBatchResponse>`; a scheduled worker is invoked by an EventBridge Scheduler schedule with
 * `payload` as its event. The CDK stack and the local runtime both read this list.
 */
import type { FunctionNeeds } from './needs';

export interface WorkerDef extends FunctionNeeds {
  name: string;
  queue?: {
    /** Seconds a received message stays invisible (also the function timeout bound). */
    visibilityTimeoutSeconds: number;
    /** Receives before a message moves to the dead-letter queue. */
    maxReceiveCount: number;
    batchSize: number;
    /**
     * Most concurrent invocations the queue's event source starts (SQS maxConcurrency, 2-1000; default
     * 10; the deployment context `maxConcurrency` overrides it per worker).
     */
    maxConcurrency?: number;
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
    enqueues: ['health-check'],
  },
  {
    name: 'health-check',
    // At most 5 × 10 connections opened to customer databases at once by health checks.
    queue: { visibilityTimeoutSeconds: 90, maxReceiveCount: 3, batchSize: 10, maxConcurrency: 5 },
    timeoutSeconds: 60,
    needs: ['decrypt', 'sqlite', 'databases'],
    enqueues: ['webhook-fanout'],
  },
  {
    name: 'annotate',
    queue: { visibilityTimeoutSeconds: 900, maxReceiveCount: 3, batchSize: 1, maxConcurrency: 4 },
    timeoutSeconds: 840,
    needs: ['decrypt', 'model', 'sqlite', 'databases', 'internet'],
  },
  {
    name: 'approval-expiry',
    schedule: { expression: 'rate(1 minute)' },
    timeoutSeconds: 60,
    enqueues: ['webhook-fanout'],
  },
  {
    // The EventBridge Scheduler target of workflow schedules, and the runner of manual runs and action
    // tests handed over through its queue (shared/workflows/manual-runs.ts; one run per message).
    name: 'workflow-runner',
    queue: { visibilityTimeoutSeconds: 390, maxReceiveCount: 3, batchSize: 1, maxConcurrency: 10 },
    timeoutSeconds: 360,
    needs: ['decrypt', 'sqlite', 'databases', 'internet', 'mail'],
    enqueues: ['webhook-fanout'],
  },
  {
    // Closes runs left RUNNING; finds scheduled runs that never started, writes their schedule again
    // and hands a catch-up to the runner (shared/workflows/missed-runs.ts).
    name: 'workflow-sweep',
    schedule: { expression: 'rate(1 minute)' },
    timeoutSeconds: 60,
    needs: ['schedules'],
    enqueues: ['webhook-fanout', 'workflow-runner'],
  },
  {
    name: 'webhook-fanout',
    queue: { visibilityTimeoutSeconds: 120, maxReceiveCount: 5, batchSize: 10 },
    timeoutSeconds: 60,
    enqueues: ['webhook-deliver'],
  },
  {
    name: 'webhook-deliver',
    // Each attempt is bounded by LOUPE_WEBHOOK_TIMEOUT_MS; many endpoints are served at once.
    queue: {
      visibilityTimeoutSeconds: 120,
      maxReceiveCount: 5,
      batchSize: 10,
      localPollers: 4,
      maxConcurrency: 50,
    },
    timeoutSeconds: 60,
    needs: ['decrypt', 'internet'],
    enqueues: ['webhook-deliver'],
  },
  {
    name: 'webhook-sweep',
    schedule: { expression: 'rate(5 minutes)' },
    timeoutSeconds: 120,
    enqueues: ['webhook-deliver'],
  },
];

export const workerNamed = (name: string): WorkerDef | undefined => workers.find((w) => w.name === name);
