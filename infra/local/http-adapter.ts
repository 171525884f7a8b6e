import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';

const MAX_READ = 1024 * 1024 + 1;

const EMPTY = Buffer.alloc(0);

/** Reads the body, stopping one byte past the limit (the handler answers 413 for that). */
function readBody(req: IncomingMessage): Promise<Buffer> {
  // No body announced (a GET): nothing to wait for (the request has already ended or ends empty).
  if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) {
    req.resume();
    return Promise.resolve(EMPTY);
  }
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (b: Buffer) => {
      if (size < MAX_READ) chunks.push(size + b.length <= MAX_READ ? b : b.subarray(0, MAX_READ - size));
      size += b.length;
    });
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

/** Builds the API Gateway REST proxy event that the deployed API would send for this request. */
export async function toProxyEvent(
  req: IncomingMessage,
  path: string,
  stage: string,
  url: URL = new URL(req.url ?? '/', 'http://local'),
): Promise<APIGatewayProxyEvent> {
  const body = await readBody(req);
  const headers: Record<string, string> = {};
  const multiHeaders: Record<string, string[]> = {};
  const h = req.headers;
  for (const k in h) {
    const v = h[k];
    if (v === undefined) continue;
    if (typeof v === 'string') {
      headers[k] = v;
      multiHeaders[k] = [v];
    } else {
      headers[k] = v.join(',');
      multiHeaders[k] = v;
    }
  }
  headers['x-forwarded-proto'] ??= 'http';
  const query: Record<string, string> = {};
  const multiQuery: Record<string, string[]> = {};
  let anyQuery = false;
  if (url.search)
    for (const [k, v] of url.searchParams) {
      anyQuery = true;
      query[k] = v;
      multiQuery[k] ??= [];
      multiQuery[k].push(v);
    }
  const sourceIp = req.socket.remoteAddress ?? '127.0.0.1';
  const binary = body.length > 0 && !isUtf8(body);
  return {
    resource: path,
    path,
    httpMethod: (req.method ?? 'GET').toUpperCase(),
    headers,
    multiValueHeaders: multiHeaders,
    queryStringParameters: anyQuery ? query : null,
    multiValueQueryStringParameters: anyQuery ? multiQuery : null,
    pathParameters: null,
    stageVariables: null,
    body: body.length ? (binary ? body.toString('base64') : body.toString('utf8')) : null,
    isBase64Encoded: binary,
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      authorizer: null,
      protocol: 'HTTP/1.1',
      httpMethod: (req.method ?? 'GET').toUpperCase(),
      path: `/${stage}${path}`,
      stage,
      requestId: randomUUID(),
      requestTimeEpoch: Date.now(),
      resourceId: 'local',
      resourcePath: path,
      domainName: headers.host ?? 'localhost',
      identity: { sourceIp } as APIGatewayProxyEvent['requestContext']['identity'],
    },
  };
}

export function writeProxyResult(res: ServerResponse, result: APIGatewayProxyResult): void {
  const headers: Record<string, string | number | string[]> = {};
  for (const [k, v] of Object.entries(result.headers ?? {})) headers[k] = String(v);
  for (const [k, v] of Object.entries(result.multiValueHeaders ?? {})) headers[k] = v.map(String);
  const body = result.isBase64Encoded
    ? Buffer.from(result.body, 'base64')
    : Buffer.from(result.body ?? '', 'utf8');
  headers['Content-Length'] = body.length;
  res.writeHead(result.statusCode, headers);
  res.end(body);
}

/**
 * The Lambda context of one invocation. `timeoutMs` is the time the invocation has from `startedAt`
 * (epoch ms): `getRemainingTimeInMillis` counts down to that real deadline, as Lambda's does.
 */
export function lambdaContext(functionName: string, timeoutMs: number, startedAt = Date.now()): Context {
  const deadline = startedAt + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}
