// Runs in a fresh `node` process (no tsx): imports the bundle of bench/observability-entry.ts and answers
// its request once (BENCH_MODE=cold) or BENCH_WARMUP + BENCH_N times (BENCH_MODE=warm); the figures go to
// the file BENCH_OUT (stdout carries the EMF lines, as in Lambda).
import { writeFileSync } from 'node:fs';

const path = '/bench/observability';
const event = () => ({
  resource: path,
  path,
  httpMethod: 'GET',
  headers: { host: 'bench.local', 'x-forwarded-proto': 'https' },
  multiValueHeaders: { host: ['bench.local'], 'x-forwarded-proto': ['https'] },
  queryStringParameters: null,
  multiValueQueryStringParameters: null,
  pathParameters: null,
  stageVariables: null,
  body: null,
  isBase64Encoded: false,
  requestContext: {
    accountId: 'bench',
    apiId: 'bench',
    protocol: 'HTTP/1.1',
    httpMethod: 'GET',
    path: `/v1${path}`,
    stage: 'v1',
    requestId: crypto.randomUUID(),
    requestTimeEpoch: Date.now(),
    resourcePath: path,
    domainName: 'bench.local',
    identity: { sourceIp: '127.0.0.1' },
  },
});
const context = () => ({
  callbackWaitsForEmptyEventLoop: false,
  functionName: 'bench',
  functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:bench',
  memoryLimitInMB: '1024',
  awsRequestId: crypto.randomUUID(),
  logGroupName: '/aws/lambda/bench',
  logStreamName: 'bench',
  getRemainingTimeInMillis: () => 29_000,
});

// A new trace per invocation, as Lambda gives (the X-Ray SDK resets its segment when the header changes).
const sampled = process.env.BENCH_SAMPLED;
const hex = (n) => Array.from({ length: n }, () => Math.floor(Math.random() * 16).toString(16)).join('');
const newTrace = () => {
  if (sampled === undefined) return;
  process.env._X_AMZN_TRACE_ID = `Root=1-${hex(8)}-${hex(24)};Parent=${hex(16)};Sampled=${sampled}`;
};

const out = {};
newTrace();
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const { handler } = await import(process.env.BENCH_BUNDLE);
const first = await handler(event(), context());
out.status = first?.statusCode ?? 0;
out.coldMs = performance.now() - t0;
const cpu1 = process.cpuUsage(cpu0);
out.coldCpuMs = (cpu1.user + cpu1.system) / 1000;
if (process.env.BENCH_MODE === 'warm') {
  const warmup = Number(process.env.BENCH_WARMUP ?? 200);
  const n = Number(process.env.BENCH_N ?? 2000);
  for (let i = 0; i < warmup; i++) {
    newTrace();
    await handler(event(), context());
  }
  const c0 = process.cpuUsage();
  const s = performance.now();
  for (let i = 0; i < n; i++) {
    newTrace();
    const r = await handler(event(), context());
    if (r.statusCode !== 200) throw new Error(`answered ${r.statusCode}`);
  }
  out.perRequestUs = ((performance.now() - s) * 1000) / n;
  const c = process.cpuUsage(c0);
  out.cpuPerRequestUs = (c.user + c.system) / n;
}
writeFileSync(process.env.BENCH_OUT, JSON.stringify(out));
process.exit(0);
