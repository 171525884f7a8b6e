import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ArnFormat, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { runtimeEnvironment } from '../bundling';
import { bundleDirOf, type FunctionEntry } from '../functions';

export interface LoupeFunctionProps {
  fn: FunctionEntry;
  /** Directory holding `<kind>/<name>/index.mjs` (see infra/bundling.ts). */
  bundleRoot: string;
  environment: Record<string, string>;
  logRetention: logs.RetentionDays;
  /** Reserved concurrency (deployment setting); none by default. */
  reservedConcurrency?: number;
  /** Active X-Ray tracing (deployment setting `tracing`, on by default). */
  tracing?: boolean;
  /** Runs in these subnets with these security groups. */
  vpc?: { vpc: ec2.IVpc; subnets: ec2.ISubnet[]; securityGroups: ec2.ISecurityGroup[] };
}

/** Default timeout and memory when the manifest does not set them. */
export const DEFAULT_TIMEOUT_SECONDS = { http: 29, workers: 60 } as const;
export const DEFAULT_MEMORY_MB = 1024;

/**
 * One Lambda function of the manifest: nodejs24.x on arm64, code from the prebuilt esbuild bundle,
 * its own role (no AWS-managed policies; log writes granted on its own log group only) and its own
 * log group with retention. Physical names are fixed (`<stack>-<kind>-<name>`) so other functions
 * can be told a worker's ARN without a reference cycle.
 */
export class LoupeFunction extends Construct {
  readonly function: lambda.Function;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;
  readonly timeoutSeconds: number;
  /** The manifest entry it deploys. */
  readonly entry: FunctionEntry;
  /** Placed in the deployment's VPC. */
  readonly inVpc: boolean;

  constructor(scope: Construct, id: string, props: LoupeFunctionProps) {
    super(scope, id);
    const { fn } = props;
    this.entry = fn;
    this.inVpc = !!props.vpc;
    const dir = bundleDirOf(props.bundleRoot, fn);
    if (!existsSync(join(dir, 'index.mjs')))
      throw new Error(`No bundle for ${fn.kind}/${fn.name} in ${props.bundleRoot}; run npm run build first.`);
    const def = fn.kind === 'http' ? fn.group : fn.worker;
    // A queue worker's timeout is bounded by its queue's visibility timeout (see shared/platform/workers.ts).
    const queue = fn.kind === 'workers' ? fn.worker.queue : undefined;
    this.timeoutSeconds =
      def.timeoutSeconds ??
      Math.min(DEFAULT_TIMEOUT_SECONDS[fn.kind], queue?.visibilityTimeoutSeconds ?? Number.POSITIVE_INFINITY);
    const functionName = functionNameOf(Stack.of(this), fn);

    this.logGroup = new logs.LogGroup(this, 'Logs', {
      logGroupName: `/aws/lambda/${functionName}`,
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Execution role of ${functionName}`,
    });
    this.role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [this.logGroup.logGroupArn],
      }),
    );
    // Lambda creates network interfaces in the subnets with the function's own role; CDK adds this
    // policy only to roles it creates itself.
    if (props.vpc)
      this.role.addManagedPolicy(
        iam.ManagedPolicy.fromAwsManagedPolicyName('service-role/AWSLambdaVPCAccessExecutionRole'),
      );
    this.function = new lambda.Function(this, 'Function', {
      functionName,
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      handler: 'index.handler',
      code: lambda.Code.fromAsset(dir),
      role: this.role,
      logGroup: this.logGroup,
      loggingFormat: lambda.LoggingFormat.JSON,
      timeout: Duration.seconds(this.timeoutSeconds),
      memorySize: def.memoryMb ?? DEFAULT_MEMORY_MB,
      environment: { ...runtimeEnvironment, ...props.environment },
      description: fn.kind === 'http' ? `Loupe HTTP group ${fn.name}` : `Loupe worker ${fn.name}`,
      reservedConcurrentExecutions: props.reservedConcurrency,
      // Active: Lambda samples and records each invocation; the code adds subsegments (shared/platform/tracing).
      tracing: props.tracing ? lambda.Tracing.ACTIVE : lambda.Tracing.DISABLED,
      ...(props.vpc
        ? {
            vpc: props.vpc.vpc,
            vpcSubnets: { subnets: props.vpc.subnets },
            securityGroups: props.vpc.securityGroups,
          }
        : {}),
    });
    // The role's policy must exist before the function runs (log writes on the first invocation).
    this.function.node.addDependency(this.role);
  }
}

/** `<stack>-http-<name>` / `<stack>-worker-<name>`, within Lambda's 64-character limit. */
export function functionNameOf(stack: Stack, fn: Pick<FunctionEntry, 'kind' | 'name'>): string {
  const name = `${stack.stackName}-${fn.kind === 'http' ? 'http' : 'worker'}-${fn.name}`;
  if (name.length > 64)
    throw new Error(`Function name ${name} is longer than 64 characters; shorten the name.`);
  return name;
}

/** The ARN of a function by its fixed name (no reference to the function resource). */
export function functionArnOf(stack: Stack, fn: Pick<FunctionEntry, 'kind' | 'name'>): string {
  return stack.formatArn({
    service: 'lambda',
    resource: 'function',
    resourceName: functionNameOf(stack, fn),
    arnFormat: ArnFormat.COLON_RESOURCE_NAME,
  });
}
