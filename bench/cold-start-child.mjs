// Runs in a fresh `node` process (no tsx, no imports): with BENCH_BUNDLE set, imports that function
// bundle and answers one API Gateway proxy request; without it, it is the baseline process.
const bundle = process.env.BENCH_BUNDLE;
const out = { status: 0, importMs: 0, requestMs: 0 };
if (bundle) {
  const t0 = performance.now();
  const mod = await import(bundle);
  const t1 = performance.now();
  const path = process.env.BENCH_PATH ?? '/';
  const method = process.env.BENCH_METHOD ?? 'GET';
  const body = process.env.BENCH_BODY ?? null;
  const headers = {
    host: 'bench.local',
    'x-forwarded-proto': 'https',
    authorization: `Bearer ${process.env.BENCH_KEY}`,
    ...JSON.parse(process.env.BENCH_HEADERS ?? '{}'),
  };
  const event = {
    resource: path,
    path,
    httpMethod: method,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: null,
    stageVariables: null,
    body,
    isBase64Encoded: false,
    requestContext: {
      accountId: 'bench',
      apiId: 'bench',
      authorizer: null,
      protocol: 'HTTP/1.1',
      httpMethod: method,
      path: `/v1${path}`,
      stage: 'v1',
      requestId: crypto.randomUUID(),
      requestTimeEpoch: Date.now(),
      resourceId: 'bench',
      resourcePath: path,
      domainName: 'bench.local',
      identity: { sourceIp: '127.0.0.1' },
    },
  };
  const context = {
    callbackWaitsForEmptyEventLoop: false,
    functionName: 'bench',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:local:000000000000:function:bench',
    memoryLimitInMB: '1024',
    awsRequestId: crypto.randomUUID(),
    logGroupName: '/aws/lambda/bench',
    logStreamName: 'bench',
    getRemainingTimeInMillis: () => 29_000,
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
  const res = await mod.handler(event, context);
  out.status = res?.statusCode ?? 0;
  // For tests of a bundle's answer (test/infra/cold-start-bundle.test.ts).
  if (process.env.BENCH_ECHO) out.body = res?.body;
  out.importMs = t1 - t0;
  out.requestMs = performance.now() - t1;
}
process.stdout.write(`${JSON.stringify(out)}\n`);
process.exit(0);
