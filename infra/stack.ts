import { CfnOutput, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secrets from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import { createTableInput, mainTable } from '../shared/platform/db/table';
import { LoupeApi } from './constructs/api';
import { functionArnOf, LoupeFunction } from './constructs/function';
import { LoupeWorkers } from './constructs/workers';
import { type FunctionEntry, functionEntries } from './functions';
import { acknowledgeNagFindings } from './nag';

export interface LoupeStackProps extends StackProps {
  /** Directory with the prebuilt bundles `<kind>/<name>/index.mjs` (infra/bundling.ts). */
  bundleRoot: string;
  /** Functions to deploy; all of the manifests by default. */
  functions?: FunctionEntry[];
  /** Public base URL when the API sits behind a custom domain (else the stage URL). */
  publicUrl?: string;
  logRetention?: logs.RetentionDays;
  throttlingRateLimit?: number;
  throttlingBurstLimit?: number;
}

/**
 * Loupe on AWS: the REST API and one Lambda per endpoint group and per worker (both from the
 * manifests), the single DynamoDB table, the KMS key for application-level secret encryption,
 * SQS queues for queue workers, EventBridge Scheduler, and the model-provider key secret.
 */
export class LoupeStack extends Stack {
  readonly api: LoupeApi;
  readonly table: dynamodb.Table;
  readonly key: kms.Key;
  readonly workers: LoupeWorkers;
  readonly modelKey: secrets.Secret;
  readonly functions = new Map<string, LoupeFunction>();

  constructor(scope: Construct, id: string, props: LoupeStackProps) {
    super(scope, id, props);
    const fns = props.functions ?? functionEntries();
    const logRetention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;

    this.key = new kms.Key(this, 'Key', {
      description: 'Loupe: envelope encryption of stored secrets (connection passwords, credentials)',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.table = mainTableOf(this);
    this.modelKey = new secrets.Secret(this, 'ModelKey', {
      description:
        'Loupe: API key of the model provider (OpenAI-compatible); set the real value after deploy',
    });
    const modelKey = this.modelKey;

    // Functions first: the API and the workers route to them; names are fixed so ARNs need no references.
    for (const fn of fns)
      this.functions.set(
        `${fn.kind}/${fn.name}`,
        new LoupeFunction(this, fn.kind === 'http' ? `Http-${fn.name}` : `Worker-${fn.name}`, {
          fn,
          bundleRoot: props.bundleRoot,
          environment: {},
          logRetention,
        }),
      );
    const fnOf = (fn: FunctionEntry) => this.functions.get(`${fn.kind}/${fn.name}`)!;
    const workerFns = fns.filter((f) => f.kind === 'workers');
    const httpFns = fns.filter((f) => f.kind === 'http');

    this.workers = new LoupeWorkers(this, 'Workers', {
      workers: workerFns.map((f) => ({
        worker: f.worker,
        function: fnOf(f).function,
        timeoutSeconds: fnOf(f).timeoutSeconds,
        arn: functionArnOf(this, f),
      })),
    });
    this.api = new LoupeApi(this, 'Http', {
      functions: httpFns.map((f) => ({
        group: f.group,
        function: fnOf(f).function,
        timeoutSeconds: fnOf(f).timeoutSeconds,
      })),
      logRetention,
      throttlingRateLimit: props.throttlingRateLimit ?? 100,
      throttlingBurstLimit: props.throttlingBurstLimit ?? 200,
    });

    const queueUrls = Object.fromEntries(
      [...this.workers.queues].map(([name, q]) => [name, q.queue.queueUrl]),
    );
    const workerArns = Object.fromEntries(workerFns.map((f) => [f.name, functionArnOf(this, f)]));
    const environment: Record<string, string> = {
      LOUPE_TABLE_NAME: this.table.tableName,
      LOUPE_KMS_KEY_ID: this.key.keyArn,
      LOUPE_QUEUE_URLS: this.toJsonString(queueUrls),
      LOUPE_SCHEDULER_GROUP: this.workers.scheduleGroupName,
      LOUPE_SCHEDULER_ROLE_ARN: this.workers.schedulerRole.roleArn,
      LOUPE_WORKER_ARNS: this.toJsonString(workerArns),
      LOUPE_OPENAI_SECRET_ARN: modelKey.secretArn,
      LOUPE_PUBLIC_URL: props.publicUrl ?? this.api.url,
    };

    const queueArns = [...this.workers.queues.values()].map((q) => q.queue.queueArn);
    for (const fn of fns) {
      const f = fnOf(fn);
      for (const [k, v] of Object.entries(environment)) f.function.addEnvironment(k, v);
      const statements = [
        new iam.PolicyStatement({
          sid: 'Table',
          actions: [
            'dynamodb:GetItem',
            'dynamodb:BatchGetItem',
            'dynamodb:Query',
            'dynamodb:PutItem',
            'dynamodb:UpdateItem',
            'dynamodb:DeleteItem',
            'dynamodb:BatchWriteItem',
            'dynamodb:ConditionCheckItem',
            'dynamodb:DescribeTable',
          ],
          resources: [this.table.tableArn, `${this.table.tableArn}/index/*`],
        }),
        secretsKeyStatement(this.key, kmsContextOf[`${fn.kind}/${fn.name}`]),
        new iam.PolicyStatement({
          sid: 'ModelKey',
          actions: ['secretsmanager:GetSecretValue'],
          resources: [modelKey.secretArn],
        }),
        new iam.PolicyStatement({
          sid: 'Schedules',
          actions: ['scheduler:CreateSchedule', 'scheduler:UpdateSchedule', 'scheduler:DeleteSchedule'],
          resources: [this.workers.runtimeScheduleArns],
        }),
        new iam.PolicyStatement({
          sid: 'PassSchedulerRole',
          actions: ['iam:PassRole'],
          resources: [this.workers.schedulerRole.roleArn],
          conditions: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
        }),
      ];
      if (queueArns.length)
        statements.push(
          new iam.PolicyStatement({ sid: 'Enqueue', actions: ['sqs:SendMessage'], resources: queueArns }),
        );
      for (const s of statements) f.role.addToPolicy(s);
    }

    new CfnOutput(this, 'ApiUrl', { value: `${this.api.url}/`, description: 'Base URL of the Loupe API' });
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'KmsKeyId', { value: this.key.keyId });
    new CfnOutput(this, 'ModelKeySecretArn', {
      value: modelKey.secretArn,
      description: 'Put the model provider API key here (aws secretsmanager put-secret-value)',
    });

    acknowledgeNagFindings(this);
  }
}

/**
 * Functions whose use of the secrets key is limited to one kind of secret through the encryption
 * context (kms:EncryptionContext conditions): the value is the context's `purpose` and the other keys
 * the context must carry, exactly. The other functions keep the general grant until per-function
 * policies arrive.
 */
const kmsContextOf: Record<string, { purpose: string; keys: string[] } | undefined> = {
  'http/workflow-credentials': { purpose: 'workflow-credential', keys: ['orgId', 'credentialId'] },
  'http/webhooks': { purpose: 'webhook-signing-secret', keys: ['orgId', 'webhookEndpointId'] },
  'workers/webhook-deliver': { purpose: 'webhook-signing-secret', keys: ['orgId', 'webhookEndpointId'] },
};

function secretsKeyStatement(key: kms.Key, context?: { purpose: string; keys: string[] }) {
  return new iam.PolicyStatement({
    sid: 'SecretsKey',
    actions: ['kms:Encrypt', 'kms:Decrypt', 'kms:GenerateDataKey'],
    resources: [key.keyArn],
    conditions: context && {
      StringEquals: { 'kms:EncryptionContext:purpose': context.purpose },
      'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': [...context.keys, 'purpose'] },
      Null: Object.fromEntries(context.keys.map((k) => [`kms:EncryptionContext:${k}`, 'false'])),
    },
  });
}

/** The table of shared/platform/db/table.ts: on demand, PITR, TTL, its indexes, retained on delete. */
function mainTableOf(stack: Stack): dynamodb.Table {
  const def = createTableInput('unused');
  const typeOf = (name: string) => {
    const t = def.AttributeDefinitions.find((a) => a.AttributeName === name)?.AttributeType;
    if (!t) throw new Error(`Table attribute ${name} has no definition`);
    return t as dynamodb.AttributeType;
  };
  const table = new dynamodb.Table(stack, 'Table', {
    partitionKey: { name: mainTable.partitionKey, type: typeOf(mainTable.partitionKey) },
    sortKey: { name: mainTable.sortKey, type: typeOf(mainTable.sortKey) },
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    timeToLiveAttribute: mainTable.ttlAttribute,
    // Secrets inside items are already envelope-encrypted with the stack's KMS key by the application;
    // the table itself uses the AWS-managed DynamoDB key (no per-request KMS permissions on callers).
    encryption: dynamodb.TableEncryption.AWS_MANAGED,
    deletionProtection: true,
    removalPolicy: RemovalPolicy.RETAIN,
  });
  for (const ix of mainTable.indexes)
    table.addGlobalSecondaryIndex({
      indexName: ix.name,
      partitionKey: { name: ix.partitionKey, type: typeOf(ix.partitionKey) },
      sortKey: { name: ix.sortKey, type: typeOf(ix.sortKey) },
      projectionType: dynamodb.ProjectionType.ALL,
    });
  return table;
}
