import { config } from '../config';
import { traced } from '../tracing';
import { DocumentClient, type StoreCall } from './document';
import { httpStoreCall } from './http-call';
import type { Credentials } from './sigv4';

let doc: DocumentClient | undefined;
let local: StoreCall | undefined;

/**
 * Local runtime only (infra/local): makes `documentClient()` call the store through `call` (the
 * in-process store of infra/local/store-client.ts, without HTTP); undefined goes back to HTTP. Never
 * called in Lambda.
 */
export function setStoreCall(call: StoreCall | undefined): void {
  resetDocumentClient();
  local = call;
}

/** The DynamoDB document client: the real service in AWS, the local store (LOUPE_DYNAMODB_ENDPOINT) locally. */
export function documentClient(): DocumentClient {
  if (doc) return doc;
  if (local) {
    doc = new DocumentClient(local);
    return doc;
  }
  const cfg = config();
  const region =
    cfg.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? (cfg.LOUPE_DYNAMODB_ENDPOINT ? 'local' : '');
  if (!region) throw new Error('AWS_REGION is not set: the DynamoDB region is unknown.');
  const endpoint = cfg.LOUPE_DYNAMODB_ENDPOINT ?? regionalEndpoint(region);
  const credentials =
    cfg.runtime === 'local' && cfg.LOUPE_DYNAMODB_ENDPOINT ? async () => LOCAL_CREDENTIALS : awsCredentials();
  const call = httpStoreCall({ endpoint, region, credentials });
  // Each store call is an X-Ray subsegment of a sampled invocation (shared/platform/tracing).
  doc = new DocumentClient((operation, input) =>
    traced('store', 'DynamoDB', () => call(operation, input), { annotations: { operation } }),
  );
  return doc;
}

export function resetDocumentClient(): void {
  doc?.destroy();
  doc = undefined;
}

const LOCAL_CREDENTIALS: Credentials = { accessKeyId: 'local', secretAccessKey: 'local' };

/**
 * DynamoDB's regional endpoint, by partition (the AWS SDK's endpoint rules for the standard endpoint);
 * `AWS_USE_FIPS_ENDPOINT` and `AWS_USE_DUALSTACK_ENDPOINT` as the SDK reads them. Anything else (VPC
 * endpoint names, a proxy) is given with LOUPE_DYNAMODB_ENDPOINT.
 */
export function regionalEndpoint(region: string, env: NodeJS.ProcessEnv = process.env): string {
  if (!/^[a-z0-9-]+$/.test(region)) throw new Error(`Not an AWS region: ${region}`);
  const suffix = region.startsWith('cn-')
    ? 'amazonaws.com.cn'
    : region.startsWith('us-isob-')
      ? 'sc2s.sgov.gov'
      : region.startsWith('us-iso-')
        ? 'c2s.ic.gov'
        : region.startsWith('eu-isoe-')
          ? 'cloud.adc-e.uk'
          : region.startsWith('us-isof-')
            ? 'csp.hci.ic.gov'
            : 'amazonaws.com';
  const fips = env.AWS_USE_FIPS_ENDPOINT === 'true';
  const dual = env.AWS_USE_DUALSTACK_ENDPOINT === 'true';
  const service = fips ? 'dynamodb-fips' : 'dynamodb';
  if (dual)
    return `https://${service}.${region}.${suffix === 'amazonaws.com.cn' ? 'api.amazonwebservices.com.cn' : 'api.aws'}`;
  return `https://${service}.${region}.${suffix}`;
}

let fallbackCredentials: (() => Promise<Credentials>) | undefined;

/**
 * Where credentials come from when the environment has none: the operator tool (infra/local/cli.ts)
 * passes the AWS SDK's default provider chain (profiles, SSO, …). Functions never need it: Lambda puts
 * the role's credentials in the environment, so no SDK credential code is bundled into them.
 */
export function setFallbackCredentials(provider: (() => Promise<Credentials>) | undefined): void {
  fallbackCredentials = provider;
  resetDocumentClient();
}

/**
 * Credentials in AWS: Lambda puts the function role's in the environment (AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), read on each call; elsewhere the fallback provider.
 */
export function awsCredentials(): () => Promise<Credentials> {
  return async () => {
    const env = process.env;
    if (env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY)
      return {
        accessKeyId: env.AWS_ACCESS_KEY_ID,
        secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
        sessionToken: env.AWS_SESSION_TOKEN || undefined,
      };
    if (fallbackCredentials) return fallbackCredentials();
    throw new Error('No AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set.');
  };
}
