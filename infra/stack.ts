import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { ArnFormat, CfnOutput, RemovalPolicy, SecretValue, Stack, type StackProps } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secrets from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import { MODEL_SECRET_PLACEHOLDER } from '../shared/ai/secret';
import { createTableInput, mainTable } from '../shared/platform/db/table';
import { type Need, runsInVpc } from '../shared/platform/needs';
import { LoupeApi } from './constructs/api';
import { LoupeConsole } from './constructs/console';
import { functionArnOf, LoupeFunction } from './constructs/function';
import { LoupeMonitoring } from './constructs/monitoring';
import { LoupeWorkers, visibilityTimeoutOf } from './constructs/workers';
import { bundleDirOf, type FunctionEntry, functionEntries } from './functions';
import { acknowledgeNagFindings } from './nag';
import type { DeploymentSettings } from './settings';

export interface LoupeStackProps extends StackProps {
  /** Directory with the prebuilt bundles `<kind>/<name>/index.mjs` (infra/bundling.ts). */
  bundleRoot: string;
  /** Functions to deploy; all of the manifests by default. */
  functions?: FunctionEntry[];
  /** The built web console (console/dist); served by CloudFront under the API's origin when given. */
  consoleDir?: string;
  /** Deployment settings (infra/settings.ts); every one is optional. */
  settings?: Partial<Omit<DeploymentSettings, 'stackName'>>;
  logRetention?: logs.RetentionDays;
}

/** Where a shipped CA bundle lands inside every function's code (`/var/task` in Lambda). */
export const CA_BUNDLE_FILE = 'ca-bundle.pem';

/**
 * Loupe on AWS: the REST API and one Lambda per endpoint group and per worker (both from the
 * manifests), the single DynamoDB table, the KMS key for application-level secret encryption,
 * SQS queues for queue workers, EventBridge Scheduler, and the model-provider key secret. Each
 * function's IAM policy and network placement come from what its manifest entry declares it needs
 * (shared/platform/needs.ts).
 */
export class LoupeStack extends Stack {
  readonly api: LoupeApi;
  readonly console?: LoupeConsole;
  readonly table: dynamodb.Table;
  readonly key: kms.Key;
  readonly workers: LoupeWorkers;
  /** The stack's own model secret, absent when `modelSecretName` names an existing one. */
  readonly modelKey?: secrets.Secret;
  readonly modelSecretArn: string;
  readonly securityGroup?: ec2.SecurityGroup;
  readonly sqliteBucket?: string;
  readonly functions = new Map<string, LoupeFunction>();
  readonly monitoring: LoupeMonitoring;
  /** Active X-Ray tracing on the functions and the API stage. */
  readonly tracing: boolean;

