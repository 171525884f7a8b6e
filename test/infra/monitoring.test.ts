import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALARM_CLASSES, RUNBOOK } from '../../infra/constructs/monitoring';
import { bundleDirOf, functionEntries, ROOT } from '../../infra/functions';
import { readDeploymentSettings } from '../../infra/settings';
import { LoupeStack } from '../../infra/stack';

const functions = functionEntries();
const queueWorkers = functions.filter((f) => f.kind === 'workers' && f.worker.queue);
const read = (ctx: Record<string, unknown>) => readDeploymentSettings((k) => ctx[k], functions);

type Resource = { Type: string; Properties: Record<string, any> };
let bundleRoot: string;

/**
 * The template's monitoring: alarms, their topic, the dashboard and tracing. The stacks are synthesized
 * from stand-in bundles (one tiny index.mjs per function): what is checked here is the template, not the
 * code (test/infra/stack.test.ts synthesizes the real bundles).
 */
function synth(ctx: Record<string, unknown>) {
  const { stackName, ...settings } = read(ctx);
  const stack = new LoupeStack(new App(), stackName, { bundleRoot, functions, settings });
  const template = Template.fromStack(stack);
  const resources = (type: string) => Object.entries(template.findResources(type)) as [string, Resource][];
  const id = (c: { node: { defaultChild?: unknown } }) => stack.getLogicalId(c.node.defaultChild as never);
  return { stack, template, resources, id };
}
type Synth = ReturnType<typeof synth>;

/** The metric names an alarm watches (its own metric, or those of its math expression). */
const metricsOf = (r: Resource): { name: string; namespace: string; dims: Record<string, unknown> }[] => {
  const stat = (m: any) => ({
    name: m.MetricName,
    namespace: m.Namespace,
    dims: Object.fromEntries((m.Dimensions ?? []).map((d: any) => [d.Name, d.Value])),
  });
  if (r.Properties.MetricName) return [stat(r.Properties)];
  return (r.Properties.Metrics ?? [])
    .filter((m: any) => m.MetricStat)
    .map((m: any) => stat(m.MetricStat.Metric));
};

beforeAll(() => {
  bundleRoot = mkdtempSync(join(tmpdir(), 'loupe-stub-bundles-'));
  for (const f of functions) {
    const dir = bundleDirOf(bundleRoot, f);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'index.mjs'), 'export const handler = async () => ({});\n');
  }
});
afterAll(() => rmSync(bundleRoot, { recursive: true, force: true }));

