import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import type { Method } from 'aws-cdk-lib/aws-apigateway';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleFunctions } from '../../infra/bundling';
import { resourcePaths, STAGE } from '../../infra/constructs/api';
import { DEFAULT_TIMEOUT_SECONDS } from '../../infra/constructs/function';
import { type FunctionEntry, functionEntries } from '../../infra/functions';
import { LoupeStack } from '../../infra/stack';
import { MODEL_SECRET_PLACEHOLDER, parseModelSecret } from '../../shared/ai/secret';
import { passwordContext } from '../../shared/connections/target';
import { credentialContext } from '../../shared/credentials/store';
import { groupFor, type HttpGroup, httpGroups } from '../../shared/http/groups';
import { mainTable } from '../../shared/platform/db/table';
import type { WorkerDef } from '../../shared/platform/workers';
import { secretContext as webhookSecretContext } from '../../shared/webhooks/signing';
import { sharedBundles } from '../support/bundles';

// The manifests may not yet declare a streaming group, a queue worker or a scheduled worker; these
// fixtures make sure the stack's handling of each is synthesized and checked regardless.
const streamGroup: HttpGroup = {
  name: 'fixture-stream',
  prefixes: ['/fixture-stream'],
  streaming: true,
  timeoutSeconds: 300,
  needs: ['decrypt', 'model', 'schedules', 'databases'],
  enqueues: ['fixture-queue'],
};
const queueWorker: WorkerDef = {
  name: 'fixture-queue',
  queue: { visibilityTimeoutSeconds: 45, maxReceiveCount: 4, batchSize: 20, maxConcurrency: 3 },
  timeoutSeconds: 30,
  needs: ['encrypt', 'decrypt', 'internet'],
};
const scheduledWorker: WorkerDef = {
  name: 'fixture-scheduled',
  schedule: { expression: 'rate(5 minutes)', payload: { task: 'sweep' } },
};
const fixtures: FunctionEntry[] = [
  { kind: 'http', name: streamGroup.name, entry: 'test/infra/fixtures/stream-group.ts', group: streamGroup },
  {
    kind: 'workers',
    name: queueWorker.name,
    entry: 'test/infra/fixtures/queue-worker.ts',
    worker: queueWorker,
  },
  {
    kind: 'workers',
    name: scheduledWorker.name,
    entry: 'test/infra/fixtures/scheduled-worker.ts',
    worker: scheduledWorker,
  },
];

const manifest = functionEntries();
const all = [...manifest, ...fixtures];
let bundleRoot: string;
let consoleDir: string;
let stack: LoupeStack;
let template: Template;

type Resource = { Type: string; Properties: Record<string, any>; DeletionPolicy?: string };
const resourcesOf = (type: string) => Object.entries(template.findResources(type)) as [string, Resource][];
/** The service's functions (without CDK's bucket deployment function of the console). */
const serviceFunctions = () =>
  resourcesOf('AWS::Lambda::Function').filter(([id]) => !id.startsWith('CustomCDKBucketDeployment'));
/** The statements of one function's own policy. */
const statementsOf = (f: FunctionEntry): any[] => {
  const role = stack.functions.get(`${f.kind}/${f.name}`)!.role;
  const policy = template.toJSON().Resources[logicalId(role.node.findChild('DefaultPolicy') as never)];
  return policy.Properties.PolicyDocument.Statement;
};
const logicalId = (c: { node: { defaultChild?: unknown } }) =>
  stack.getLogicalId(c.node.defaultChild as never);

