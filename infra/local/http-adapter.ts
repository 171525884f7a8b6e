import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';

const MAX_READ = 1024 * 1024 + 1;

/** Reads the body, stopping one byte past the limit (the handler answers 413 for that). */
async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const b = chunk as Buffer;
    if (size < MAX_READ) chunks.push(b.subarray(0, MAX_READ - size));
    size += b.length;
  }
  return Buffer.concat(chunks);
}

/** Builds the API Gateway REST proxy event that the deployed API would send for this request. */
export async function toProxyEvent(
  req: IncomingMessage,
  path: string,
  stage: string,
): Promise<APIGatewayProxyEvent> {
  const url = new URL(req.url ?? '/', 'http://local');
  const body = await readBody(req);
  const headers: Record<string, string> = {};
  const multiHeaders: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined) continue;
    const values = Array.isArray(v) ? v : [v];
    headers[k] = values.join(',');
    multiHeaders[k] = values;
  }
  headers['x-forwarded-proto'] ??= 'http';
  const query: Record<string, string> = {};
  const multiQuery: Record<string, string[]> = {};
  for (const [k, v] of url.searchParams) {
    query[k] = v;
    multiQuery[k] = [...(multiQuery[k] ?? []), v];
  }
  const sourceIp = req.socket.remoteAddress ?? '127.0.0.1';
  const binary = body.length > 0 && !isUtf8(body);
  return {
    resource: path,
    path,
    httpMethod: (req.method ?? 'GET').toUpperCase(),
    headers,
    multiValueHeaders: multiHeaders,
    queryStringParameters: Object.keys(query).length ? query : null,
    multiValueQueryStringParameters: Object.keys(multiQuery).length ? multiQuery : null,
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

function isUtf8(b: Buffer): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(b);
    return true;
  } catch {
    return false;
  }
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

export function lambdaContext(functionName: string): Context {
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => 29_000,
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}
