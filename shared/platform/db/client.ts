import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { config } from '../config';

let doc: DynamoDBDocumentClient | undefined;
let factory: (() => DynamoDBDocumentClient) | undefined;

/**
 * Local runtime only (infra/local): makes `documentClient()` build its client with `make` (the direct
 * store transport of infra/local/store-client.ts, without HTTP) instead of the SDK's; undefined goes
 * back to the SDK client. Never called in Lambda.
 */
export function setDocumentClientFactory(make: (() => DynamoDBDocumentClient) | undefined): void {
  resetDocumentClient();
  factory = make;
}

/**
 * Connections are reused (keep-alive): a new TCP (and in AWS, TLS) connection per call would cost more
 * than the call. 50 sockets is the SDK's own default; requests in one invocation rarely run more than a
 * few store calls at once.
 */
const agentOptions = { keepAlive: true, maxSockets: 50 };

/** The DynamoDB document client: the real service in AWS, dynalite (LOUPE_DYNAMODB_ENDPOINT) locally. */
export function documentClient(): DynamoDBDocumentClient {
  if (doc) return doc;
  if (factory) {
    doc = factory();
    return doc;
  }
  const cfg = config();
  const local = cfg.runtime === 'local' || !!cfg.LOUPE_DYNAMODB_ENDPOINT;
  const common: DynamoDBClientConfig = {
    maxAttempts: 3,
    requestHandler: { httpAgent: new HttpAgent(agentOptions), httpsAgent: new HttpsAgent(agentOptions) },
  };
  const client = new DynamoDBClient(
    cfg.LOUPE_DYNAMODB_ENDPOINT
      ? {
          ...common,
          endpoint: cfg.LOUPE_DYNAMODB_ENDPOINT,
          region: cfg.AWS_REGION ?? 'local',
          credentials: local ? { accessKeyId: 'local', secretAccessKey: 'local' } : undefined,
        }
      : common,
  );
  // The SDK's logger middleware filters every input and output for its (no-op) logger on each call; the
  // service passes no logger, so it only costs CPU.
  client.middlewareStack.remove('loggerMiddleware');
  doc = DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
  return doc;
}

export function resetDocumentClient(): void {
  doc?.destroy();
  doc = undefined;
}