beforeAll(async () => {
  bundleRoot = mkdtempSync(join(tmpdir(), 'loupe-bundles-'));
  // The manifest's bundles are built once per run (test/support/bundles.ts); the fixtures here.
  await sharedBundles(bundleRoot);
  // Routing reads the manifest (groupFor), so the fixture group joins it for this test process, after
  // the manifest's own bundles (sharedBundles lists the manifest, which has no file for the fixture).
  httpGroups.push(streamGroup);
  await bundleFunctions(fixtures, bundleRoot);
  // A stand-in for console/dist (the stack only uploads the folder).
  consoleDir = mkdtempSync(join(tmpdir(), 'loupe-console-dist-'));
  mkdirSync(join(consoleDir, 'assets'));
  writeFileSync(
    join(consoleDir, 'index.html'),
    '<!doctype html><script type="module" src="/assets/a.js"></script>',
  );
  writeFileSync(join(consoleDir, 'assets', 'a.js'), 'console.log(1)');
  stack = new LoupeStack(new App(), 'LoupeTest', { bundleRoot, consoleDir, functions: all });
  template = Template.fromStack(stack);
}, 600_000); // bundling every function takes minutes on a loaded 2-core machine

afterAll(() => {
  httpGroups.splice(httpGroups.indexOf(streamGroup), 1);
  if (bundleRoot) rmSync(bundleRoot, { recursive: true, force: true });
  if (consoleDir) rmSync(consoleDir, { recursive: true, force: true });
}, 300_000); // bundles all 21 functions: a minute or more on a busy 2-core machine

