import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleDirOf, functionEntries } from '../../infra/functions';
import { readDeploymentSettings } from '../../infra/settings';
import { CA_BUNDLE_FILE, LoupeStack } from '../../infra/stack';
import { runsInVpc } from '../../shared/platform/needs';
import { sharedBundles } from '../support/bundles';

const functions = functionEntries();
const read = (ctx: Record<string, unknown>, cwd?: string) =>
  readDeploymentSettings((k) => ctx[k], functions, cwd);
const caPath = join(import.meta.dirname, '..', 'fixtures', 'tls', 'ca.pem');

describe('deployment settings (CDK context)', () => {
  it('defaults to no VPC, no base path and the stack name Loupe', () => {
    expect(read({})).toMatchObject({
      stackName: 'Loupe',
      vpc: undefined,
      basePath: undefined,
      reservedConcurrency: {},
      maxConcurrency: {},
      environment: {},
    });
  });

  it('reads command-line strings: comma lists and JSON maps; derives the base path from publicUrl', () => {
    const s = read({
      vpcId: 'vpc-0123456789abcdef0',
      subnetIds: 'subnet-0123456789abcdef0, subnet-0fedcba9876543210',
      publicUrl: 'https://api.example.com/loupe/',
      reservedConcurrency: '{"connections": 20, "health-check": 3}',
      maxConcurrency: '{"annotate": 2}',
      environment: '{"LOUPE_LOG_LEVEL": "DEBUG"}',
      throttleRate: '50',
    });
    expect(s.vpc).toEqual({
      vpcId: 'vpc-0123456789abcdef0',
      subnetIds: ['subnet-0123456789abcdef0', 'subnet-0fedcba9876543210'],
      securityGroupIds: [],
    });
    expect(s.basePath).toBe('/loupe');
    expect(s.publicUrl).toBe('https://api.example.com/loupe');
    expect(s.reservedConcurrency).toEqual({ connections: 20, 'health-check': 3 });
    expect(s.maxConcurrency).toEqual({ annotate: 2 });
    expect(s.throttlingRateLimit).toBe(50);
  });

  it.each([
    [{ vpcId: 'vpc-1' }, /vpcId: must look like vpc-/],
    [{ vpcId: 'vpc-0123456789abcdef0' }, /subnetIds: vpcId needs at least one subnet id/],
    [{ subnetIds: 'subnet-0123456789abcdef0' }, /vpcId: subnetIds and securityGroupIds need vpcId/],
    [{ vpcId: 'vpc-0123456789abcdef0', subnetIds: 'sn-1' }, /subnetIds.0: must look like subnet-/],
    [{ publicUrl: 'http://api.example.com' }, /publicUrl: must be an https:\/\/ URL/],
    [{ basePath: 'loupe/' }, /basePath: a path like \/loupe/],
    [{ caBundlePath: '/nonexistent/ca.pem' }, /caBundlePath: \/nonexistent\/ca.pem is not a file/],
    [{ sqliteBucket: 'Bad_Bucket' }, /sqliteBucket: must be an S3 bucket name/],
    [{ sesIdentity: 'not an identity' }, /sesIdentity: must be a verified SES domain/],
    [{ reservedConcurrency: '{"nope": 3}' }, /reservedConcurrency: "nope" is not a function/],
    [{ reservedConcurrency: '{"connections": 0}' }, /reservedConcurrency.connections/],
    [{ maxConcurrency: '{"connections": 5}' }, /maxConcurrency: "connections" is not a queue worker/],
    [{ maxConcurrency: '{"annotate": 1}' }, /maxConcurrency.annotate/],
    [{ environment: '{"LOUPE_TABLE_NAME": "x"}' }, /environment: LOUPE_TABLE_NAME is set by the stack/],
    [{ environment: '{"AWS_REGION": "x"}' }, /environment: AWS_REGION is set by the stack/],
    [{ environment: '{"bad-name": "x"}' }, /environment: "bad-name" is not a variable name/],
    [{ stackName: '1abc' }, /stackName/],
  ])('refuses %j naming the key', (ctx, message) => {
    expect(() => read(ctx)).toThrow(message);
  });

  it('reports every bad key at once', () => {
    expect(() => read({ vpcId: 'x', sqliteBucket: 'B' })).toThrow(/vpcId[\s\S]*sqliteBucket/);
  });

  it('refuses a CA bundle that holds no certificate, and resolves a relative path', () => {
    const dir = mkdtempSync(join(tmpdir(), 'loupe-ca-'));
    try {
      writeFileSync(join(dir, 'empty.pem'), 'nothing here');
      expect(() => read({ caBundlePath: 'empty.pem' }, dir)).toThrow(/holds no PEM certificate/);
      writeFileSync(join(dir, 'ok.pem'), readFileSync(caPath));
      expect(read({ caBundlePath: 'ok.pem' }, dir).caBundlePath).toBe(join(dir, 'ok.pem'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a stack with every deployment setting', () => {
  let bundleRoot: string;
  let stack: LoupeStack;
  let template: Template;
  const logicalId = (c: { node: { defaultChild?: unknown } }) =>
    stack.getLogicalId(c.node.defaultChild as never);
  const fnResource = (name: string, kind: 'http' | 'workers' = 'http') =>
    template.toJSON().Resources[logicalId(stack.functions.get(`${kind}/${name}`)!.function)].Properties;
  const statementsOf = (name: string, kind: 'http' | 'workers' = 'http'): any[] => {
    const role = stack.functions.get(`${kind}/${name}`)!.role;
    return template.toJSON().Resources[logicalId(role.node.findChild('DefaultPolicy') as never)].Properties
      .PolicyDocument.Statement;
  };

  beforeAll(async () => {
    bundleRoot = mkdtempSync(join(tmpdir(), 'loupe-bundles-'));
    await sharedBundles(bundleRoot); // built once per run for every test file that needs them
    const { stackName, ...settings } = read({
      stackName: 'LoupeProd',
      vpcId: 'vpc-0123456789abcdef0',
      subnetIds: 'subnet-0123456789abcdef0,subnet-0fedcba9876543210',
      securityGroupIds: 'sg-0123456789abcdef0',
      publicUrl: 'https://data.example.com/loupe',
      caBundlePath: caPath,
      sqliteBucket: 'acme-loupe-sqlite',
      sesIdentity: 'example.com',
      modelSecretName: 'prod/loupe/model',
      reservedConcurrency: { connections: 25, chat: 10 },
      maxConcurrency: { 'health-check': 2 },
      environment: { LOUPE_LOG_LEVEL: 'WARN' },
    });
    stack = new LoupeStack(new App(), stackName, {
      bundleRoot,
      functions,
      settings,
      env: { account: '123456789012', region: 'eu-west-1' },
    });
    template = Template.fromStack(stack);
  }, 600_000); // bundles all the functions: minutes on a busy 2-core machine (as stack.test.ts)
  afterAll(() => {
    if (bundleRoot) rmSync(bundleRoot, { recursive: true, force: true });
  });

  it('puts exactly the functions that reach databases or the internet into the given subnets and security groups', () => {
    for (const f of functions) {
      const def = f.kind === 'http' ? f.group : f.worker;
      const vpc = fnResource(f.name, f.kind).VpcConfig;
      if (!runsInVpc(def)) {
        expect(vpc, f.name).toBeUndefined();
        continue;
      }
      expect(vpc, f.name).toEqual({
        SubnetIds: ['subnet-0123456789abcdef0', 'subnet-0fedcba9876543210'],
        SecurityGroupIds: ['sg-0123456789abcdef0'],
      });
    }
    expect(fnResource('discovery').VpcConfig).toBeUndefined();
    expect(fnResource('connections').VpcConfig).toBeDefined();
    expect(fnResource('health-check', 'workers').VpcConfig).toBeDefined();
    template.resourceCountIs('AWS::EC2::SecurityGroup', 0);
  });

  it('ships the CA bundle with every function and points NODE_EXTRA_CA_CERTS at it', () => {
    for (const f of functions) {
      const shipped = join(bundleDirOf(bundleRoot, f), CA_BUNDLE_FILE);
      expect(existsSync(shipped), f.name).toBe(true);
      expect(readFileSync(shipped, 'utf8')).toBe(readFileSync(caPath, 'utf8'));
      const env = fnResource(f.name, f.kind).Environment.Variables;
      expect(env.NODE_EXTRA_CA_CERTS).toBe(`/var/task/${CA_BUNDLE_FILE}`);
      expect(env.LOUPE_BASE_PATH).toBe('/loupe');
      expect(env.LOUPE_PUBLIC_URL).toBe('https://data.example.com/loupe');
      expect(env.LOUPE_SQLITE_BUCKET).toBe('acme-loupe-sqlite');
      expect(env.LOUPE_SES_IDENTITY).toBe('example.com');
      expect(env.LOUPE_LOG_LEVEL).toBe('WARN');
      expect(env.LOUPE_OPENAI_SECRET_ARN).toBe('prod/loupe/model');
    }
  });

  it('sets reserved concurrency where asked and the event source maxConcurrency override', () => {
    expect(fnResource('connections').ReservedConcurrentExecutions).toBe(25);
    expect(fnResource('chat').ReservedConcurrentExecutions).toBe(10);
    expect(fnResource('dashboards').ReservedConcurrentExecutions).toBeUndefined();
    const { queue } = stack.workers.queues.get('health-check')!;
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [logicalId(queue), 'Arn'] },
      ScalingConfig: { MaximumConcurrency: 2 },
    });
  });

  it('uses the named model secret instead of creating one, granted by name to model users only', () => {
    template.resourceCountIs('AWS::SecretsManager::Secret', 0);
    const reads = statementsOf('chat').find((s) => s.Action === 'secretsmanager:GetSecretValue');
    expect(JSON.stringify(reads.Resource)).toContain(':secret:prod/loupe/model-??????');
    expect(statementsOf('dashboards').some((s) => s.Action === 'secretsmanager:GetSecretValue')).toBe(false);
  });

  it("grants s3:GetObject on the SQLite bucket's organization prefixes to SQLite readers only", () => {
    const get = statementsOf('dashboards').find((s) => s.Action === 's3:GetObject');
    expect(JSON.stringify(get.Resource)).toContain(':s3:::acme-loupe-sqlite/*/*');
    expect(statementsOf('keys').some((s) => s.Action === 's3:GetObject')).toBe(false);
  });

  it('gives VPC functions the network-interface policy and stays cdk-nag clean', () => {
    const role = template.toJSON().Resources[logicalId(stack.functions.get('http/connections')!.role)];
    expect(JSON.stringify(role.Properties.ManagedPolicyArns)).toContain('AWSLambdaVPCAccessExecutionRole');
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`),
    ).toEqual([]);
  });

  it('makes its own security group (outbound only) when none is given', async () => {
    const { stackName, ...settings } = read({
      stackName: 'LoupeSg',
      vpcId: 'vpc-0123456789abcdef0',
      subnetIds: 'subnet-0123456789abcdef0',
    });
    const s2 = new LoupeStack(new App(), stackName, { bundleRoot, functions, settings });
    const t2 = Template.fromStack(s2);
    t2.resourceCountIs('AWS::EC2::SecurityGroup', 1);
    t2.hasResourceProperties('AWS::EC2::SecurityGroup', {
      VpcId: 'vpc-0123456789abcdef0',
      SecurityGroupEgress: [Match.objectLike({ CidrIp: '0.0.0.0/0' })],
      SecurityGroupIngress: Match.absent(),
    });
  });
});
