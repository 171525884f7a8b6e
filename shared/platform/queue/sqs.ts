import type { MessageAttributeValue, SQSClient } from '@aws-sdk/client-sqs';
import { checkSend } from './limits';
import type { Queue } from './port';

/** The SQS client library, imported on first send (most requests enqueue nothing). */
const sqsSdk = () => import('@aws-sdk/client-sqs');

/**
 * Queue port on SQS standard queues (one per worker, URLs from LOUPE_QUEUE_URLS). Standard queues have
 * no MessageDeduplicationId, so `dedupeId` travels as the `dedupeId` message attribute for the worker.
 */
export class SqsQueue implements Queue {
  constructor(
    private readonly urls: Record<string, string>,
    private sqs?: SQSClient,
  ) {}

  async send(worker: string, body: unknown, opts: { delaySeconds?: number; dedupeId?: string } = {}) {
    const url = this.urls[worker];
    if (!url) throw new Error(`No queue URL for worker "${worker}" in LOUPE_QUEUE_URLS.`);
    const text = checkSend(body, opts);
    const attributes: Record<string, MessageAttributeValue> | undefined = opts.dedupeId
      ? { dedupeId: { DataType: 'String', StringValue: opts.dedupeId } }
      : undefined;
    const sdk = await sqsSdk();
    this.sqs ??= new sdk.SQSClient({});
    await this.sqs.send(
      new sdk.SendMessageCommand({
        QueueUrl: url,
        MessageBody: text,
        DelaySeconds: opts.delaySeconds,
        MessageAttributes: attributes,
      }),
    );
  }
}
