import { Duration, Stack } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import { type LabelsOf, MEASURES, type MeasureName } from '../../shared/platform/measures/catalog';
import type { WorkerDef } from '../../shared/platform/workers';
import type { WorkerQueues } from './workers';

/** Where every alarm's runbook entry lives: `docs/operations/runbook.md#<anchor>`. */
export const RUNBOOK = 'docs/operations/runbook.md';

/** The alarm classes; each is one entry of the runbook (its anchor). */
export const ALARM_CLASSES = {
  dlq: 'dead-letter-queue-has-messages',
  queueAge: 'queue-oldest-message-too-old',
  fnErrors: 'function-errors',
  fnThrottles: 'function-throttles',
  api5xx: 'api-5xx-rate',
  apiLatency: 'api-latency',
  tableThrottles: 'dynamodb-throttled-requests',
  tableErrors: 'dynamodb-system-errors',
  kmsErrors: 'kms-errors',
  secretsErrors: 'secrets-manager-errors',
  scheduledLate: 'scheduled-runs-late',
  scheduledMissed: 'scheduled-runs-missed',
  scheduledDropped: 'scheduled-runs-dropped',
  schedulerErrors: 'scheduler-target-errors',
  webhooksFailing: 'webhook-deliveries-failing',
  approvalsExpiring: 'approvals-expiring-unreviewed',
} as const;
export type AlarmClass = keyof typeof ALARM_CLASSES;

/** API 5xx rate alarm: percent of requests over five minutes, when at least MIN requests came. */
export const API_5XX_PERCENT = 5;
export const API_5XX_MIN_REQUESTS = 20;
/** API latency alarm: p90 of Latency over three consecutive five-minute periods. */
export const API_P90_LATENCY_MS = 10_000;

export interface MonitoredFunction {
  name: string;
  function: lambda.IFunction;
}

export interface MonitoredQueue {
  worker: WorkerDef;
  queues: WorkerQueues;
  /** Seconds of the queue's visibility timeout. */
  visibilitySeconds: number;
}

export interface LoupeMonitoringProps {
  /** CloudWatch namespace of Loupe's own metrics (POWERTOOLS_METRICS_NAMESPACE of the functions). */
  namespace: string;
  functions: MonitoredFunction[];
  queues: MonitoredQueue[];
  api: apigw.RestApi;
  table: dynamodb.Table;
  scheduleGroupName: string;
  /** Subscribed to the alarm topic by e-mail when given. */
  alarmEmail?: string;
}

/**
 * How long a queue's oldest message may wait before its alarm: ten minutes, plus fifteen when the worker
 * re-queues its own messages with a delay (webhook retries wait up to SQS's 15-minute delay), and never
 * less than two visibility timeouts (a message received and cut off waits one out before it is retried).
 */
export function oldestMessageThresholdSeconds(worker: WorkerDef, visibilitySeconds: number): number {
  const selfDelayed = worker.enqueues?.includes(worker.name) ? 900 : 0;
  return Math.max(600 + selfDelayed, 2 * visibilitySeconds);
}

/**
 * What tells the team running Loupe that it is unwell: an alarm for every dead-letter queue, queue age,
 * function errors and throttles, API 5xx rate and latency, table throttles and errors, KMS and Secrets
 * Manager errors, scheduled workflow runs started late or never, failing webhook deliveries and approvals
 * expiring unreviewed; each alarm notifies one encrypted SNS topic (e-mail when `alarmEmail` is set) when
 * it fires and when it is OK again, and its description says what it means, what to do first and which
 * runbook entry to read. Plus one dashboard of the service.
 */
export class LoupeMonitoring extends Construct {
  readonly topic: sns.Topic;
  readonly topicKey: kms.Key;
  readonly dashboard: cloudwatch.Dashboard;
  /** Every alarm with its class (tests and docs). */
  readonly alarms: { alarm: cloudwatch.Alarm; class: AlarmClass; subject: string }[] = [];
  private readonly props: LoupeMonitoringProps;
  private readonly stackName: string;