  constructor(scope: Construct, id: string, props: LoupeStackProps) {
    super(scope, id, props);
    const fns = props.functions ?? functionEntries();
    const settings = props.settings ?? {};
    this.sqliteBucket = settings.sqliteBucket;
    const logRetention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;
    this.tracing = settings.tracing ?? true;
    const metricsNamespace = `Loupe/${this.stackName}`;

    this.key = new kms.Key(this, 'Key', {
      description: 'Loupe: envelope encryption of stored secrets (connection passwords, credentials)',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.table = mainTableOf(this);
    if (settings.modelSecretName) {
      // Bring your own secret: granted by name (Secrets Manager appends six random characters).
      this.modelSecretArn = this.formatArn({
        service: 'secretsmanager',
        resource: 'secret',
        resourceName: `${settings.modelSecretName}-??????`,
        arnFormat: ArnFormat.COLON_RESOURCE_NAME,
      });
    } else {
      this.modelKey = new secrets.Secret(this, 'ModelKey', {
        description:
          'Loupe: API key of the model provider (OpenAI-compatible). Starts as a placeholder that means "not configured"; put the real value after deploy.',
        // Without a value CloudFormation would generate a random password, which the service would
        // take for a key (the provider then answers 401). The placeholder is read as "not configured".
        secretStringValue: SecretValue.unsafePlainText(MODEL_SECRET_PLACEHOLDER),
      });
      this.modelSecretArn = this.modelKey.secretArn;
    }

    const vpc = settings.vpc ? vpcOf(this, settings.vpc) : undefined;
    this.securityGroup = vpc?.ownGroup;
    if (settings.caBundlePath)
      for (const fn of fns)
        copyFileSync(settings.caBundlePath, join(bundleDirOf(props.bundleRoot, fn), CA_BUNDLE_FILE));

    // Functions first: the API and the workers route to them; names are fixed so ARNs need no references.
    for (const fn of fns) {
      const def = fn.kind === 'http' ? fn.group : fn.worker;
      const inVpc = !!vpc && runsInVpc(def);
      this.functions.set(
        `${fn.kind}/${fn.name}`,
        new LoupeFunction(this, fn.kind === 'http' ? `Http-${fn.name}` : `Worker-${fn.name}`, {
          fn,
          bundleRoot: props.bundleRoot,
          environment: {},
          logRetention,
          reservedConcurrency: settings.reservedConcurrency?.[fn.name],
          tracing: this.tracing,
          vpc: inVpc ? vpc : undefined,
        }),
      );
    }
    const fnOf = (fn: FunctionEntry) => this.functions.get(`${fn.kind}/${fn.name}`)!;
    const workerFns = fns.filter((f) => f.kind === 'workers');
    const httpFns = fns.filter((f) => f.kind === 'http');

    this.workers = new LoupeWorkers(this, 'Workers', {
      workers: workerFns.map((f) => ({
        worker: f.worker,
        function: fnOf(f).function,
        timeoutSeconds: fnOf(f).timeoutSeconds,
        arn: functionArnOf(this, f),
        maxConcurrency: settings.maxConcurrency?.[f.name],
      })),
    });
    this.api = new LoupeApi(this, 'Http', {
      functions: httpFns.map((f) => ({
        group: f.group,
        function: fnOf(f).function,
        timeoutSeconds: fnOf(f).timeoutSeconds,
      })),
      logRetention,
      throttlingRateLimit: settings.throttlingRateLimit ?? 100,
      throttlingBurstLimit: settings.throttlingBurstLimit ?? 200,
      tracing: this.tracing,
    });

    const queueUrls = Object.fromEntries(
      [...this.workers.queues].map(([name, q]) => [name, q.queue.queueUrl]),
    );
    const workerArns = Object.fromEntries(workerFns.map((f) => [f.name, functionArnOf(this, f)]));
    const environment: Record<string, string> = {
      ...(settings.environment ?? {}),
      LOUPE_TABLE_NAME: this.table.tableName,
      LOUPE_KMS_KEY_ID: this.key.keyArn,
      LOUPE_QUEUE_URLS: this.toJsonString(queueUrls),
      LOUPE_SCHEDULER_GROUP: this.workers.scheduleGroupName,
      LOUPE_SCHEDULER_ROLE_ARN: this.workers.schedulerRole.roleArn,
      LOUPE_WORKER_ARNS: this.toJsonString(workerArns),
      LOUPE_OPENAI_SECRET_ARN: settings.modelSecretName ?? this.modelSecretArn,
      LOUPE_PUBLIC_URL: settings.publicUrl ?? this.api.url,
      POWERTOOLS_METRICS_NAMESPACE: metricsNamespace,
      LOUPE_TRACING: this.tracing ? 'on' : 'off',
    };
    if (settings.basePath) environment.LOUPE_BASE_PATH = settings.basePath;
    if (settings.sqliteBucket) environment.LOUPE_SQLITE_BUCKET = settings.sqliteBucket;
    if (settings.sesIdentity) environment.LOUPE_SES_IDENTITY = settings.sesIdentity;
    if (settings.caBundlePath) environment.NODE_EXTRA_CA_CERTS = `/var/task/${CA_BUNDLE_FILE}`;

    for (const fn of fns) {
      const f = fnOf(fn);
      for (const [k, v] of Object.entries(environment)) f.function.addEnvironment(k, v);
      for (const s of this.policyFor(fn, settings)) f.role.addToPolicy(s);
    }

    this.monitoring = new LoupeMonitoring(this, 'Monitoring', {
      namespace: metricsNamespace,
      functions: fns.map((f) => ({
        name: `${f.kind === 'http' ? 'http' : 'worker'}-${f.name}`,
        function: fnOf(f).function,
      })),
      queues: workerFns.flatMap((f) => {
        const queues = this.workers.queues.get(f.name);
        return queues
          ? [
              {
                worker: f.worker,
                queues,
                visibilitySeconds: visibilityTimeoutOf(f.worker, fnOf(f).timeoutSeconds),
              },
            ]
          : [];
      }),
      api: this.api.api,
      table: this.table,
      scheduleGroupName: this.workers.scheduleGroupName,
      alarmEmail: settings.alarmEmail,
    });

    new CfnOutput(this, 'ApiUrl', { value: `${this.api.url}/`, description: 'Base URL of the Loupe API' });
    if (props.consoleDir) {
      this.console = new LoupeConsole(this, 'Console', { api: this.api.api, consoleDir: props.consoleDir });
      new CfnOutput(this, 'ConsoleUrl', {
        value: this.console.url,
        description: 'The web console (its API is the same origin + /v1)',
      });
    }
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'AlarmTopicArn', {
      value: this.monitoring.topic.topicArn,
      description: 'SNS topic every alarm notifies (subscribe more endpoints to it; alarmEmail adds one)',
    });
    new CfnOutput(this, 'DashboardName', { value: `${this.stackName}-service` });
    new CfnOutput(this, 'KmsKeyId', { value: this.key.keyId });
    new CfnOutput(this, 'ModelKeySecretArn', {
      value: settings.modelSecretName ?? this.modelSecretArn,
      description: 'Put the model provider API key here (aws secretsmanager put-secret-value)',
    });

    acknowledgeNagFindings(this);
  }

  /** The statements of one function's policy: the table for all, the rest from its declared needs. */
  private policyFor(fn: FunctionEntry, settings: Partial<DeploymentSettings>): iam.PolicyStatement[] {
    const def = fn.kind === 'http' ? fn.group : fn.worker;
    const needs = new Set<Need>(def.needs ?? []);
    // Every key a function encrypts or decrypts with names the organization it belongs to.
    const orgContext = { Null: { 'kms:EncryptionContext:orgId': 'false' } };
    const out = [
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
    ];
    if (needs.has('decrypt'))
      out.push(
        new iam.PolicyStatement({
          sid: 'DecryptSecrets',
          actions: ['kms:Decrypt'],
          resources: [this.key.keyArn],
          conditions: orgContext,
        }),
      );
    if (needs.has('encrypt'))
      out.push(
        new iam.PolicyStatement({
          sid: 'EncryptSecrets',
          actions: ['kms:GenerateDataKey'],
          resources: [this.key.keyArn],
          conditions: orgContext,
        }),
      );
    if (needs.has('model'))
      out.push(
        new iam.PolicyStatement({
          sid: 'ModelKey',
          actions: ['secretsmanager:GetSecretValue'],
          resources: [this.modelSecretArn],
        }),
      );
    if (needs.has('schedules'))
      out.push(
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
      );
    if (needs.has('sqlite') && settings.sqliteBucket)
      out.push(
        new iam.PolicyStatement({
          sid: 'SqliteObjects',
          actions: ['s3:GetObject'],
          // Objects live at <bucket>/<orgId>/…; the code checks the caller's own prefix.
          resources: [`arn:${this.partition}:s3:::${settings.sqliteBucket}/*/*`],
        }),
      );
    if (needs.has('mail') && settings.sesIdentity)
      out.push(
        new iam.PolicyStatement({
          sid: 'SendMail',
          // The mail port sends a raw MIME message through SES v2 SendEmail; grant both actions so either
          // authorization path SES applies to raw content succeeds, on this one identity only.
          actions: ['ses:SendEmail', 'ses:SendRawEmail'],
          resources: [
            this.formatArn({ service: 'ses', resource: 'identity', resourceName: settings.sesIdentity }),
          ],
        }),
      );
    const queues = (def.enqueues ?? []).map((name) => {
      const q = this.workers.queues.get(name);
      if (!q)
        throw new Error(`Function ${fn.kind}/${fn.name} enqueues to "${name}", which is not a queue worker.`);
      return q.queue.queueArn;
    });
    if (queues.length)
      out.push(new iam.PolicyStatement({ sid: 'Enqueue', actions: ['sqs:SendMessage'], resources: queues }));
    return out;
  }
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

/** The VPC a deployment names: its subnets, and its security groups or one of the stack's own. */
export interface FunctionVpc {
  vpc: ec2.IVpc;
  subnets: ec2.ISubnet[];
  securityGroups: ec2.ISecurityGroup[];
  ownGroup?: ec2.SecurityGroup;
}

/**
 * Imports the VPC by id and subnets by id (no lookup: `cdk synth` stays offline). Without security
 * groups the stack makes one that allows all outbound traffic (databases on any port, HTTPS) and no
 * inbound. Outbound traffic to AWS APIs and the internet leaves through the subnets' routes: a NAT
 * gateway, or VPC endpoints for the AWS services (see the README).
 */
function vpcOf(stack: Stack, s: NonNullable<DeploymentSettings['vpc']>): FunctionVpc {
  const vpc = ec2.Vpc.fromVpcAttributes(stack, 'Vpc', {
    vpcId: s.vpcId,
    // Unused for placement (subnets are given by id), required by the import.
    availabilityZones: stack.availabilityZones,
  });
  const subnets = s.subnetIds.map((id, i) => ec2.Subnet.fromSubnetId(stack, `Subnet${i}`, id));
  if (s.securityGroupIds.length)
    return {
      vpc,
      subnets,
      securityGroups: s.securityGroupIds.map((id, i) =>
        ec2.SecurityGroup.fromSecurityGroupId(stack, `SecurityGroup${i}`, id),
      ),
    };
  const ownGroup = new ec2.SecurityGroup(stack, 'FunctionsSecurityGroup', {
    vpc,
    description:
      'Loupe functions: outbound to customer databases, HTTPS destinations and AWS APIs; no inbound',
    allowAllOutbound: true,
  });
  return { vpc, subnets, securityGroups: [ownGroup], ownGroup };
}
