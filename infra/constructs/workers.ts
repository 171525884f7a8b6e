import { Duration, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { WorkerDef } from '../../shared/platform/workers';

/** SQS recommends a visibility timeout of at least six times the consuming function's timeout. */
export const VISIBILITY_FACTOR = 6;
const MAX_VISIBILITY_SECONDS = 12 * 60 * 60;

export interface WorkerFunction {
  worker: WorkerDef;
  function: lambda.IFunction;
  timeoutSeconds: number;
  /** The function's ARN by its fixed name (no reference to the function resource). */
  arn: string;
  /** Deployment override of the manifest's queue.maxConcurrency. */
  maxConcurrency?: number;
}

/** Concurrent invocations per queue event source unless the manifest or the deployment says otherwise. */
export const DEFAULT_MAX_CONCURRENCY = 10;

/** A worker's queue pair, for grants and outputs. */
export interface WorkerQueues {
  queue: sqs.Queue;
  deadLetters: sqs.Queue;
}

/**
 * Worker plumbing from the worker manifest: an SQS queue and dead-letter queue per queue worker with
 * its event source mapping (partial batch failures), and EventBridge Scheduler: the schedule group the
 * service creates its run-time schedules in, the role Scheduler assumes to invoke any worker, and one
 * fixed schedule per scheduled worker.
 */
export class LoupeWorkers extends Construct {
  readonly queues = new Map<string, WorkerQueues>();
  readonly scheduleGroup: scheduler.CfnScheduleGroup;
  readonly scheduleGroupName: string;
  readonly schedulerRole: iam.Role;

  constructor(scope: Construct, id: string, props: { workers: WorkerFunction[] }) {
    super(scope, id);
    const stack = Stack.of(this);

    for (const w of props.workers) {
      if (!w.worker.queue) continue;
      const q = w.worker.queue;
      if (!Number.isInteger(q.maxReceiveCount) || q.maxReceiveCount < 1 || q.maxReceiveCount > 1000)
        throw new Error(`Worker ${w.worker.name}: queue.maxReceiveCount must be an integer from 1 to 1000.`);
      if (!Number.isInteger(q.batchSize) || q.batchSize < 1 || q.batchSize > 10_000)
        throw new Error(`Worker ${w.worker.name}: queue.batchSize must be an integer from 1 to 10000.`);
      const visibility = visibilityTimeoutOf(w.worker, w.timeoutSeconds);
      const deadLetters = new sqs.Queue(this, `${w.worker.name}-dlq`, {
        queueName: `${stack.stackName}-${w.worker.name}-dlq`,
        retentionPeriod: Duration.days(14),
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
      });
      // Short fixed names keep the queue URLs small (every function gets them all in LOUPE_QUEUE_URLS).
      const queue = new sqs.Queue(this, `${w.worker.name}-queue`, {
        queueName: `${stack.stackName}-${w.worker.name}`,
        visibilityTimeout: Duration.seconds(visibility),
        retentionPeriod: Duration.days(4),
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        deadLetterQueue: { queue: deadLetters, maxReceiveCount: q.maxReceiveCount },
      });
      (w.function as lambda.Function).addEventSource(
        new SqsEventSource(queue, {
          batchSize: q.batchSize,
          reportBatchItemFailures: true,
          maxConcurrency: w.maxConcurrency ?? q.maxConcurrency ?? DEFAULT_MAX_CONCURRENCY,
          // Lambda requires a batching window for batches above 10 messages.
          maxBatchingWindow: q.batchSize > 10 ? Duration.seconds(1) : undefined,
        }),
      );
      this.queues.set(w.worker.name, { queue, deadLetters });
    }

    this.scheduleGroupName = `${stack.stackName}-schedules`;
    this.scheduleGroup = new scheduler.CfnScheduleGroup(this, 'ScheduleGroup', {
      name: this.scheduleGroupName,
    });

    this.schedulerRole = new iam.Role(this, 'SchedulerRole', {
      description: 'Assumed by EventBridge Scheduler to invoke Loupe workers',
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': stack.account } },
      }),
    });
    if (props.workers.length)
      this.schedulerRole.addToPolicy(
        new iam.PolicyStatement({
          actions: ['lambda:InvokeFunction'],
          resources: props.workers.map((w) => w.arn),
        }),
      );

    for (const w of props.workers) {
      if (!w.worker.schedule) continue;
      const schedule = new scheduler.CfnSchedule(this, `${w.worker.name}-schedule`, {
        name: `system-${w.worker.name}`,
        groupName: this.scheduleGroupName,
        description: `Loupe system schedule for worker ${w.worker.name}`,
        scheduleExpression: w.worker.schedule.expression,
        scheduleExpressionTimezone: 'UTC',
        flexibleTimeWindow: { mode: 'OFF' },
        state: 'ENABLED',
        target: {
          arn: w.arn,
          roleArn: this.schedulerRole.roleArn,
          input: JSON.stringify(w.worker.schedule.payload ?? {}),
          retryPolicy: { maximumRetryAttempts: 2, maximumEventAgeInSeconds: 3600 },
        },
      });
      schedule.node.addDependency(this.scheduleGroup);
      // The role's policy must be in place before Scheduler first invokes the worker.
      schedule.node.addDependency(this.schedulerRole);
      schedule.node.addDependency(w.function);
    }
  }

  /** ARNs of schedules the service may manage at run time (its own group only). */
  get runtimeScheduleArns(): string {
    return Stack.of(this).formatArn({
      service: 'scheduler',
      resource: 'schedule',
      resourceName: `${this.scheduleGroupName}/*`,
    });
  }
}

/** Queue visibility: the manifest's value, raised to six times the function timeout when shorter. */
export function visibilityTimeoutOf(worker: WorkerDef, timeoutSeconds: number): number {
  const wanted = Math.max(worker.queue?.visibilityTimeoutSeconds ?? 0, VISIBILITY_FACTOR * timeoutSeconds);
  if (wanted > MAX_VISIBILITY_SECONDS)
    throw new Error(`Worker ${worker.name}: visibility timeout ${wanted}s exceeds SQS's 12 hours.`);
  return wanted;
}
