import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { groupFor, type HttpGroup } from '../../shared/http/groups';

export const STAGE = 'v1';
/** Longest a streamed response may run through API Gateway (REST response streaming limit). */
export const MAX_STREAM_SECONDS = 900;

export interface HttpFunction {
  group: HttpGroup;
  function: lambda.IFunction;
  timeoutSeconds: number;
}

export interface LoupeApiProps {
  functions: HttpFunction[];
  logRetention: logs.RetentionDays;
  throttlingRateLimit: number;
  throttlingBurstLimit: number;
  /** X-Ray tracing on the stage (deployment setting `tracing`). */
  tracing: boolean;
}

/**
 * The REST API (stage `v1`), routed from the endpoint-group manifest exactly like the local runtime's
 * `groupFor`: every prefix becomes a resource with `ANY` and a `{proxy+}` child, each sent to the group
 * that owns that path; the root's `{proxy+}` goes to the fallback group (discovery), so unknown paths
 * get the service's 404 envelope rather than API Gateway's own answer. Request validation is off
 * (the functions validate); streaming groups use Lambda response streaming.
 */
export class LoupeApi extends Construct {
  readonly api: apigw.RestApi;
  readonly accessLogs: logs.LogGroup;
  /** Resource path → group name, for every routed resource (tests and docs). */
  readonly routes = new Map<string, string>();

  constructor(scope: Construct, id: string, props: LoupeApiProps) {
    super(scope, id);
    this.accessLogs = new logs.LogGroup(this, 'AccessLogs', {
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.api = new apigw.RestApi(this, 'Api', {
      restApiName: `${Stack.of(this).stackName}-api`,
      description: 'Loupe JSON API',
      endpointTypes: [apigw.EndpointType.REGIONAL],
      cloudWatchRole: true,
      // The logging role is account-wide (API Gateway account settings): keep it for other APIs.
      cloudWatchRoleRemovalPolicy: RemovalPolicy.RETAIN,
      deployOptions: {
        stageName: STAGE,
        accessLogDestination: new apigw.LogGroupLogDestination(this.accessLogs),
        accessLogFormat: apigw.AccessLogFormat.jsonWithStandardFields({
          caller: false,
          httpMethod: true,
          ip: true,
          protocol: true,
          requestTime: true,
          resourcePath: true,
          responseLength: true,
          status: true,
          user: false,
        }),
        loggingLevel: apigw.MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        metricsEnabled: true,
        throttlingRateLimit: props.throttlingRateLimit,
        throttlingBurstLimit: props.throttlingBurstLimit,
        tracingEnabled: props.tracing,
      },
    });
    this.addGatewayResponses();

    const byName = new Map(props.functions.map((f) => [f.group.name, f]));
    const integrations = new Map<string, apigw.LambdaIntegration>();
    const integrationFor = (group: HttpGroup) => {
      let integration = integrations.get(group.name);
      if (!integration) {
        const f = byName.get(group.name);
        if (!f) throw new Error(`No function for HTTP group ${group.name}`);
        integration = new apigw.LambdaIntegration(f.function, {
          proxy: true,
          // One permission per function for the whole API instead of two per method (policy size).
          scopePermissionToMethod: false,
          ...(group.streaming
            ? {
                responseTransferMode: apigw.ResponseTransferMode.STREAM,
                timeout: Duration.seconds(Math.min(f.timeoutSeconds, MAX_STREAM_SECONDS)),
              }
            : {}),
        });
        integrations.set(group.name, integration);
      }
      return integration;
    };
    const route = (resource: apigw.IResource, path: string, group: HttpGroup) => {
      resource.addMethod('ANY', integrationFor(group), { authorizationType: apigw.AuthorizationType.NONE });
      this.routes.set(path, group.name);
    };

    for (const path of resourcePaths(props.functions.map((f) => f.group))) {
      const resource = path === '/' ? this.api.root : this.api.root.resourceForPath(path);
      route(resource, path, groupFor(path));
      const below = `${path === '/' ? '' : path}/{proxy+}`;
      route(resource.addResource('{proxy+}'), below, groupFor(below));
    }
  }

  /** API Gateway's own errors (throttling, oversized body, timeouts) in the service's envelope shape. */
  private addGatewayResponses() {
    const body = (code: string) =>
      JSON.stringify({
        data: null,
        error: { code, message: '$context.error.messageString' },
        meta: { requestId: '$context.requestId', timestamp: '$context.requestTime' },
      }).replace('"$context.error.messageString"', '$context.error.messageString');
    const responses: [string, apigw.ResponseType, string, string?][] = [
      ['Throttled', apigw.ResponseType.THROTTLED, 'RATE_LIMITED', '429'],
      ['TooLarge', apigw.ResponseType.REQUEST_TOO_LARGE, 'PAYLOAD_TOO_LARGE', '413'],
      ['Timeout', apigw.ResponseType.INTEGRATION_TIMEOUT, 'GATEWAY_TIMEOUT', '504'],
      ['Default4xx', apigw.ResponseType.DEFAULT_4XX, 'BAD_REQUEST'],
      ['Default5xx', apigw.ResponseType.DEFAULT_5XX, 'INTERNAL_ERROR'],
    ];
    for (const [id, type, code, statusCode] of responses)
      this.api.addGatewayResponse(id, {
        type,
        statusCode,
        templates: { 'application/json': body(code) },
      });
  }

  /** The stage URL, built from the API id so functions can be told it without a dependency cycle. */
  get url(): string {
    const stack = Stack.of(this);
    return `https://${this.api.restApiId}.execute-api.${stack.region}.${stack.urlSuffix}/${STAGE}`;
  }
}

/**
 * Every resource path the API needs: the root, each group prefix and the ancestors of nested prefixes,
 * parents before children. Each gets `ANY` plus `{proxy+}`, routed by `groupFor`.
 */
export function resourcePaths(groups: HttpGroup[]): string[] {
  const paths = new Set<string>(['/']);
  for (const g of groups)
    for (const prefix of g.prefixes) {
      if (prefix !== '/' && (!prefix.startsWith('/') || prefix.endsWith('/') || prefix.includes('{')))
        throw new Error(`HTTP group ${g.name}: prefix "${prefix}" must be a literal path like /things.`);
      const parts = prefix.split('/').filter(Boolean);
      for (let i = 1; i <= parts.length; i++) paths.add(`/${parts.slice(0, i).join('/')}`);
    }
  return [...paths].sort((a, b) => depth(a) - depth(b) || a.localeCompare(b));
}

const depth = (p: string) => (p === '/' ? 0 : p.split('/').length - 1);
