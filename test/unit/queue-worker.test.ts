import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { queueWorker } from '../../shared/platform/queue/worker';

const record = (id: string, body: string, receiveCount = 1): SQSRecord => ({
  messageId: id,
  receiptHandle: `rh-${id}`,
  body,
  attributes: {
    ApproximateReceiveCount: String(receiveCount),
    SentTimestamp: '1767225600000',
    SenderId: 'AIDA',
    ApproximateFirstReceiveTimestamp: '1767225600000',
  },
  messageAttributes: { dedupeId: { dataType: 'String', stringValue: `d-${id}` } },
  md5OfBody: '',
  eventSource: 'aws:sqs',
  eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:loupe-test',
  awsRegion: 'eu-west-1',
});
const event = (...records: SQSRecord[]): SQSEvent => ({ Records: records });

describe('queueWorker', () => {
  it('hands each parsed body and its receive count and dedupeId to the function, reporting no failures', async () => {
    const seen: unknown[] = [];
    const handler = queueWorker(async (body, meta) => {
      seen.push({ body, receiveCount: meta.receiveCount, dedupeId: meta.dedupeId });
    });
    const res = await handler(event(record('a', '{"x":1}', 2), record('b', '{"x":2}')));
    expect(res).toEqual({ batchItemFailures: [] });
    expect(seen).toEqual(
      expect.arrayContaining([
        { body: { x: 1 }, receiveCount: 2, dedupeId: 'd-a' },
        { body: { x: 2 }, receiveCount: 1, dedupeId: 'd-b' },
      ]),
    );
  });

  it('reports exactly the records whose function threw as batch item failures', async () => {
    const handler = queueWorker(async (body: { ok: boolean }) => {
      if (!body.ok) throw new Error('downstream refused');
    });
    const res = await handler(
      event(record('a', '{"ok":true}'), record('b', '{"ok":false}'), record('c', '{"ok":true}')),
    );
    expect(res).toEqual({ batchItemFailures: [{ itemIdentifier: 'b' }] });
  });

  it('reports every record when all fail, instead of throwing', async () => {
    const handler = queueWorker(async () => {
      throw new Error('all down');
    });
    const res = await handler(event(record('a', '{}'), record('b', '{}')));
    expect(res.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(['a', 'b']);
  });

  it('fails a record whose body is not JSON or does not match the schema, without calling the function', async () => {
    const calls: unknown[] = [];
    const handler = queueWorker(
      async (body: { id: string }) => {
        calls.push(body);
      },
      { schema: z.object({ id: z.string() }) },
    );
    const res = await handler(
      event(record('a', 'not json'), record('b', '{"id":5}'), record('c', '{"id":"x"}')),
    );
    expect(res.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(['a', 'b']);
    expect(calls).toEqual([{ id: 'x' }]);
  });

  it('can process records one after another', async () => {
    const order: string[] = [];
    const handler = queueWorker(
      async (body: { id: string; wait: number }) => {
        await new Promise((r) => setTimeout(r, body.wait));
        order.push(body.id);
      },
      { processInParallel: false },
    );
    await handler(event(record('a', '{"id":"a","wait":20}'), record('b', '{"id":"b","wait":0}')));
    expect(order).toEqual(['a', 'b']);
  });
});
