import type { ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';

/**
 * Lambda response streaming, locally. The Lambda Node.js runtime gives handlers the `awslambda` global:
 * `streamifyResponse(fn)` marks a handler as streaming (it is then called with a response stream), and
 * `HttpResponseStream.from(stream, {statusCode, headers})` writes the HTTP integration prelude (the JSON
 * metadata, then 8 NUL bytes) before the body. This module provides the same globals and decodes the same
 * bytes onto a real chunked HTTP response, as API Gateway does, so the deployed handler runs unchanged.
 */
const STREAMING = Symbol.for('aws.lambda.runtime.handler.streaming');
const PRELUDE_TYPE = 'application/vnd.awslambda.http-integration-response';
const DELIMITER = Buffer.alloc(8);

interface PreludeStream extends NodeJS.WritableStream {
  setContentType?(type: string): void;
}

export function installLambdaGlobals(): void {
  // Other libraries (the Lambda invoke store) may already have created `awslambda`: add to it.
  const g = globalThis as { awslambda?: Record<string, unknown> };
  g.awslambda ??= {};
  if (typeof g.awslambda.streamifyResponse === 'function') return;
  Object.assign(g.awslambda, {
    streamifyResponse<T extends object>(fn: T): T {
      (fn as Record<symbol, unknown>)[STREAMING] = 'response';
      return fn;
    },
    HttpResponseStream: {
      from(stream: PreludeStream, prelude: Record<string, unknown>) {
        stream.setContentType?.(PRELUDE_TYPE);
        stream.write(JSON.stringify(prelude));
        stream.write(DELIMITER);
        return stream;
      },
    },
  });
}

export const isStreamingHandler = (h: unknown): boolean =>
  typeof h === 'function' && (h as unknown as Record<symbol, unknown>)[STREAMING] === 'response';

/** The response stream handed to a streaming handler: decodes the prelude, then passes the body through. */
class LocalResponseStream extends Writable {
  private contentType = 'application/octet-stream';
  private pending: Buffer = Buffer.alloc(0);
  private started = false;
  status = 200;

  constructor(private readonly res: ServerResponse) {
    super();
    // The client went away: the handler sees the stream close (and stops producing).
    res.on('close', () => {
      if (!res.writableFinished) this.destroy();
    });
  }

  setContentType(type: string) {
    this.contentType = type;
  }

  override _write(chunk: Buffer | string, _enc: BufferEncoding, cb: (e?: Error | null) => void) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (this.started) return this.forward(buf, cb);
    if (this.contentType !== PRELUDE_TYPE) {
      this.begin(200, { 'content-type': this.contentType });
      return this.forward(buf, cb);
    }
    this.pending = Buffer.concat([this.pending, buf]);
    const at = this.pending.indexOf(DELIMITER);
    if (at < 0) return cb();
    let prelude: { statusCode?: number; headers?: Record<string, string>; cookies?: string[] };
    try {
      prelude = JSON.parse(this.pending.subarray(0, at).toString('utf8'));
    } catch (e) {
      return cb(new Error(`Malformed response stream prelude: ${(e as Error).message}`));
    }
    const headers: Record<string, string | string[]> = { ...(prelude.headers ?? {}) };
    if (prelude.cookies?.length) headers['set-cookie'] = prelude.cookies;
    this.begin(prelude.statusCode ?? 200, headers);
    const rest = this.pending.subarray(at + DELIMITER.length);
    this.pending = Buffer.alloc(0);
    if (rest.length) return this.forward(rest, cb);
    cb();
  }

  override _final(cb: (e?: Error | null) => void) {
    if (!this.started) this.begin(this.pending.length ? 502 : 200, { 'content-type': 'text/plain' });
    this.res.end(() => cb());
  }

  private begin(status: number, headers: Record<string, string | string[]>) {
    this.started = true;
    this.status = status;
    // No Content-Length: Node sends the body with chunked transfer encoding, flushed per write.
    this.res.writeHead(status, headers);
    this.res.flushHeaders();
  }

  private forward(buf: Buffer, cb: (e?: Error | null) => void) {
    if (this.res.write(buf)) cb();
    else this.res.once('drain', () => cb());
  }
}

type StreamingHandler = (event: APIGatewayProxyEvent, stream: Writable, context: Context) => Promise<void>;

/** Invokes a streaming handler onto the HTTP response; returns the status it sent. */
export async function invokeStreaming(
  handler: unknown,
  event: APIGatewayProxyEvent,
  context: Context,
  res: ServerResponse,
): Promise<number> {
  const stream = new LocalResponseStream(res);
  await (handler as StreamingHandler)(event, stream, context);
  if (!stream.writableEnded && !stream.destroyed) await new Promise<void>((ok) => stream.end(() => ok()));
  return stream.status;
}
