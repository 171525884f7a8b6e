import { type CfnResource, Stack, Token, Validations } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import type { LoupeStack } from './stack';

/**
 * The cdk-nag (AwsSolutions) rules this stack deliberately does not follow, each acknowledged on the
 * narrowest construct with the reason. cdk-nag v3 reads these through CDK's `Validations.of().acknowledge`
 * (the v2 `NagSuppressions` API no longer exists). Wildcard findings are acknowledged one by one.
 */
export function acknowledgeNagFindings(stack: LoupeStack): void {
  const ack = (scope: IConstruct, id: string, reason: string) =>
    Validations.of(scope).acknowledge({ id: `AwsSolutions-${id}`, reason });
  const arnOf = (resource: IConstruct) =>
    `<${Stack.of(resource).getLogicalId(resource.node.defaultChild as CfnResource)}.Arn>`;

  const api = stack.api.api;
  ack(
    api,
    'APIG2',
    'Requests are validated in every function against the zod schemas of shared/http/endpoint.ts, which answer bad input with the API envelope (400 VALIDATION_ERROR); API Gateway validation would answer in another shape.',
  );
  ack(
    api,
    'APIG3',
    'Abuse is limited by stage throttling plus per-organization and per-IP rate limits in the functions; a WAF web ACL can be associated at deployment where policy requires one.',
  );
  ack(
    api,
    'APIG4',
    "Authentication is the service's own bearer API keys (hashed, scoped, per organization) checked by the shared middleware of every function (shared/http/middleware/auth.ts); the discovery documents are public by specification.",
  );
  ack(
    api,
    'COG4',
    'Callers are machine clients with Loupe API keys, not Cognito users; keys are verified in the functions (see APIG4).',
  );
  ack(
    api,
    'IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
    "AmazonAPIGatewayPushToCloudWatchLogs is AWS's documented policy for API Gateway's account-level logging role, needed for the stage's execution logs (APIG6).",
  );

  if (stack.console) {
    const c = stack.console;
    ack(
      c.bucket,
      'S1',
      "The bucket holds only the console's public build (no user data) and is read solely by CloudFront through origin access control; viewer requests are in CloudFront's metrics, and the API's requests in its access logs.",
    );
    const d = c.distribution;
    ack(
      d,
      'CFR1',
      'The console and API serve customers wherever they are; an operator can add geo restrictions at deployment.',
    );
    ack(
      d,
      'CFR2',
      'Abuse of the API is limited by stage throttling and per-organization and per-IP rate limits in the functions (see APIG3); a WAF web ACL can be associated at deployment where policy requires one.',
    );
    ack(
      d,
      'CFR3',
      "The console's files are static and public; API calls through the distribution are logged by the API stage's access logs (one log per request with the caller's IP), so CloudFront standard logs would only repeat them.",
    );
    ack(
      d,
      'CFR4',
      "The distribution uses CloudFront's default *.cloudfront.net certificate, whose viewer TLS policy CloudFront fixes; minimumProtocolVersion is TLSv1.2_2021 and takes effect as soon as a custom domain certificate is attached.",
    );
    // CDK's bucket deployment: one singleton function that copies the build from the CDK asset bucket.
    for (const child of stack.node.children)
      if (child.node.id.startsWith('Custom::CDKBucketDeployment')) {
        ack(
          child,
          'L1',
          "CDK's BucketDeployment picks its own Lambda runtime; it runs only during deployment to copy the console's files.",
        );
        ack(
          child,
          'IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
          "AWS's managed policy for the CloudWatch logs of CDK's BucketDeployment function (deployment time only).",
        );
        for (const finding of [
          'Action::s3:GetObject*',
          'Action::s3:GetBucket*',
          'Action::s3:List*',
          'Action::s3:DeleteObject*',
          'Action::s3:Abort*',
          'Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*',
          `Resource::${arnOf(c.bucket)}/*`,
          'Resource::*',
        ])
          ack(
            child,
            `IAM5[${finding}]`,
            "CDK's BucketDeployment grants: read the console's build from the CDK asset bucket, replace the files of the console bucket (prune), and invalidate the distribution's index.html (CloudFront invalidations take no resource ARN).",
          );
      }
  }

  if (stack.modelKey)
    ack(
      stack.modelKey,
      'SMG4',
      'The secret holds a third-party model provider API key that Secrets Manager cannot rotate; the operator rotates it at the provider and puts the new value.',
    );

  const tableIndexes = `Resource::${arnOf(stack.table)}/index/*`;
  // cdk-nag names a resource by its rendered ARN: pseudo parameters, or the literal region and account
  // of an environment-specific stack.
  const region = Token.isUnresolved(stack.region) ? '<AWS::Region>' : stack.region;
  const account = Token.isUnresolved(stack.account) ? '<AWS::AccountId>' : stack.account;
  const schedules = `Resource::arn:<AWS::Partition>:scheduler:${region}:${account}:schedule/${stack.workers.scheduleGroupName}/*`;
  for (const [name, f] of stack.functions) {
    ack(
      f.role,
      `IAM5[${tableIndexes}]`,
      "Queries on the table's global secondary indexes (gsi1 and any index added in shared/platform/db/table.ts); limited to this one table.",
    );
    const def = f.entry.kind === 'http' ? f.entry.group : f.entry.worker;
    if (def.needs?.includes('schedules'))
      ack(
        f.role,
        `IAM5[${schedules}]`,
        `${name} creates, updates and deletes run-time schedules with generated names (one per published workflow); limited to the service's own schedule group.`,
      );
    if (def.needs?.includes('sqlite'))
      ack(
        f.role,
        'IAM5[Resource::arn:<AWS::Partition>:s3:::<sqliteBucket>/*/*]'.replace(
          '<sqliteBucket>',
          stack.sqliteBucket ?? '',
        ),
        `${name} reads SQLite databases stored at <bucket>/<orgId>/…; the code allows only the calling organization's prefix (an IAM policy cannot know the organization of a request).`,
      );
    if (stack.tracing)
      ack(
        f.role,
        'IAM5[Resource::*]',
        "X-Ray's xray:PutTraceSegments and xray:PutTelemetryRecords (granted by CDK for active tracing) take no resource ARN.",
      );
    if (f.inVpc)
      ack(
        f.role,
        'IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]',
        "AWS's managed policy for the network interfaces Lambda creates to place a function in the VPC; CDK adds it whenever a function has a VPC.",
      );
  }
}
