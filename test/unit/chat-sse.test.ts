import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { parseSse, sseEvent } from '../../shared/chat/sse';
import { endpoint } from '../../shared/http/endpoint';
import { on } from '../../shared/http/route';
import { sseReply, streamingHttpHandler } from '../../shared/http/stream';

describe('SSE encoding', () => {
  it('writes each event as one data line of JSON followed by a blank line', () => {
    const text = sseEvent({ type: 'delta', content: 'line one\nline two\r\n"quoted"' });
    expect(text).toBe('data: {"type":"delta","content":"line one\\nline two\\r\\n\\"quoted\\""}\n\n');
    expect(text.split('\n').length).toBe(3);
  });

  it('parses events back and separates keep-alive comments', () => {
    const body = `${sseEvent({ type: 'start', conversationId: 'c', messageId: 'm' })}: ping\n\n${sseEvent({ type: 'sql', sql: 'SELECT 1' })}`;
    expect(parseSse(body)).toEqual({
      events: [
        { type: 'start', conversationId: 'c', messageId: 'm' },
        { type: 'sql', sql: 'SELECT 1' },
      ],
      comments: ['ping'],
    });
  });
});

const spec = endpoint({
  method: 'POST',
  path: '/echo',
  tag: 'Test',
  summary: 'test',
  auth: 'none',
  body: z.object({ n: z.number().int().min(1) }),
});
const routes = [
  on(spec, async ({ body }) =>
    sseReply(async (sink) => {
      for (let i = 1; i <= body.n; i++) sink.write(sseEvent({ type: 'delta', content: String(i) }));
    }),
  ),
];
const event = (body: string): APIGatewayProxyEvent =>
  ({
    path: '/echo',
    httpMethod: 'POST',
    headers: { host: 'x', 'content-type': 'application/json' },
    body,
    isBase64Encoded: false,
    queryStringParameters: null,
    requestContext: { stage: 'v1', identity: { sourceIp: '1.2.3.4' } },
  }) as unknown as APIGatewayProxyEvent;
const context = { getRemainingTimeInMillis: () => 30_000 } as unknown as Context;

describe('streaming HTTP stack on Lambda (response streaming with the HTTP integration prelude)', () => {
  const g = globalThis as { awslambda?: any };
  const saved = g.awslambda;
  afterEach(() => {
    g.awslambda = saved;
  });

  /** A stand-in for the Lambda runtime: records what the handler writes to its response stream. */
  function fakeRuntime() {
    const written: Buffer[] = [];
    let contentType = '';
    const { Writable } = require('node:stream') as typeof import('node:stream');
    const stream = new Writable({
      write(chunk, _e, cb) {
        written.push(Buffer.from(chunk));
        cb();
      },
    });
    (stream as any).setContentType = (t: string) => {
      contentType = t;
    };
    g.awslambda = {
      streamifyResponse: (fn: any) => Object.assign(fn, { streaming: true }),
      HttpResponseStream: {
        from(s: any, prelude: unknown) {
          s.setContentType('application/vnd.awslambda.http-integration-response');
          s.write(JSON.stringify(prelude));
          s.write(new Uint8Array(8));
          return s;
        },
      },
    };
    return { stream, written: () => Buffer.concat(written), contentType: () => contentType };
  }

  const split = (buf: Buffer) => {
    const at = buf.indexOf(Buffer.alloc(8));
    return { prelude: JSON.parse(buf.subarray(0, at).toString()), body: buf.subarray(at + 8).toString() };
  };

  it('sends status and headers as the prelude, then the events as they are written', async () => {
    const rt = fakeRuntime();
    const handler = streamingHttpHandler(routes) as any;
    expect(handler.streaming).toBe(true);
    await handler(event('{"n":3}'), rt.stream, context);
    expect(rt.contentType()).toBe('application/vnd.awslambda.http-integration-response');
    const { prelude, body } = split(rt.written());
    expect(prelude.statusCode).toBe(200);
    expect(prelude.headers['Content-Type']).toBe('text/event-stream; charset=utf-8');
    expect(prelude.headers['Cache-Control']).toMatch(/no-cache/);
    expect(parseSse(body).events.map((e: any) => e.content)).toEqual(['1', '2', '3']);
    expect(rt.stream.writableEnded).toBe(true);
  });

  it('answers errors before the stream starts as ordinary envelope responses', async () => {
    const rt = fakeRuntime();
    await (streamingHttpHandler(routes) as any)(event('{"n":0}'), rt.stream, context);
    const { prelude, body } = split(rt.written());
    expect(prelude.statusCode).toBe(400);
    expect(prelude.headers['Content-Type']).toBe('application/json');
    expect(JSON.parse(body)).toMatchObject({ data: null, error: { code: 'VALIDATION_ERROR' } });
  });

  it('without the Lambda streaming globals collects the stream into one buffered response', async () => {
    g.awslambda = undefined;
    const handler = streamingHttpHandler(routes) as any;
    const res = await handler(event('{"n":2}'), context);
    expect(res.statusCode).toBe(200);
    expect(parseSse(res.body).events).toHaveLength(2);
  });
});
