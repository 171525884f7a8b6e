import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { logger } from '../platform/logger';
import { httpHandler } from './handler';
import type { Reply, Route } from './route';

/** Where a streamed body writes: text chunks, and a signal that fires when the client has gone. */
export interface StreamSink {
  write(chunk: string): void;
  readonly signal: AbortSignal;
}

export type StreamBody = (sink: StreamSink) => Promise<void>;

/** A route reply whose body is produced while it is sent (Server-Sent Events). */
export interface StreamingReply extends Reply {
  stream: StreamBody;
}

const isStreaming = (r: Reply): r is StreamingReply => typeof (r as StreamingReply).stream === 'function';

export const SSE_HEADERS = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-cache, no-transform',
  'X-Accel-Buffering': 'no',
};

/** The keep-alive comment and its interval: at least one every 15 s while a stream is open. */
export const PING = ': ping\n\n';
let pingMs = 15_000;
/** Tests shorten the keep-alive interval. */
export function setPingInterval(ms: number): void {
  pingMs = ms;
}

/** A streamed Server-Sent Events reply (status 200); `body` writes the events. */
export function sseReply(body: StreamBody, headers: Record<string, string> = {}): StreamingReply {
  return { status: 200, headers, stream: body };
}

/** The Lambda Node.js runtime's response-streaming globals (`awslambda`), where present. */
interface LambdaStreaming {
  streamifyResponse(
    fn: (event: APIGatewayProxyEvent, stream: NodeJS.WritableStream, context: Context) => Promise<void>,
  ): unknown;
  HttpResponseStream: {
    from(stream: NodeJS.WritableStream, prelude: Record<string, unknown>): NodeJS.WritableStream;
  };
}

const lambdaGlobal = (): LambdaStreaming | undefined => {
  const g = (globalThis as { awslambda?: Partial<LambdaStreaming> }).awslambda;
  return typeof g?.streamifyResponse === 'function' && g.HttpResponseStream
    ? (g as LambdaStreaming)
    : undefined;
};

/**
 * The HTTP stack for a group that streams. It is the same middy stack as `httpHandler` (request context,
 * body limit, routing, authentication, rate limits, validation, envelope errors), so everything that
 * fails before a stream starts is an ordinary envelope error. A route that returns `sseReply(...)` then
 * streams its body.
 *
 * In Lambda, the handler is wrapped with `awslambda.streamifyResponse`; the status and headers go first
 * as the HTTP integration prelude (`awslambda.HttpResponseStream.from`: JSON metadata, 8 NUL bytes),
 * then the body as it is written; API Gateway (REST, response transfer mode STREAM) forwards it. The
 * local runtime provides the same globals and decodes the same prelude onto a chunked HTTP response.
 * Without the globals (e.g. a plain invocation), the stream is collected and returned whole.
 */
export function streamingHttpHandler(routes: Route[]) {
  const pending = new WeakMap<object, StreamBody>();
  const inner = httpHandler(
    routes.map((route) => ({
      ...route,
      run: async (req) => {
        const reply = await route.run(req);
        if (!isStreaming(reply)) return reply;
        pending.set(req.event, reply.stream);
        return {
          status: reply.status ?? 200,
          headers: { ...SSE_HEADERS, ...(reply.headers ?? {}) },
          raw: { body: '', contentType: SSE_HEADERS['Content-Type'] },
        };
      },
    })),
    { streaming: true },
  );

  const lambda = lambdaGlobal();
  if (!lambda)
    return async (event: APIGatewayProxyEvent, context: Context): Promise<APIGatewayProxyResult> => {
      const result = await inner(event, context);
      const body = pending.get(event);
      if (!body) return result;
      const parts: string[] = [];
      await runBody(body, { write: (c) => parts.push(c) }, new AbortController());
      return { ...result, body: parts.join('') };
    };

  return lambda.streamifyResponse(async (event, responseStream, context) => {
    const result = await inner(event, context);
    const body = pending.get(event);
    const headers = { ...(result.headers ?? {}) } as Record<string, string>;
    const out = lambda.HttpResponseStream.from(responseStream, {
      statusCode: result.statusCode,
      headers,
      ...(result.multiValueHeaders?.['Set-Cookie']
        ? { cookies: result.multiValueHeaders['Set-Cookie'] }
        : {}),
    });
    const aborted = new AbortController();
    const onGone = () => aborted.abort();
    out.on('close', onGone);
    out.on('error', onGone);
    try {
      if (body) await runBody(body, { write: (c) => void out.write(c) }, aborted);
      else out.write(result.isBase64Encoded ? Buffer.from(result.body, 'base64') : (result.body ?? ''));
    } finally {
      out.removeListener('close', onGone);
      const w = out as NodeJS.WritableStream & { destroyed?: boolean; writableEnded?: boolean };
      if (!w.destroyed && !w.writableEnded) await new Promise<void>((ok) => out.end(() => ok()));
    }
  });
}

/** Runs a streamed body with the keep-alive timer; a failure after the stream started is logged. */
async function runBody(body: StreamBody, target: { write(c: string): void }, aborted: AbortController) {
  const timer = setInterval(() => {
    if (!aborted.signal.aborted) target.write(PING);
  }, pingMs);
  try {
    await body({
      write: (c) => {
        if (!aborted.signal.aborted) target.write(c);
      },
      signal: aborted.signal,
    });
  } catch (e) {
    logger().error('Streamed response failed', { error: e instanceof Error ? e.message : String(e) });
  } finally {
    clearInterval(timer);
  }
}