describe('alarms', () => {
  let s: Synth;
  let alarms: [string, Resource][];
  beforeAll(() => {
    s = synth({ stackName: 'LoupeMon', alarmEmail: 'oncall@example.com' });
    alarms = s.resources('AWS::CloudWatch::Alarm');
  });
  const watching = (pred: (m: ReturnType<typeof metricsOf>[number]) => boolean) =>
    alarms.filter(([, r]) => metricsOf(r).some(pred));

  it('watches every dead-letter queue for visible messages, and the age of the oldest message of each worker queue', () => {
    const dlqs = s
      .resources('AWS::SQS::Queue')
      .filter(([, r]) => String(r.Properties.QueueName).endsWith('-dlq'));
    expect(dlqs).toHaveLength(queueWorkers.length);
    for (const [logicalId] of dlqs) {
      const a = watching(
        (m) =>
          m.name === 'ApproximateNumberOfMessagesVisible' &&
          JSON.stringify(m.dims.QueueName).includes(logicalId),
      );
      expect(a, logicalId).toHaveLength(1);
      expect(a[0][1].Properties).toMatchObject({
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      });
    }
    for (const f of queueWorkers) {
      const queue = s.stack.workers.queues.get(f.name)!.queue;
      const a = watching(
        (m) =>
          m.name === 'ApproximateAgeOfOldestMessage' &&
          JSON.stringify(m.dims.QueueName).includes(s.id(queue)),
      );
      expect(a, f.name).toHaveLength(1);
      expect(a[0][1].Properties.Threshold).toBeGreaterThanOrEqual(600);
    }
  });

  it('watches errors and throttles of every function', () => {
    for (const f of functions) {
      const fnId = s.id(s.stack.functions.get(`${f.kind}/${f.name}`)!.function);
      for (const name of ['Errors', 'Throttles'])
        expect(
          watching(
            (m) => m.namespace === 'AWS/Lambda' && m.name === name && JSON.stringify(m.dims).includes(fnId),
          ),
          `${f.name} ${name}`,
        ).toHaveLength(1);
    }
  });

  it('watches the API 5xx rate and latency, the table, KMS, Secrets Manager, the scheduler and Loupe’s own measures', () => {
    const one = (pred: Parameters<typeof watching>[0], what: string) =>
      expect(watching(pred), what).toHaveLength(1);
    one((m) => m.namespace === 'AWS/ApiGateway' && m.name === '5XXError', 'API 5xx');
    const rate = watching((m) => m.name === '5XXError')[0][1];
    expect(JSON.stringify(rate.Properties.Metrics)).toContain('100 * FILL(errors, 0) / requests');
    one((m) => m.namespace === 'AWS/ApiGateway' && m.name === 'Latency', 'API latency');
    expect(watching((m) => m.name === 'Latency')[0][1].Properties.ExtendedStatistic).toBe('p90');
    one((m) => m.namespace === 'AWS/DynamoDB' && m.name === 'ThrottledRequests', 'table throttles');
    one((m) => m.namespace === 'AWS/DynamoDB' && m.name === 'SystemErrors', 'table errors');
    one((m) => m.name === 'AwsCallErrors' && m.dims.dependency === 'kms', 'KMS errors');
    one(
      (m) => m.name === 'AwsCallErrors' && m.dims.dependency === 'secretsmanager',
      'Secrets Manager errors',
    );
    one((m) => m.namespace === 'Loupe/LoupeMon' && m.name === 'ScheduledRunsLate', 'scheduled runs late');
    // Runs that never started, by either cause, in one alarm (a math expression over both series).
    const missed = watching((m) => m.namespace === 'Loupe/LoupeMon' && m.name === 'MissedScheduledRuns');
    expect(missed, 'scheduled runs missed').toHaveLength(1);
    expect(
      metricsOf(missed[0][1])
        .map((m) => m.dims.cause)
        .sort(),
    ).toEqual(['abandoned', 'not_started']);
    expect(JSON.stringify(missed[0][1].Properties.Metrics)).toContain(
      'FILL(notStarted, 0) + FILL(abandoned, 0)',
    );
    expect(missed[0][1].Properties).toMatchObject({
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    expect(missed[0][1].Properties.AlarmDescription).toMatch(
      /LOUPE_SCHEDULE_LATE_MS[\s\S]*#scheduled-runs-missed$/,
    );
    one((m) => m.namespace === 'AWS/Scheduler' && m.name === 'InvocationDroppedCount', 'runs never started');
    one((m) => m.namespace === 'AWS/Scheduler' && m.name === 'TargetErrorCount', 'scheduler target errors');
    one((m) => m.name === 'WebhookDeliveries' && m.dims.outcome === 'failed', 'webhook deliveries failing');
    one((m) => m.name === 'Approvals' && m.dims.outcome === 'expired', 'approvals expiring');
    // Loupe's own metrics are read in the namespace the functions write to, with the service dimension.
    const env = s.resources('AWS::Lambda::Function')[0][1].Properties.Environment.Variables;
    expect(env.POWERTOOLS_METRICS_NAMESPACE).toBe('Loupe/LoupeMon');
    for (const m of alarms.flatMap(([, r]) => metricsOf(r)).filter((x) => x.namespace === 'Loupe/LoupeMon'))
      expect(m.dims.service).toBe('loupe');
  });

  it('sends every alarm and its recovery to the alarm topic', () => {
    const topicId = s.id(s.stack.monitoring.topic);
    expect(alarms.length).toBeGreaterThanOrEqual(2 * functions.length + 2 * queueWorkers.length + 12);
    for (const [id, r] of alarms) {
      expect(r.Properties.AlarmActions, id).toEqual([{ Ref: topicId }]);
      expect(r.Properties.OKActions, id).toEqual([{ Ref: topicId }]);
      expect(r.Properties.ActionsEnabled ?? true, id).toBe(true);
      expect(r.Properties.TreatMissingData, id).toBe('notBreaching');
    }
  });

  it('says in every alarm description what it means, what to do first, and which runbook entry to read', () => {
    const runbook = readFileSync(join(ROOT, RUNBOOK), 'utf8');
    const anchors = new Set(
      [...runbook.matchAll(/^#{2,3} (.+)$/gm)].map((m) =>
        m[1]
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .trim()
          .replace(/ /g, '-'),
      ),
    );
    for (const anchor of Object.values(ALARM_CLASSES)) expect(anchors, anchor).toContain(anchor);
    for (const [id, r] of alarms) {
      const d: string = r.Properties.AlarmDescription;
      expect(d.length, id).toBeLessThanOrEqual(1024);
      expect(d, id).toMatch(/ First: .+ Runbook: docs\/operations\/runbook\.md#[a-z0-9-]+$/);
      expect(anchors, id).toContain(d.split('#').pop());
      expect(r.Properties.AlarmName, id).toMatch(/^LoupeMon-/);
    }
    expect(new Set(alarms.map(([, r]) => r.Properties.AlarmName)).size).toBe(alarms.length);
  });

  it('notifies through an SNS topic encrypted with its own rotating key, SSL only, that CloudWatch may publish to', () => {
    const topics = s.resources('AWS::SNS::Topic');
    expect(topics).toHaveLength(1);
    const keyId = s.id(s.stack.monitoring.topicKey);
    expect(topics[0][1].Properties.KmsMasterKeyId).toEqual({ 'Fn::GetAtt': [keyId, 'Arn'] });
    const key = s.template.toJSON().Resources[keyId].Properties;
    expect(key.EnableKeyRotation).toBe(true);
    expect(JSON.stringify(key.KeyPolicy)).toContain('cloudwatch.amazonaws.com');
    const policy = JSON.stringify(s.resources('AWS::SNS::TopicPolicy').map(([, r]) => r.Properties));
    expect(policy).toContain('"aws:SecureTransport":"false"');
    expect(policy).toContain('cloudwatch.amazonaws.com');
  });

  it('subscribes the alarmEmail address to the topic', () => {
    const subs = s.resources('AWS::SNS::Subscription');
    expect(subs.map(([, r]) => r.Properties)).toEqual([
      {
        Protocol: 'email',
        Endpoint: 'oncall@example.com',
        TopicArn: { Ref: s.id(s.stack.monitoring.topic) },
      },
    ]);
  });

  it('has a dashboard of traffic, errors, latency, queues, the scheduler and AI spend', () => {
    const dashboards = s.resources('AWS::CloudWatch::Dashboard');
    expect(dashboards).toHaveLength(1);
    expect(dashboards[0][1].Properties.DashboardName).toBe('LoupeMon-service');
    const body = JSON.stringify(dashboards[0][1].Properties.DashboardBody);
    for (const title of ['Traffic:', 'Errors:', 'Latency:', 'Queues:', 'Scheduler:', 'AI spend', 'Alarms'])
      expect(body, title).toContain(title);
    expect(body).toContain('AiSpendCents');
    expect(body).toContain('ScheduledRunStartDelay');
    expect(body).toContain('MissedScheduledRuns');
  });

  it('traces every function and the API stage actively (X-Ray), and says so to the code', () => {
    const fns = s.resources('AWS::Lambda::Function');
    expect(fns).toHaveLength(functions.length);
    for (const [id, r] of fns) {
      expect(r.Properties.TracingConfig, id).toEqual({ Mode: 'Active' });
      expect(r.Properties.Environment.Variables.LOUPE_TRACING, id).toBe('on');
    }
    const stages = s.resources('AWS::ApiGateway::Stage');
    expect(stages).toHaveLength(1);
    expect(stages[0][1].Properties.TracingEnabled).toBe(true);
  });

  it('keeps the stack well under the CloudFormation limit of 500 resources', () => {
    const n = Object.keys(s.template.toJSON().Resources).length;
    expect(n).toBeLessThan(450);
  });

  it('stays cdk-nag clean', () => {
    const report = new AwsSolutionsChecks().validateScope(s.stack);
    expect(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`),
    ).toEqual([]);
  });
});

describe('without alarmEmail and with tracing off', () => {
  let s: Synth;
  beforeAll(() => {
    s = synth({ stackName: 'LoupeQuiet', tracing: 'off' });
  });

  it('has the topic and its alarms but no subscription', () => {
    expect(s.resources('AWS::SNS::Topic')).toHaveLength(1);
    expect(s.resources('AWS::SNS::Subscription')).toEqual([]);
    expect(s.resources('AWS::CloudWatch::Alarm').length).toBeGreaterThan(2 * functions.length);
  });

  it('traces nothing: no tracing mode on any function, none on the stage, no X-Ray grant, LOUPE_TRACING=off', () => {
    for (const [id, r] of s.resources('AWS::Lambda::Function')) {
      expect(r.Properties.TracingConfig, id).toBeUndefined();
      expect(r.Properties.Environment.Variables.LOUPE_TRACING, id).toBe('off');
    }
    expect(s.resources('AWS::ApiGateway::Stage')[0][1].Properties.TracingEnabled ?? false).toBe(false);
    expect(JSON.stringify(s.template.toJSON())).not.toContain('xray:PutTraceSegments');
  });

  it('stays cdk-nag clean', () => {
    const report = new AwsSolutionsChecks().validateScope(s.stack);
    expect(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`),
    ).toEqual([]);
  });
});

describe('monitoring settings', () => {
  it('reads alarmEmail and tracing (on by default; true/false/on/off), refusing bad values', () => {
    expect(read({})).toMatchObject({ tracing: true, alarmEmail: undefined });
    expect(read({ tracing: 'off', alarmEmail: ' ops@example.com ' })).toMatchObject({
      tracing: false,
      alarmEmail: 'ops@example.com',
    });
    expect(read({ tracing: false }).tracing).toBe(false);
    expect(read({ tracing: 'true' }).tracing).toBe(true);
    expect(() => read({ alarmEmail: 'not-an-address', tracing: 'maybe' })).toThrow(
      /alarmEmail: must be an e-mail address[\s\S]*tracing: must be true or false/,
    );
    expect(() => read({ environment: { LOUPE_TRACING: 'off' } })).toThrow(
      /LOUPE_TRACING is set by the stack/,
    );
  });
});
