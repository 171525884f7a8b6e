import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3deploy from 'aws-cdk-lib/aws-s3-deployment';
import { Construct } from 'constructs';
import { CONSOLE_CSP } from '../local/console';
import { STAGE } from './api';

export interface LoupeConsoleProps {
  api: apigw.RestApi;
  /** The built console (console/dist: index.html and assets/). */
  consoleDir: string;
}

/**
 * The web console on HTTPS under the API's origin: CloudFront serves the built SPA from a private S3
 * bucket (origin access control) and routes `/v1/*` and `/.well-known/*` to the API Gateway stage
 * uncached, with every viewer header but Host. The console's pages get the same security headers as
 * locally (infra/local/console.ts), HTTP redirects to HTTPS.
 */
export class LoupeConsole extends Construct {
  readonly bucket: s3.Bucket;
  readonly distribution: cloudfront.Distribution;

  constructor(scope: Construct, id: string, props: LoupeConsoleProps) {
    super(scope, id);
    this.bucket = new s3.Bucket(this, 'Assets', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      // Only the console's build; kept on stack deletion like the table (no auto-delete function).
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const headers = new cloudfront.ResponseHeadersPolicy(this, 'Headers', {
      securityHeadersBehavior: {
        contentSecurityPolicy: { contentSecurityPolicy: CONSOLE_CSP, override: true },
        contentTypeOptions: { override: true },
        frameOptions: { frameOption: cloudfront.HeadersFrameOption.DENY, override: true },
        referrerPolicy: { referrerPolicy: cloudfront.HeadersReferrerPolicy.NO_REFERRER, override: true },
        strictTransportSecurity: {
          accessControlMaxAge: Duration.days(365),
          includeSubdomains: true,
          override: true,
        },
      },
    });
    const region = Stack.of(this).region;
    const apiOrigin = new origins.HttpOrigin(`${props.api.restApiId}.execute-api.${region}.amazonaws.com`, {
      protocolPolicy: cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
      originSslProtocols: [cloudfront.OriginSslPolicy.TLS_V1_2],
      readTimeout: Duration.seconds(60),
    });
    const toApi: cloudfront.BehaviorOptions = {
      origin: apiOrigin,
      viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
      allowedMethods: cloudfront.AllowedMethods.ALLOW_ALL,
      cachePolicy: cloudfront.CachePolicy.CACHING_DISABLED,
      originRequestPolicy: cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
    };
    this.distribution = new cloudfront.Distribution(this, 'Distribution', {
      comment: 'Loupe web console and API',
      defaultRootObject: 'index.html',
      minimumProtocolVersion: cloudfront.SecurityPolicyProtocol.TLS_V1_2_2021,
      httpVersion: cloudfront.HttpVersion.HTTP2_AND_3,
      defaultBehavior: {
        origin: origins.S3BucketOrigin.withOriginAccessControl(this.bucket),
        viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        cachePolicy: cloudfront.CachePolicy.CACHING_OPTIMIZED,
        responseHeadersPolicy: headers,
      },
      additionalBehaviors: { [`/${STAGE}/*`]: toApi, '/.well-known/*': toApi },
    });
    // index.html is revalidated on every load (a new build is picked up at once); assets are content-hashed.
    new s3deploy.BucketDeployment(this, 'Deploy', {
      sources: [s3deploy.Source.asset(props.consoleDir)],
      destinationBucket: this.bucket,
      distribution: this.distribution,
      distributionPaths: ['/index.html'],
      cacheControl: [s3deploy.CacheControl.fromString('public, max-age=300')],
      prune: true,
    });
  }

  /** The console's HTTPS URL (its API is the same origin + /v1). */
  get url(): string {
    return `https://${this.distribution.distributionDomainName}/`;
  }
}
