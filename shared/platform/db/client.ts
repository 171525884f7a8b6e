import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { config } from '../config';

let doc: DynamoDBDocumentClient | undefined;

/** The DynamoDB document client: the real service in AWS, dynalite (LOUPE_DYNAMODB_ENDPOINT) locally. */
export function documentClient(): DynamoDBDocumentClient {
  if (doc) return doc;
  const cfg = config();
  const local = cfg.runtime === 'local' || !!cfg.LOUPE_DYNAMODB_ENDPOINT;
  const client = new DynamoDBClient(
    cfg.LOUPE_DYNAMODB_ENDPOINT
      ? {
          endpoint: cfg.LOUPE_DYNAMODB_ENDPOINT,
          region: cfg.AWS_REGION ?? 'local',
          credentials: local ? { accessKeyId: 'local', secretAccessKey: 'local' } : undefined,
          maxAttempts: 3,
        }
      : { maxAttempts: 3 },
  );
  doc = DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
  return doc;
}

export function resetDocumentClient(): void {
  doc?.destroy();
  doc = undefined;
}