describe('functions', () => {
  it('creates one nodejs24.x arm64 function per HTTP group and worker, named after it', () => {
    const fns = serviceFunctions();
    expect(fns).toHaveLength(all.length);
    for (const f of all) {
      const kind = f.kind === 'http' ? 'http' : 'worker';
      const match = fns.find(([, r]) => r.Properties.FunctionName === `LoupeTest-${kind}-${f.name}`);
      expect(match, `${f.kind}/${f.name}`).toBeDefined();
      expect(match![1].Properties).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
      });
    }
  });

  it('gives every function the runtime configuration the service reads', () => {
    for (const [, r] of serviceFunctions()) {
      const env = r.Properties.Environment.Variables;
      for (const name of [
        'LOUPE_TABLE_NAME',
        'LOUPE_KMS_KEY_ID',
        'LOUPE_QUEUE_URLS',
        'LOUPE_SCHEDULER_GROUP',
        'LOUPE_SCHEDULER_ROLE_ARN',
        'LOUPE_WORKER_ARNS',
        'LOUPE_OPENAI_SECRET_ARN',
        'LOUPE_PUBLIC_URL',
        'POWERTOOLS_SERVICE_NAME',
      ])
        expect(env[name], `${r.Properties.FunctionName} ${name}`).toBeDefined();
      // No --enable-source-maps: it cost ~30 ms of every cold start (see NODE_FLAGS in infra/bundling.ts).
      expect(env.NODE_OPTIONS).toBeUndefined();
      expect(env.LOUPE_RUNTIME).toBe('aws');
    }
  });

  it("tells functions each worker's ARN by the worker function's real name", () => {
    const [, fn] = serviceFunctions()[0];
    const arns = stack.resolve(fn.Properties.Environment.Variables.LOUPE_WORKER_ARNS);
    const text = JSON.stringify(arns);
    for (const w of [queueWorker, scheduledWorker])
      expect(text).toContain(`:function:LoupeTest-worker-${w.name}`);
  });

  it("keeps every function's environment under Lambda's 4 KB limit, with generous token sizes", () => {
    // Pseudo parameters at their longest, every other reference as a 100-character value.
    const pseudo: Record<string, string> = {
      'AWS::Region': 'ap-southeast-2',
      'AWS::AccountId': '123456789012',
      'AWS::Partition': 'aws-us-gov',
      'AWS::URLSuffix': 'amazonaws.com.cn',
    };
    const render = (v: unknown): string => {
      if (typeof v === 'string') return v;
      const o = v as Record<string, any>;
      if (o.Ref) return pseudo[o.Ref] ?? 'x'.repeat(100);
      if (o['Fn::GetAtt']) return 'x'.repeat(100);
      if (o['Fn::Join']) return (o['Fn::Join'][1] as unknown[]).map(render).join(o['Fn::Join'][0]);
      throw new Error(`unexpected value ${JSON.stringify(v)}`);
    };
    for (const [, r] of serviceFunctions()) {
      const env = r.Properties.Environment.Variables as Record<string, unknown>;
      const bytes = Object.entries(env).reduce((n, [k, v]) => n + k.length + render(v).length, 0);
      expect(bytes, r.Properties.FunctionName).toBeLessThan(4096);
    }
  });

  it('gives every function its own log group with retention', () => {
    const groups = resourcesOf('AWS::Logs::LogGroup');
    for (const f of all) {
      const kind = f.kind === 'http' ? 'http' : 'worker';
      const g = groups.find(
        ([, r]) => r.Properties.LogGroupName === `/aws/lambda/LoupeTest-${kind}-${f.name}`,
      );
      expect(g, f.name).toBeDefined();
      expect(g![1].Properties.RetentionInDays).toBeGreaterThan(0);
    }
  });

  it('grants KMS only to functions that declare it: Decrypt and GenerateDataKey with an organization context, never Encrypt', () => {
    const keyId = logicalId(stack.key);
    for (const f of all) {
      const def = f.kind === 'http' ? f.group : f.worker;
      const kms = statementsOf(f).filter((s) => [s.Action].flat().some((a: string) => a.startsWith('kms:')));
      const actions = kms.flatMap((s) => [s.Action].flat()).sort();
      const wanted = [
        ...(def.needs?.includes('decrypt') ? ['kms:Decrypt'] : []),
        ...(def.needs?.includes('encrypt') ? ['kms:GenerateDataKey'] : []),
      ].sort();
      expect(actions, f.name).toEqual(wanted);
      for (const st of kms) {
        expect(st.Resource).toEqual({ 'Fn::GetAtt': [keyId, 'Arn'] });
        expect(st.Condition).toEqual({ Null: { 'kms:EncryptionContext:orgId': 'false' } });
      }
    }
    expect(JSON.stringify(template.toJSON())).not.toContain('kms:Encrypt"');
  });

  it("gives discovery's role the table and its own logs only (and X-Ray's writes): no KMS, secret, SQS or scheduler", () => {
    const actions = statementsOf(all.find((f) => f.name === 'discovery')!).flatMap((s) => [s.Action].flat());
    // Active tracing: CDK grants xray:PutTraceSegments and xray:PutTelemetryRecords (monitoring.test.ts).
    const tracing = ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'];
    expect(
      actions.filter(
        (a: string) => !a.startsWith('dynamodb:') && !a.startsWith('logs:') && !tracing.includes(a),
      ),
    ).toEqual([]);
  });

  it('encrypts every kind of stored secret with a context naming the organization (what the KMS condition requires)', () => {
    for (const context of [
      passwordContext('org-1', 'c'),
      credentialContext('org-1', 'k'),
      webhookSecretContext('org-1', 'e'),
    ])
      expect(context.orgId).toBe('org-1');
  });
});