  constructor(scope: Construct, id: string, props: LoupeMonitoringProps) {
    super(scope, id);
    this.props = props;
    const stack = Stack.of(this);
    this.stackName = stack.stackName;

    // A key of its own: CloudWatch must be allowed to use the key of an encrypted topic it publishes to,
    // which the AWS-managed SNS key does not allow.
    this.topicKey = new kms.Key(this, 'TopicKey', {
      description: `Loupe ${stack.stackName}: encryption of the alarm notification topic`,
      enableKeyRotation: true,
    });
    this.topicKey.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'CloudWatchAlarmsPublish',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: { StringEquals: { 'aws:SourceAccount': stack.account } },
      }),
    );
    this.topic = new sns.Topic(this, 'Alarms', {
      displayName: `Loupe ${stack.stackName} alarms`,
      masterKey: this.topicKey,
      enforceSSL: true,
    });
    this.topic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'CloudWatchAlarmsPublish',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [this.topic.topicArn],
        conditions: { StringEquals: { 'aws:SourceAccount': stack.account } },
      }),
    );
    if (props.alarmEmail) this.topic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));

    this.queueAlarms();
    this.functionAlarms();
    this.apiAlarms();
    this.tableAlarms();
    this.serviceAlarms();
    this.dashboard = this.buildDashboard();
  }

  /** One of Loupe's own metrics (shared/platform/measures/catalog.ts) as CloudWatch stores it. */
  measure<K extends MeasureName>(
    name: K,
    labels: LabelsOf<K>,
    opts: { statistic?: string; period?: Duration; label?: string } = {},
  ): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: this.props.namespace,
      metricName: MEASURES[name].emf,
      dimensionsMap: { service: 'loupe', ...(labels as Record<string, string>) },
      statistic: opts.statistic ?? 'Sum',
      period: opts.period ?? Duration.minutes(5),
      label: opts.label,
    });
  }

  /** A SEARCH over a Loupe metric's every label value (dashboards only: alarms need one series). */
  private search(name: MeasureName, statistic: string, label: string): cloudwatch.MathExpression {
    const def = MEASURES[name];
    const dims = ['service', ...def.labels].join(',');
    return new cloudwatch.MathExpression({
      expression: `SEARCH('{"${this.props.namespace}",${dims}} MetricName="${def.emf}"', '${statistic}', 300)`,
      usingMetrics: {},
      label,
      period: Duration.minutes(5),
    });
  }

  private alarm(
    cls: AlarmClass,
    subject: string,
    metric: cloudwatch.IMetric,
    o: {
      threshold: number;
      evaluationPeriods?: number;
      datapointsToAlarm?: number;
      meaning: string;
      action: string;
    },
  ): cloudwatch.Alarm {
    const id = `${cls}-${subject}`.replace(/[^A-Za-z0-9]+/g, '-');
    const anchor = ALARM_CLASSES[cls];
    const alarm = new cloudwatch.Alarm(this, id, {
      alarmName: `${this.stackName}-${anchor}${subject === 'service' ? '' : `-${subject}`}`,
      alarmDescription: `${o.meaning} First: ${o.action} Runbook: ${RUNBOOK}#${anchor}`,
      metric,
      threshold: o.threshold,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: o.evaluationPeriods ?? 1,
      datapointsToAlarm: o.datapointsToAlarm,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    alarm.addAlarmAction(new actions.SnsAction(this.topic));
    alarm.addOkAction(new actions.SnsAction(this.topic));
    this.alarms.push({ alarm, class: cls, subject });
    return alarm;
  }

  private queueAlarms() {
    for (const q of this.props.queues) {
      const name = q.worker.name;
      this.alarm(
        'dlq',
        name,
        q.queues.deadLetters.metricApproximateNumberOfMessagesVisible({
          statistic: 'Maximum',
          period: Duration.minutes(5),
        }),
        {
          threshold: 1,
          meaning: `Messages of the ${name} worker failed ${q.worker.queue?.maxReceiveCount} times and were moved to its dead-letter queue; their work is not done.`,
          action: `read the ${name} function's errors in its log group, fix the cause, then redrive the dead-letter queue to the ${name} queue.`,
        },
      );
      const limit = oldestMessageThresholdSeconds(q.worker, q.visibilitySeconds);
      this.alarm(
        'queueAge',
        name,
        q.queues.queue.metricApproximateAgeOfOldestMessage({
          statistic: 'Maximum',
          period: Duration.minutes(5),
        }),
        {
          threshold: limit,
          meaning: `The oldest message of the ${name} queue has waited ${limit} s or more: the ${name} worker is not keeping up, failing or throttled.`,
          action: `check the ${name} function's errors, throttles and concurrency, and the queue's depth.`,
        },
      );
    }
  }

  private functionAlarms() {
    for (const f of this.props.functions) {
      this.alarm(
        'fnErrors',
        f.name,
        f.function.metricErrors({ statistic: 'Sum', period: Duration.minutes(5) }),
        {
          threshold: 1,
          meaning: `The ${f.name} function failed (an uncaught error, a timeout or a crash, not an error answer).`,
          action: `read the function's log group for ERROR lines and its X-Ray traces around the time of the alarm.`,
        },
      );
      this.alarm(
        'fnThrottles',
        f.name,
        f.function.metricThrottles({ statistic: 'Sum', period: Duration.minutes(5) }),
        {
          threshold: 1,
          meaning: `Lambda refused invocations of the ${f.name} function: its reserved concurrency or the account's concurrency is used up.`,
          action: `compare ConcurrentExecutions with the function's reserved concurrency and the account limit; raise the one that binds.`,
        },
      );
    }
  }

  private apiAlarms() {
    const api = this.props.api;
    const period = Duration.minutes(5);
    const rate = new cloudwatch.MathExpression({
      expression: `IF(requests >= ${API_5XX_MIN_REQUESTS}, 100 * FILL(errors, 0) / requests, 0)`,
      usingMetrics: {
        errors: api.metricServerError({ statistic: 'Sum', period }),
        requests: api.metricCount({ statistic: 'Sum', period }),
      },
      label: 'API 5xx (% of requests)',
      period,
    });
    this.alarm('api5xx', 'service', rate, {
      threshold: API_5XX_PERCENT,
      meaning: `${API_5XX_PERCENT}% or more of API requests in five minutes answered 5xx (at least ${API_5XX_MIN_REQUESTS} requests).`,
      action:
        'see which functions have errors (their alarms, the dashboard) and read their logs; a 504 is the 29 s gateway limit.',
    });
    this.alarm('apiLatency', 'service', api.metricLatency({ statistic: 'p90', period }), {
      threshold: API_P90_LATENCY_MS,
      evaluationPeriods: 3,
      datapointsToAlarm: 3,
      meaning: `The slowest tenth of API requests took ${API_P90_LATENCY_MS / 1000} s or more for fifteen minutes.`,
      action:
        'find the slow endpoint group on the dashboard, then the slow subsegment (database, store, outbound) in its X-Ray traces.',
    });
  }

  private tableAlarms() {
    const table = this.props.table;
    const operations = [
      'GetItem',
      'BatchGetItem',
      'Query',
      'PutItem',
      'UpdateItem',
      'DeleteItem',
      'BatchWriteItem',
    ] as dynamodb.Operation[];
    const period = Duration.minutes(5);
    this.alarm(
      'tableThrottles',
      'service',
      table.metricThrottledRequestsForOperations({ operations, period }),
      {
        threshold: 5,
        meaning:
          'DynamoDB throttled 5 or more requests to the table in five minutes (each is retried, then fails the request).',
        action:
          "look for a hot partition (one organization's burst) in CloudWatch Contributor Insights, and at the account's on-demand throughput limits.",
      },
    );
    this.alarm('tableErrors', 'service', table.metricSystemErrorsForOperations({ operations, period }), {
      threshold: 1,
      evaluationPeriods: 2,
      datapointsToAlarm: 2,
      meaning: 'DynamoDB answered the table with internal errors (5xx) for ten minutes.',
      action: "check the AWS Health Dashboard for DynamoDB in this region; Loupe's client retries each call.",
    });
  }

  private serviceAlarms() {
    const sum = (k: 'kms' | 'secretsmanager', ops: string[]) =>
      new cloudwatch.MathExpression({
        expression: ops.map((_, i) => `FILL(m${i}, 0)`).join(' + '),
        usingMetrics: Object.fromEntries(
          ops.map((operation, i) => [`m${i}`, this.measure('awsErrors', { dependency: k, operation })]),
        ),
        label: `${k} errors`,
        period: Duration.minutes(5),
      });
    this.alarm('kmsErrors', 'service', sum('kms', ['GenerateDataKey', 'Decrypt']), {
      threshold: 1,
      meaning:
        'Calls to the KMS key failed (throttled, access denied, key disabled or KMS failing): stored secrets cannot be opened or sealed, so connections, credentials and webhooks fail.',
      action:
        'check the key is enabled and its policy and the function roles allow it (CloudTrail shows the denied call), and the KMS request quota.',
    });
    this.alarm('secretsErrors', 'service', sum('secretsmanager', ['GetSecretValue']), {
      threshold: 1,
      meaning: 'Reading the model provider secret failed: chat and annotation cannot call the model.',
      action: 'check the secret exists (modelSecretName) and the chat and annotate roles may read it.',
    });
    this.alarm('scheduledLate', 'service', this.measure('scheduledRunsLate', {}), {
      threshold: 1,
      meaning:
        'A scheduled workflow run started later than LOUPE_SCHEDULE_LATE_MS (2 minutes) after its due time: EventBridge Scheduler retried it, or the runner was throttled or failing.',
      action:
        'check the workflow-runner function (errors, throttles) and the Scheduler metrics of the schedule group on the dashboard.',
    });
    const missed = new cloudwatch.MathExpression({
      expression: 'FILL(notStarted, 0) + FILL(abandoned, 0)',
      usingMetrics: {
        notStarted: this.measure('scheduledRunsMissed', { cause: 'not_started' }),
        abandoned: this.measure('scheduledRunsMissed', { cause: 'abandoned' }),
      },
      label: 'missed scheduled runs',
      period: Duration.minutes(5),
    });
    this.alarm('scheduledMissed', 'service', missed, {
      threshold: 1,
      meaning:
        'A scheduled workflow run had not started LOUPE_SCHEDULE_LATE_MS after its due time (the workflow sweep found no run for it): its schedule was deleted, disabled or lost, its invocation dropped, or a runner stopped before starting it. The sweep wrote the schedule again and ran the latest missed due time once.',
      action:
        'read the workflow-sweep log ("scheduled workflow runs missed": which workflows, due times and cause), then the Scheduler metrics and the workflow-runner errors.',
    });
    const scheduler = (metricName: string) =>
      new cloudwatch.Metric({
        namespace: 'AWS/Scheduler',
        metricName,
        dimensionsMap: { ScheduleGroup: this.props.scheduleGroupName },
        statistic: 'Sum',
        period: Duration.minutes(5),
      });
    this.alarm('scheduledDropped', 'service', scheduler('InvocationDroppedCount'), {
      threshold: 1,
      meaning:
        'EventBridge Scheduler gave up invoking a worker after its retries: a scheduled workflow run (or a system sweep) never started.',
      action:
        "check the scheduler role may invoke the workers and the workflow-runner's throttles; tell the workflow's owners which runs were missed.",
    });
    this.alarm('schedulerErrors', 'service', scheduler('TargetErrorCount'), {
      threshold: 1,
      evaluationPeriods: 2,
      datapointsToAlarm: 2,
      meaning:
        'EventBridge Scheduler could not invoke a worker for ten minutes (throttled, denied, or the function missing); it retries.',
      action: 'check the scheduler role, the worker functions exist, and their throttles.',
    });
    this.alarm(
      'webhooksFailing',
      'service',
      this.measure('webhookDeliveries', { outcome: 'failed' }, { period: Duration.minutes(15) }),
      {
        threshold: 5,
        meaning:
          '5 or more event webhook deliveries failed for good (every attempt used) in fifteen minutes.',
        action:
          'find the endpoints in the webhook-deliver logs ("webhook delivery attempt failed"); an endpoint that is down is its owner\'s to fix (deactivate it if it stays down).',
      },
    );
    this.alarm(
      'approvalsExpiring',
      'service',
      this.measure('approvals', { outcome: 'expired' }, { period: Duration.hours(1) }),
      {
        threshold: 1,
        meaning: 'A query held for approval expired without review in the last hour.',
        action:
          "tell the organization's approvers (GET /queries/pending lists what waits); raise LOUPE_APPROVAL_TTL_SECONDS if reviews take longer.",
      },
    );
  }

  private buildDashboard(): cloudwatch.Dashboard {
    const p = this.props;
    const api = p.api;
    const period = Duration.minutes(5);
    const graph = (title: string, left: cloudwatch.IMetric[], right: cloudwatch.IMetric[] = [], width = 8) =>
      new cloudwatch.GraphWidget({ title, left, right, width, height: 6, period });
    const fnMetric = (name: 'Errors' | 'Throttles' | 'Invocations' | 'Duration', statistic = 'Sum') =>
      p.functions.map(
        (f) =>
          new cloudwatch.Metric({
            namespace: 'AWS/Lambda',
            metricName: name,
            dimensionsMap: { FunctionName: f.function.functionName },
            statistic,
            period,
            label: f.name,
          }),
      );
    const scheduler = (metricName: string) =>
      new cloudwatch.Metric({
        namespace: 'AWS/Scheduler',
        metricName,
        dimensionsMap: { ScheduleGroup: p.scheduleGroupName },
        statistic: 'Sum',
        period,
        label: metricName,
      });
    const d = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: `${this.stackName}-service`,
      defaultInterval: Duration.hours(3),
    });
    d.addWidgets(
      new cloudwatch.TextWidget({
        markdown: `# Loupe ${this.stackName}\nTraffic, errors, latency, queues, scheduler and AI spend. Every alarm has an entry in the runbook (${RUNBOOK}).`,
        width: 24,
        height: 2,
      }),
    );
    d.addWidgets(
      graph(
        'Traffic: API requests',
        [api.metricCount({ statistic: 'Sum', period, label: 'requests' })],
        [
          this.measure('rateLimited', { limit: 'org' }, { label: '429 org limit' }),
          this.measure('rateLimited', { limit: 'ai' }, { label: '429 AI limit' }),
        ],
      ),
      graph(
        'Traffic: queries and chat',
        [this.search('queriesRun', 'Sum', ''), this.search('queriesRefused', 'Sum', '')],
        [this.search('chatRequests', 'Sum', '')],
      ),
      graph('Traffic: function invocations', fnMetric('Invocations')),
    );
    d.addWidgets(
      graph('Errors: API answers', [
        api.metricServerError({ statistic: 'Sum', period, label: '5xx' }),
        api.metricClientError({ statistic: 'Sum', period, label: '4xx' }),
      ]),
      graph('Errors: function errors', fnMetric('Errors')),
      graph('Errors: throttles and AWS calls', fnMetric('Throttles'), [
        this.search('awsErrors', 'Sum', ''),
        this.props.table.metricThrottledRequestsForOperations({
          operations: ['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'] as dynamodb.Operation[],
          period,
        }),
      ]),
    );
    d.addWidgets(
      graph('Latency: API (ms)', [
        api.metricLatency({ statistic: 'p50', period, label: 'p50' }),
        api.metricLatency({ statistic: 'p90', period, label: 'p90' }),
        api.metricLatency({ statistic: 'p99', period, label: 'p99' }),
      ]),
      graph('Latency: database statements (ms)', [
        this.measure('queryDuration', {}, { statistic: 'p50', label: 'p50' }),
        this.measure('queryDuration', {}, { statistic: 'p90', label: 'p90' }),
        this.measure('queryDuration', {}, { statistic: 'p99', label: 'p99' }),
      ]),
      graph('Latency: function duration p90 (ms)', fnMetric('Duration', 'p90')),
    );
    d.addWidgets(
      graph(
        'Queues: messages visible',
        p.queues.map((q) =>
          q.queues.queue.metricApproximateNumberOfMessagesVisible({
            period,
            statistic: 'Maximum',
            label: q.worker.name,
          }),
        ),
      ),
      graph(
        'Queues: age of oldest message (s)',
        p.queues.map((q) =>
          q.queues.queue.metricApproximateAgeOfOldestMessage({
            period,
            statistic: 'Maximum',
            label: q.worker.name,
          }),
        ),
      ),
      graph(
        'Queues: dead-letter messages',
        p.queues.map((q) =>
          q.queues.deadLetters.metricApproximateNumberOfMessagesVisible({
            period,
            statistic: 'Maximum',
            label: `${q.worker.name} DLQ`,
          }),
        ),
      ),
    );
    d.addWidgets(
      graph(
        'Scheduler: start delay of scheduled runs (ms)',
        [
          this.measure('scheduledRunDelay', {}, { statistic: 'p50', label: 'p50' }),
          this.measure('scheduledRunDelay', {}, { statistic: 'Maximum', label: 'max' }),
        ],
        [
          this.measure('scheduledRunsLate', {}, { label: 'late runs' }),
          this.search('scheduledRunsMissed', 'Sum', ''),
        ],
      ),
      graph('Scheduler: workflow runs by outcome', [this.search('workflowRuns', 'Sum', '')]),
      graph('Scheduler: EventBridge Scheduler', [
        scheduler('InvocationAttemptCount'),
        scheduler('TargetErrorCount'),
        scheduler('InvocationDroppedCount'),
      ]),
    );
    d.addWidgets(
      graph('AI spend (US cents)', [this.search('aiSpend', 'Sum', '')]),
      graph('AI tokens', [this.search('aiTokens', 'Sum', '')]),
      graph(
        'Webhooks and approvals',
        [this.search('webhookDeliveries', 'Sum', '')],
        [this.search('approvals', 'Sum', '')],
      ),
    );
    d.addWidgets(
      new cloudwatch.AlarmStatusWidget({
        title: 'Alarms',
        alarms: this.alarms.map((a) => a.alarm),
        width: 24,
        height: 8,
      }),
    );
    return d;
  }
}
