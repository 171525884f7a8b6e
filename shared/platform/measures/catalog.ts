/**
 * Loupe's own measures, one list for both runtimes: in AWS each is a CloudWatch metric (embedded metric
 * format, namespace `Loupe/<stack>`, named `emf`, its labels as dimensions besides `service`); locally a
 * Prometheus counter or histogram (named `prom`, the same labels). Durations are recorded in
 * milliseconds and shown in seconds to Prometheus (its convention). Labels take a few known values only
 * (never an id, a user or an organization): every distinct combination is one CloudWatch metric.
 * The alarms and the dashboard (infra/constructs/monitoring.ts) read these names from here.
 */
export interface MeasureDef {
  kind: 'counter' | 'histogram';
  /** CloudWatch metric name. */
  emf: string;
  /** Prometheus name (`_total` for counters, the unit for histograms). */
  prom: string;
  unit: 'count' | 'ms' | 'cents';
  help: string;
  labels: readonly string[];
  /** Histogram bucket bounds in the recorded unit (ms), ascending. */
  buckets?: readonly number[];
}

const DURATION_BUCKETS_MS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 25_000] as const;
const DELAY_BUCKETS_MS = [1000, 5000, 15_000, 30_000, 60_000, 120_000, 300_000, 900_000, 3_600_000] as const;

export const MEASURES = {
  queriesRun: {
    kind: 'counter',
    emf: 'QueriesRun',
    prom: 'loupe_queries_run_total',
    unit: 'count',
    help: 'Read-only statements that reached a database, by where they came from and how they ended (success, failed, timeout).',
    labels: ['source', 'outcome'],
  },
  queriesRefused: {
    kind: 'counter',
    emf: 'QueriesRefused',
    prom: 'loupe_queries_refused_total',
    unit: 'count',
    help: 'Statements the read-only guard refused before they reached a database, by where they came from.',
    labels: ['source'],
  },
  queryDuration: {
    kind: 'histogram',
    emf: 'QueryDuration',
    prom: 'loupe_query_duration_seconds',
    unit: 'ms',
    help: 'Time of one statement on the database (connect included), whatever its outcome.',
    labels: [],
    buckets: DURATION_BUCKETS_MS,
  },
  chatRequests: {
    kind: 'counter',
    emf: 'ChatRequests',
    prom: 'loupe_chat_requests_total',
    unit: 'count',
    help: 'Chat questions answered or failed (the model or the tools failing).',
    labels: ['outcome'],
  },
  aiTokens: {
    kind: 'counter',
    emf: 'AiTokens',
    prom: 'loupe_ai_tokens_total',
    unit: 'count',
    help: 'Model tokens used, by feature (chat, schema_summary, auto_annotation, schema_embedding, chat_embedding) and kind (prompt, completion).',
    labels: ['feature', 'kind'],
  },
  aiSpend: {
    kind: 'counter',
    emf: 'AiSpendCents',
    prom: 'loupe_ai_spend_cents_total',
    unit: 'cents',
    help: 'Cost of model calls charged to balances, in US cents, by feature.',
    labels: ['feature'],
  },
  workflowRuns: {
    kind: 'counter',
    emf: 'WorkflowRuns',
    prom: 'loupe_workflow_runs_total',
    unit: 'count',
    help: 'Workflow runs that ended, by trigger (SCHEDULE, MANUAL, ACTION_TEST) and status.',
    labels: ['trigger', 'outcome'],
  },
  scheduledRunDelay: {
    kind: 'histogram',
    emf: 'ScheduledRunStartDelay',
    prom: 'loupe_scheduled_run_start_delay_seconds',
    unit: 'ms',
    help: 'Time from a scheduled run’s due time to its start.',
    labels: [],
    buckets: DELAY_BUCKETS_MS,
  },
  scheduledRunsLate: {
    kind: 'counter',
    emf: 'ScheduledRunsLate',
    prom: 'loupe_scheduled_runs_late_total',
    unit: 'count',
    help: 'Scheduled runs that started later than LOUPE_SCHEDULE_LATE_MS after their due time.',
    labels: [],
  },
  scheduledRunsMissed: {
    kind: 'counter',
    emf: 'MissedScheduledRuns',
    prom: 'loupe_scheduled_runs_missed_total',
    unit: 'count',
    help: 'Scheduled workflow due times with no run recorded LOUPE_SCHEDULE_LATE_MS after them, found by the workflow sweep, by cause: not_started (never invoked: schedule lost or disabled, invocation dropped), abandoned (claimed by a runner that stopped before starting the run).',
    labels: ['cause'],
  },
  webhookDeliveries: {
    kind: 'counter',
    emf: 'WebhookDeliveries',
    prom: 'loupe_webhook_deliveries_total',
    unit: 'count',
    help: 'Event webhook delivery attempts by outcome: delivered, retrying (failed, another attempt queued), failed (no attempt left).',
    labels: ['outcome'],
  },
  approvals: {
    kind: 'counter',
    emf: 'Approvals',
    prom: 'loupe_approvals_total',
    unit: 'count',
    help: 'Queries submitted for approval, by outcome: submitted (held), auto_approved (a read under write-only rules), approved, rejected, expired (unreviewed in time).',
    labels: ['outcome'],
  },
  rateLimited: {
    kind: 'counter',
    emf: 'RateLimited',
    prom: 'loupe_rate_limited_total',
    unit: 'count',
    help: 'Requests answered 429 by a Loupe rate limit: org (all routes), ai (chat and model routes), discovery (GET / per IP).',
    labels: ['limit'],
  },
  awsErrors: {
    kind: 'counter',
    emf: 'AwsCallErrors',
    prom: 'loupe_aws_call_errors_total',
    unit: 'count',
    help: 'Failed calls to AWS KMS (GenerateDataKey, Decrypt) and Secrets Manager (GetSecretValue), by dependency and operation; a ciphertext that will never decrypt is not counted.',
    labels: ['dependency', 'operation'],
  },
  httpRequests: {
    kind: 'counter',
    emf: 'HttpRequests',
    prom: 'loupe_http_requests_total',
    unit: 'count',
    help: 'Local runtime only (API Gateway counts them in AWS): API requests by endpoint group and status code.',
    labels: ['group', 'code'],
  },
  httpDuration: {
    kind: 'histogram',
    emf: 'HttpDuration',
    prom: 'loupe_http_request_duration_seconds',
    unit: 'ms',
    help: 'Local runtime only (API Gateway measures Latency in AWS): time to answer an API request, by endpoint group.',
    labels: ['group'],
    buckets: DURATION_BUCKETS_MS,
  },
} as const satisfies Record<string, MeasureDef>;

export type MeasureName = keyof typeof MEASURES;
export type CounterName = {
  [K in MeasureName]: (typeof MEASURES)[K]['kind'] extends 'counter' ? K : never;
}[MeasureName];
export type HistogramName = Exclude<MeasureName, CounterName>;
/** The labels a measure takes, each a short string from a known set. */
export type LabelsOf<K extends MeasureName> = Record<(typeof MEASURES)[K]['labels'][number], string>;