describe('REST API', () => {
  it('deploys stage v1 with access logging, throttling and execution logging', () => {
    template.resourceCountIs('AWS::ApiGateway::RestApi', 1);
    template.hasResourceProperties('AWS::ApiGateway::Stage', {
      StageName: STAGE,
      AccessLogSetting: Match.objectLike({ DestinationArn: Match.anyValue(), Format: Match.anyValue() }),
      MethodSettings: Match.arrayWith([
        Match.objectLike({ LoggingLevel: 'ERROR', ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 }),
      ]),
    });
  });

  it('routes every path the way the local runtime does (groupFor)', () => {
    // API Gateway picks an exact resource, else the {proxy+} of the deepest existing ancestor.
    const routes = stack.api.routes;
    const resources = [...routes.keys()].filter((p) => !p.endsWith('{proxy+}'));
    const viaApi = (path: string) => {
      if (routes.has(path) && resources.includes(path)) return routes.get(path);
      const parent = resources
        .filter((r) => r === '/' || path.startsWith(`${r}/`))
        .sort((a, b) => b.length - a.length)[0];
      return routes.get(`${parent === '/' ? '' : parent}/{proxy+}`);
    };
    const samples = ['/', '/nope', '/nope/deeper', '/openapi.json', '/.well-known/oauth-protected-resource'];
    for (const g of httpGroups)
      for (const p of g.prefixes)
        samples.push(p, `${p === '/' ? '' : p}/some-id`, `${p === '/' ? '' : p}/a/b/c`);
    for (const path of samples) expect(viaApi(path), path).toBe(groupFor(path).name);
    expect(resourcePaths(httpGroups).length * 2).toBe(routes.size);
  });

  it("sends each method to its group's function, streaming only for streaming groups", () => {
    const methods = stack.api.api.methods as Method[];
    expect(methods.length).toBe(stack.api.routes.size);
    const fnIds = new Map(
      [...stack.functions].map(([key, f]) => [key.replace(/^http\//, ''), logicalId(f.function)]),
    );
    let streamed = 0;
    for (const m of methods) {
      const group = stack.api.routes.get(m.resource.path)!;
      const integration = stack.resolve((m.node.defaultChild as any).integration);
      const uri = JSON.stringify(integration.uri);
      expect(uri, m.resource.path).toContain(fnIds.get(group));
      expect(integration.type).toBe('AWS_PROXY');
      const def = httpGroups.find((g) => g.name === group)!;
      if (def.streaming) {
        expect(integration.responseTransferMode).toBe('STREAM');
        expect(uri).toContain('/response-streaming-invocations');
        streamed++;
        expect(integration.timeoutInMillis).toBe(
          Math.min(def.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS.http, 900) * 1000,
        );
      } else {
        expect(integration.responseTransferMode).toBeUndefined();
        expect(uri).toContain('/invocations');
        expect(uri).not.toContain('response-streaming');
      }
    }
    // At least the fixture group's resource and its {proxy+} stream.
    expect(streamed).toBeGreaterThanOrEqual(2);
  });

  it("answers API Gateway's own errors in the envelope shape", () => {
    template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: 'THROTTLED',
      StatusCode: '429',
      ResponseTemplates: { 'application/json': Match.stringLikeRegexp('"code":"RATE_LIMITED"') },
    });
  });
});

describe('web console', () => {
  it('serves the console from a private bucket through CloudFront with origin access control and HTTPS', () => {
    template.hasResourceProperties('AWS::S3::Bucket', {
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
    });
    template.resourceCountIs('AWS::CloudFront::OriginAccessControl', 1);
    const [, dist] = resourcesOf('AWS::CloudFront::Distribution')[0];
    const config = dist.Properties.DistributionConfig;
    expect(config.DefaultRootObject).toBe('index.html');
    expect(config.DefaultCacheBehavior.ViewerProtocolPolicy).toBe('redirect-to-https');
    expect(config.ViewerCertificate?.MinimumProtocolVersion ?? 'TLSv1.2_2021').toBe('TLSv1.2_2021');
  });

  it('routes /v1/* and /.well-known/* to the API stage on the same origin, uncached, with every method', () => {
    const [, dist] = resourcesOf('AWS::CloudFront::Distribution')[0];
    const config = dist.Properties.DistributionConfig;
    const behaviors = config.CacheBehaviors as any[];
    expect(behaviors.map((b) => b.PathPattern).sort()).toEqual(['/.well-known/*', `/${STAGE}/*`]);
    const apiOrigin = (config.Origins as any[]).find((o) => o.CustomOriginConfig);
    expect(JSON.stringify(apiOrigin.DomainName)).toContain(logicalId(stack.api.api));
    expect(apiOrigin.CustomOriginConfig.OriginProtocolPolicy).toBe('https-only');
    for (const b of behaviors) {
      expect(b.TargetOriginId).toBe(apiOrigin.Id);
      expect(b.AllowedMethods).toEqual(expect.arrayContaining(['POST', 'PATCH', 'DELETE', 'PUT']));
      expect(b.CachePolicyId).toBe('4135ea2d-6df8-44a3-9df3-4b5a84be39ad'); // CachingDisabled
      expect(b.ViewerProtocolPolicy).toBe('https-only');
    }
  });

  it("sends the console's strict Content-Security-Policy and security headers", () => {
    template.hasResourceProperties('AWS::CloudFront::ResponseHeadersPolicy', {
      ResponseHeadersPolicyConfig: Match.objectLike({
        SecurityHeadersConfig: Match.objectLike({
          ContentSecurityPolicy: {
            ContentSecurityPolicy: Match.stringLikeRegexp("^default-src 'self'"),
            Override: true,
          },
          FrameOptions: { FrameOption: 'DENY', Override: true },
          ContentTypeOptions: { Override: true },
        }),
      }),
    });
  });

  it('uploads the built console and exports its URL', () => {
    template.resourceCountIs('Custom::CDKBucketDeployment', 1);
    expect(Object.keys(template.toJSON().Outputs)).toContain('ConsoleUrl');
  });
});

describe('data', () => {
  it('creates the table of table.ts: on demand, PITR, TTL, GSI, encrypted, retained', () => {
    const tables = resourcesOf('AWS::DynamoDB::Table');
    expect(tables).toHaveLength(1);
    const [, t] = tables[0];
    expect(t.DeletionPolicy).toBe('Retain');
    expect(t.Properties).toMatchObject({
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      TimeToLiveSpecification: { AttributeName: mainTable.ttlAttribute, Enabled: true },
      SSESpecification: { SSEEnabled: true },
      KeySchema: [
        { AttributeName: mainTable.partitionKey, KeyType: 'HASH' },
        { AttributeName: mainTable.sortKey, KeyType: 'RANGE' },
      ],
    });
    expect(t.Properties.GlobalSecondaryIndexes.map((i: { IndexName: string }) => i.IndexName)).toEqual(
      mainTable.indexes.map((i) => i.name),
    );
  });

  it('creates a retained KMS key with rotation', () => {
    template.hasResource('AWS::KMS::Key', {
      DeletionPolicy: 'Retain',
      Properties: { EnableKeyRotation: true },
    });
  });

  it('creates the model key secret holding the "not configured" placeholder, readable only by functions that call the model', () => {
    template.resourceCountIs('AWS::SecretsManager::Secret', 1);
    template.hasResourceProperties('AWS::SecretsManager::Secret', {
      SecretString: MODEL_SECRET_PLACEHOLDER,
      GenerateSecretString: Match.absent(),
    });
    expect(parseModelSecret(MODEL_SECRET_PLACEHOLDER)).toEqual({});
    const secretId = logicalId(stack.modelKey!);
    for (const f of all) {
      const def = f.kind === 'http' ? f.group : f.worker;
      const reads = statementsOf(f).some(
        (s) => s.Action === 'secretsmanager:GetSecretValue' && s.Resource?.Ref === secretId,
      );
      expect(reads, f.name).toBe(!!def.needs?.includes('model'));
    }
  });
});

describe('workers', () => {
  const queueWorkers = () => all.flatMap((f) => (f.kind === 'workers' && f.worker.queue ? [f.worker] : []));

  it('feeds every queue worker from an SSL-only encrypted queue with a dead-letter queue', () => {
    expect(queueWorkers().length).toBeGreaterThan(0);
    for (const w of queueWorkers()) {
      const { queue, deadLetters } = stack.workers.queues.get(w.name)!;
      const fn = stack.functions.get(`workers/${w.name}`)!;
      const q = template.toJSON().Resources[logicalId(queue)].Properties;
      expect(q.RedrivePolicy).toEqual({
        deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(deadLetters), 'Arn'] },
        maxReceiveCount: w.queue!.maxReceiveCount,
      });
      expect(q.SqsManagedSseEnabled).toBe(true);
      expect(q.VisibilityTimeout, w.name).toBeGreaterThanOrEqual(6 * fn.timeoutSeconds);
      expect(q.VisibilityTimeout, w.name).toBeGreaterThanOrEqual(w.queue!.visibilityTimeoutSeconds);
      expect(fn.timeoutSeconds, w.name).toBe(
        w.timeoutSeconds ?? Math.min(60, w.queue!.visibilityTimeoutSeconds),
      );
      for (const qq of [queue, deadLetters])
        template.hasResourceProperties('AWS::SQS::QueuePolicy', {
          Queues: [{ Ref: logicalId(qq) }],
          PolicyDocument: {
            Statement: Match.arrayWith([
              Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
            ]),
          },
        });
    }
  });

  it('maps each queue to its worker with partial batch failure reporting', () => {
    for (const w of queueWorkers()) {
      const { queue } = stack.workers.queues.get(w.name)!;
      const fn = stack.functions.get(`workers/${w.name}`)!;
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: { 'Fn::GetAtt': [logicalId(queue), 'Arn'] },
        FunctionName: { Ref: logicalId(fn.function) },
        BatchSize: w.queue!.batchSize,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      });
    }
  });

  it('lets a function send only to the queues it declares', () => {
    for (const f of all) {
      const def = f.kind === 'http' ? f.group : f.worker;
      const sends = statementsOf(f).filter((s) => s.Action === 'sqs:SendMessage');
      const wanted = (def.enqueues ?? []).map((n) => ({
        'Fn::GetAtt': [logicalId(stack.workers.queues.get(n)!.queue), 'Arn'],
      }));
      expect(
        sends.flatMap((s) => [s.Resource].flat()),
        f.name,
      ).toEqual(wanted);
    }
  });

  it("bounds each queue's concurrency: the manifest's maxConcurrency or 10", () => {
    for (const w of queueWorkers()) {
      const { queue } = stack.workers.queues.get(w.name)!;
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: { 'Fn::GetAtt': [logicalId(queue), 'Arn'] },
        ScalingConfig: { MaximumConcurrency: w.queue!.maxConcurrency ?? 10 },
      });
    }
  });

  it('schedules every scheduled worker through the scheduler group and role', () => {
    template.hasResourceProperties('AWS::Scheduler::ScheduleGroup', { Name: 'LoupeTest-schedules' });
    const scheduled = all.flatMap((f) => (f.kind === 'workers' && f.worker.schedule ? [f.worker] : []));
    template.resourceCountIs('AWS::Scheduler::Schedule', scheduled.length);
    for (const w of scheduled)
      template.hasResourceProperties('AWS::Scheduler::Schedule', {
        Name: `system-${w.name}`,
        GroupName: 'LoupeTest-schedules',
        ScheduleExpression: w.schedule!.expression,
        FlexibleTimeWindow: { Mode: 'OFF' },
        Target: Match.objectLike({
          Arn: Match.anyValue(),
          RoleArn: { 'Fn::GetAtt': [logicalId(stack.workers.schedulerRole), 'Arn'] },
          Input: JSON.stringify(w.schedule!.payload ?? {}),
        }),
      });
    for (const [, r] of resourcesOf('AWS::Scheduler::Schedule'))
      expect(JSON.stringify(r.Properties.Target.Arn)).toContain(
        `:function:LoupeTest-worker-${r.Properties.Name.replace(/^system-/, '')}"`,
      );
    template.hasResourceProperties('AWS::IAM::Role', {
      AssumeRolePolicyDocument: {
        Statement: [Match.objectLike({ Principal: { Service: 'scheduler.amazonaws.com' } })],
      },
    });
  });

  it('lets only functions that declare schedules manage run-time schedules and pass only the scheduler role', () => {
    const roleId = logicalId(stack.workers.schedulerRole);
    for (const f of all) {
      const def = f.kind === 'http' ? f.group : f.worker;
      const statements = statementsOf(f);
      const pass = statements.find((s) => s.Action === 'iam:PassRole');
      const sched = statements.find((s) => [s.Action].flat().includes('scheduler:CreateSchedule'));
      if (!def.needs?.includes('schedules')) {
        expect(pass, f.name).toBeUndefined();
        expect(sched, f.name).toBeUndefined();
        continue;
      }
      expect(pass.Resource).toEqual({ 'Fn::GetAtt': [roleId, 'Arn'] });
      expect([sched.Action].flat().sort()).toEqual([
        'scheduler:CreateSchedule',
        'scheduler:DeleteSchedule',
        'scheduler:UpdateSchedule',
      ]);
      expect(JSON.stringify(sched.Resource)).toContain('schedule/LoupeTest-schedules/*');
    }
  });

  it('lets EventBridge Scheduler invoke the workflow runner, and sweeps workflow runs every minute', () => {
    const role =
      template.toJSON().Resources[
        logicalId(stack.workers.schedulerRole.node.findChild('DefaultPolicy') as never)
      ];
    const invoke = (role.Properties.PolicyDocument.Statement as any[]).find(
      (s) => s.Action === 'lambda:InvokeFunction',
    );
    expect(JSON.stringify(invoke.Resource)).toContain(':function:LoupeTest-worker-workflow-runner"');
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      Name: 'system-workflow-sweep',
      ScheduleExpression: 'rate(1 minute)',
    });
  });
});

