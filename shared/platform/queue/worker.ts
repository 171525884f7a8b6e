import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type * as z from 'zod/mini';
import { logger } from '../logger';

export interface QueueRecordMeta {
  record: SQSRecord;
  /** Deliveries of this message so far, this one included. */
  receiveCount: number;
  /** The `dedupeId` given to Queue.send, when there was one. */
  dedupeId?: string;
  context?: Context;
}

export type QueueWorkerHandler = (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse>;

/**
 * Makes the Lambda handler of a queue worker (functions/workers/<name>.ts) from a per-message function.
 * Each record's body is parsed as JSON (and checked with `schema` when given); a record whose function
 * throws, or whose body is invalid, is reported as a partial batch failure (Powertools batch
 * processing), so only it is retried and, after maxReceiveCount receives, dead-lettered.
 */
export function queueWorker<T = unknown>(
  handle: (body: T, meta: QueueRecordMeta) => Promise<void>,
  opts: { schema?: z.ZodMiniType<T>; processInParallel?: boolean } = {},
): QueueWorkerHandler {
  return async (event, context) => {
    const processor = new BatchProcessor(EventType.SQS);
    const recordHandler = async (record: SQSRecord) => {
      let body: unknown;
      try {
        body = JSON.parse(record.body);
      } catch {
        throw new Error(`Message ${record.messageId} does not have a JSON body.`);
      }
      if (opts.schema) {
        const parsed = opts.schema.safeParse(body);
        if (!parsed.success) {
          const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`);
          throw new Error(`Message ${record.messageId} has an invalid body: ${problems.join('; ')}`);
        }
        body = parsed.data;
      }
      const receiveCount = Number(record.attributes?.ApproximateReceiveCount ?? '1');
      try {
        await handle(body as T, {
          record,
          receiveCount,
          dedupeId: record.messageAttributes?.dedupeId?.stringValue,
          context,
        });
      } catch (e) {
        logger().warn('queue message failed', {
          messageId: record.messageId,
          receiveCount,
          error: (e as Error)?.message,
        });
        throw e;
      }
    };
    return processPartialResponse(event, recordHandler, processor, {
      context,
      throwOnFullBatchFailure: false,
      processInParallel: opts.processInParallel ?? true,
    });
  };
}
