import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resetConfig } from '../../shared/platform/config';
import { queue, resetQueue } from '../../shared/platform/queue';
import { SqsQueue } from '../../shared/platform/queue/sqs';

const URLS = {
  mailer: 'https://sqs.eu-west-1.amazonaws.com/123456789012/loupe-mailer',
  runner: 'https://sqs.eu-west-1.amazonaws.com/123456789012/loupe-runner',
};

describe('SQS queue adapter', () => {
  const sqs = mockClient(SQSClient);
  beforeEach(() => {
    sqs.reset();
    sqs.on(SendMessageCommand).resolves({ MessageId: 'm-1' });
  });

  it('sends the JSON body to the worker queue URL with the delay', async () => {
    await new SqsQueue(URLS, new SQSClient({ region: 'eu-west-1' })).send(
      'runner',
      { runId: 'r1', n: 2 },
      { delaySeconds: 30 },
    );
    const calls = sqs.commandCalls(SendMessageCommand);
    expect(calls).toHaveLength(1);
    expect(calls[0].args[0].input).toEqual({
      QueueUrl: URLS.runner,
      MessageBody: '{"runId":"r1","n":2}',
      DelaySeconds: 30,
      MessageAttributes: undefined,
    });
  });

  it('carries dedupeId as a message attribute (standard queues have no MessageDeduplicationId)', async () => {
    await new SqsQueue(URLS, new SQSClient({ region: 'eu-west-1' })).send(
      'mailer',
      { a: 1 },
      { dedupeId: 'run-9' },
    );
    const input = sqs.commandCalls(SendMessageCommand)[0].args[0].input;
    expect(input.MessageAttributes).toEqual({ dedupeId: { DataType: 'String', StringValue: 'run-9' } });
    expect(input).not.toHaveProperty('MessageDeduplicationId');
    expect(input.DelaySeconds).toBeUndefined();
  });

  it('refuses a worker without a queue URL and sends nothing', async () => {
    await expect(
      new SqsQueue(URLS, new SQSClient({ region: 'eu-west-1' })).send('ghost', {}),
    ).rejects.toThrow(/No queue URL for worker "ghost"/);
    expect(sqs.commandCalls(SendMessageCommand)).toHaveLength(0);
  });

  it('refuses a delay over 900 seconds and sends nothing', async () => {
    await expect(
      new SqsQueue(URLS, new SQSClient({ region: 'eu-west-1' })).send('mailer', {}, { delaySeconds: 901 }),
    ).rejects.toThrow(/delaySeconds/);
    expect(sqs.commandCalls(SendMessageCommand)).toHaveLength(0);
  });

  describe('queue() in AWS', () => {
    const KEYS = ['LOUPE_RUNTIME', 'AWS_REGION', 'LOUPE_QUEUE_URLS'] as const;
    const saved = Object.fromEntries(KEYS.map((k) => [k, process.env[k]]));
    beforeEach(() => {
      process.env.LOUPE_RUNTIME = 'aws';
      process.env.AWS_REGION = 'eu-west-1';
      resetConfig();
      resetQueue();
    });
    afterEach(() => {
      for (const k of KEYS) {
        if (saved[k] === undefined) delete process.env[k];
        else process.env[k] = saved[k];
      }
      resetConfig();
      resetQueue();
    });

    it('uses the queue URLs from LOUPE_QUEUE_URLS', async () => {
      process.env.LOUPE_QUEUE_URLS = JSON.stringify(URLS);
      resetConfig();
      await queue().send('mailer', { hello: 1 });
      expect(sqs.commandCalls(SendMessageCommand)[0].args[0].input.QueueUrl).toBe(URLS.mailer);
    });

    it('names LOUPE_QUEUE_URLS when it is not a JSON object of URLs', () => {
      process.env.LOUPE_QUEUE_URLS = '["not", "an", "object"]';
      resetConfig();
      expect(() => queue()).toThrow(/LOUPE_QUEUE_URLS must be a JSON object/);
      process.env.LOUPE_QUEUE_URLS = '{broken';
      resetConfig();
      expect(() => queue()).toThrow(/LOUPE_QUEUE_URLS must be a JSON object/);
    });
  });
});