describe('compliance', () => {
  it('has no unacknowledged cdk-nag AwsSolutions findings', () => {
    const report = new AwsSolutionsChecks().validateScope(stack);
    const findings = report.violations.map(
      (v) => `${v.severity} ${v.ruleName} at ${v.violatingResources.map((r) => r.constructPath).join(', ')}`,
    );
    expect(findings).toEqual([]);
  });

  it('gives every acknowledged cdk-nag rule a specific reason', () => {
    const reasons: [string, string][] = [];
    for (const c of stack.node.findAll())
      for (const m of c.node.metadata)
        if (m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
          for (const [id, reason] of Object.entries(m.data as Record<string, string>))
            reasons.push([id, reason]);
    expect(reasons.length).toBeGreaterThan(0);
    for (const [id, reason] of reasons) expect(reason.length, id).toBeGreaterThan(40);
  });

  it('reports a finding when a rule is broken (the check is live)', () => {
    const scratch = new Stack(new App(), 'Scratch');
    new Queue(scratch, 'Plain', { enforceSSL: false });
    const ids = new AwsSolutionsChecks().validateScope(scratch).violations.map((v) => v.ruleName);
    expect(ids).toEqual(expect.arrayContaining(['AwsSolutions-SQS3', 'AwsSolutions-SQS4']));
  });

  it('stays under the CloudFormation limit of 500 resources per stack', () => {
    expect(Object.keys(template.toJSON().Resources).length).toBeLessThan(500);
  });

  it('exports the API URL, table name and KMS key id', () => {
    const outputs = template.toJSON().Outputs;
    expect(Object.keys(outputs)).toEqual(expect.arrayContaining(['ApiUrl', 'TableName', 'KmsKeyId']));
  });
});

describe('manifest checks', () => {
  it('rejects a manifest entry whose handler file is missing', () => {
    const empty = mkdtempSync(join(tmpdir(), 'loupe-empty-'));
    try {
      expect(() => functionEntries(empty)).toThrow(/handler file functions\/http\/discovery\.ts is missing/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('rejects a prefix that is not a literal path', () => {
    expect(() => resourcePaths([{ name: 'bad', prefixes: ['/things/{id}'] }])).toThrow(/literal path/);
  });
});
