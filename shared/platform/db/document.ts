import { documentInput, documentOutput, fromWire } from './wire';

/** What a call's answer says about itself (the AWS SDK's `$metadata`). */
export interface CallMetadata {
  httpStatusCode: number;
  requestId?: string;
  attempts: number;
  totalRetryDelay: number;
}

/** A DynamoDB error answer as the service sends it: HTTP status and JSON body (`__type`, `message`). */
export interface StoreFailure {
  statusCode: number;
  body: { __type?: string; message?: string; Message?: string; [k: string]: unknown };
}

export type StoreAnswer =
  | { output: Record<string, unknown>; metadata?: Partial<CallMetadata> }
  | { error: StoreFailure; metadata?: Partial<CallMetadata> };

/**
 * Executes one DynamoDB operation (`GetItem`, `Query`, …) on its wire input (the JSON the DynamoDB
 * protocol sends) and answers with the wire output or the service's error. Transports: signed HTTPS to
 * DynamoDB or a local endpoint (http-call.ts), and the local runtime's in-process store.
 */
export type StoreCall = (operation: string, input: Record<string, unknown>) => Promise<StoreAnswer>;

export type Operation =
  | 'GetItem'
  | 'PutItem'
  | 'UpdateItem'
  | 'DeleteItem'
  | 'Query'
  | 'Scan'
  | 'BatchWriteItem'
  | 'BatchGetItem'
  | 'CreateTable'
  | 'DescribeTable'
  | 'DeleteTable'
  | 'UpdateTimeToLive'
  | 'DescribeTimeToLive'
  | 'ListTables';

/** The error of a DynamoDB error answer, named by its type as the AWS SDK names it. */
export class DynamoDBError extends Error {
  readonly $fault: 'client' | 'server';
  readonly $metadata: CallMetadata;
  [member: string]: unknown;

  constructor(failure: StoreFailure, metadata: CallMetadata) {
    const { __type: type = '', message, Message } = failure.body;
    const name = errorName(type);
    super(message ?? Message ?? name);
    this.name = name;
    this.$fault = failure.statusCode >= 500 ? 'server' : 'client';
    this.$metadata = metadata;
    // As the SDK's service exceptions: the answer's fields are the error's own, the message enumerable.
    Object.defineProperty(this, 'message', { enumerable: true, writable: true, configurable: true });
    for (const [k, v] of Object.entries(failure.body))
      if (k !== 'message' && k !== 'Message' && !(k in this))
        this[k] = k === 'Item' && v && typeof v === 'object' ? fromWire(v as never) : v;
  }
}

/** `com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException` → `ConditionalCheckFailedException`. */
export function errorName(type: string): string {
  const code = type.split(':')[0];
  return code.slice(code.lastIndexOf('#') + 1) || 'UnknownError';
}

/**
 * The document client of the service: operations take and return plain JavaScript values where
 * DynamoDB has attribute values (Key, Item, ExpressionAttributeValues, …), like @aws-sdk/lib-dynamodb,
 * over any StoreCall. Error answers are thrown as DynamoDBError.
 */
export class DocumentClient {
  constructor(
    private readonly call: StoreCall,
    private readonly close: () => void = () => {},
  ) {}

  async send(operation: Operation, input: Record<string, unknown>): Promise<Record<string, any>> {
    const answer = await this.call(operation, documentInput(input));
    const metadata: CallMetadata = {
      httpStatusCode: 'error' in answer ? answer.error.statusCode : 200,
      attempts: 1,
      totalRetryDelay: 0,
      ...answer.metadata,
    };
    if ('error' in answer) throw new DynamoDBError(answer.error, metadata);
    return { ...documentOutput(answer.output), $metadata: metadata };
  }

  destroy(): void {
    this.close();
  }
}
