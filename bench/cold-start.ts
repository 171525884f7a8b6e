import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NODE_FLAGS, runtimeEnvironment } from '../infra/bundling';
import { DEFAULT_MEMORY_MB } from '../infra/constructs/function';
import { type FunctionEntry, functionEntries } from '../infra/functions';
import { type BenchModule, median, ms } from './context';

/** Target: median cold start (fresh process → one answered request) under 150 ms. */
export const COLD_START_TARGET_MS = 150;
const CHILD = join(import.meta.dirname, 'cold-start-child.mjs');

/**
 * Functions whose first real request is not a GET: the MCP endpoint answers GET with 405, so its cold
 * start is measured with a tools/list (which builds every tool's input and output schema).
 */
const REQUESTS: Record<
  string,
  { method: string; path: string; body: string; headers: Record<string, string> }
> = {
  mcp: {
    method: 'POST',
    path: '/mcp',
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
    },
  },
};

/** The child's environment for a function's request (BENCH_METHOD, BENCH_BODY, BENCH_HEADERS when not a GET). */
const requestEnv = (name: string, path: string): Record<string, string> => {
  const r = REQUESTS[name];
  return r
    ? {
        BENCH_PATH: r.path,
        BENCH_METHOD: r.method,
        BENCH_BODY: r.body,
        BENCH_HEADERS: JSON.stringify(r.headers),
      }
    : { BENCH_PATH: path };
};

interface Sample {
  wallMs: number;
  status: number;
  importMs: number;
  requestMs: number;
}

/** One fresh Node process with the deployed functions' flags (NODE_FLAGS); wall time from spawn to exit. */
function runOnce(env: Record<string, string>): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [...NODE_FLAGS, CHILD], {
      cwd: tmpdir(),
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      const wallMs = performance.now() - started;
      const line = stdout.trim().split('\n').pop() ?? '';
      if (code !== 0 || !line.startsWith('{'))
        return reject(new Error(`cold-start child failed (exit ${code}): ${stderr.trim() || stdout.trim()}`));
      resolve({ wallMs, ...JSON.parse(line) });
    });
  });
}

export const coldStart: BenchModule = {
  name: 'cold-start',
  description:
    'Cold start per HTTP function: a fresh node process imports the bundle and answers one real request against a local store; baseline = the same process importing nothing',
  async run(ctx) {
    const [bundles, org, local] = await Promise.all([ctx.bundles(), ctx.org(), ctx.childEnv()]);
    // Each bundle is copied out of the repository first, as Lambda sees it: no node_modules to fall
    // back on, nothing of the repository on the module path.
    const isolated = mkdtempSync(join(tmpdir(), 'loupe-cold-'));
    const http = bundles.flatMap((b) => {
      if (b.fn.kind !== 'http') return [];
      const dir = join(isolated, b.fn.name);
      cpSync(b.dir, dir, { recursive: true });
      return [
        {
          name: b.fn.name,
          bundle: join(dir, 'index.mjs'),
          prefixes: b.fn.group.prefixes,
          path: '',
          env: deployedEnvironment(b.fn, dir, local),
        },
      ];
    });
    try {
      return await measure(ctx, http, org, deployedEnvironment(undefined, isolated, local));
    } finally {
      rmSync(isolated, { recursive: true, force: true });
    }
  },
};

async function measure(
  ctx: Parameters<BenchModule['run']>[0],
  http: { name: string; bundle: string; prefixes: string[]; path: string; env: Record<string, string> }[],
  org: { key: string },
  env: Record<string, string>,
) {
  {
    const baseline: number[] = [];
    const samples = new Map<string, Sample[]>(http.map((b) => [b.name, []]));
    // Warm the file cache (these runs are not counted) and pick the request: GET on the group's first
    // prefix that answers 2xx with an admin key (auth, routing, a store read). A function with none
    // stops the bench: an error answer (401, 404…) would measure a shorter path than a real one.
    for (const b of http) {
      const fixed = REQUESTS[b.name];
      if (fixed) {
        const s = await runOnce({
          ...b.env,
          BENCH_BUNDLE: b.bundle,
          BENCH_KEY: org.key,
          ...requestEnv(b.name, ''),
        });
        if (s.status < 200 || s.status >= 300)
          throw new Error(`${b.name}: ${fixed.method} ${fixed.path} answered ${s.status}`);
        b.path = fixed.path;
        continue;
      }
      const seen: string[] = [];
      for (const p of b.prefixes) {
        const s = await runOnce({ ...b.env, BENCH_BUNDLE: b.bundle, BENCH_KEY: org.key, BENCH_PATH: p });
        seen.push(`GET ${p} → ${s.status}`);
        if (s.status >= 200 && s.status < 300) {
          b.path = p;
          break;
        }
      }
      if (!b.path) throw new Error(`${b.name}: no GET answered 2xx (${seen.join(', ')})`);
    }
    // Interleaved, so drift on the machine affects the baseline and the functions alike.
    for (let i = 0; i < ctx.runs; i++) {
      baseline.push((await runOnce(env)).wallMs);
      for (const b of http) {
        const s = await runOnce({
          ...b.env,
          BENCH_BUNDLE: b.bundle,
          BENCH_KEY: org.key,
          ...requestEnv(b.name, b.path),
        });
        if (s.status < 200 || s.status >= 300)
          throw new Error(`${b.name}: ${REQUESTS[b.name]?.method ?? 'GET'} ${b.path} answered ${s.status}`);
        samples.get(b.name)!.push(s);
      }
    }
    const base = median(baseline);
    const overTarget: string[] = [];
    const rows = http.map((b) => {
      const s = samples.get(b.name)!;
      const wall = median(s.map((x) => x.wallMs));
      const over = wall >= COLD_START_TARGET_MS;
      if (over)
        overTarget.push(
          `http/${b.name}: median cold start ${ms(wall)} (target < ${COLD_START_TARGET_MS} ms)`,
        );
      return [
        `http/${b.name}`,
        `${REQUESTS[b.name] ? `${REQUESTS[b.name].method} ${b.path} (tools/list)` : `GET ${b.path}`} → ${s[0].status}`,
        ms(wall),
        ms(wall - base),
        ms(median(s.map((x) => x.importMs))),
        ms(median(s.map((x) => x.requestMs))),
        over ? 'OVER TARGET' : 'ok',
      ];
    });
    return {
      head: ['function', 'request', 'median', 'minus baseline', 'import', 'first request', 'target < 150 ms'],
      rows,
      notes: [
        `baseline (node with the functions' flags [${NODE_FLAGS.join(' ')}], imports nothing): median ${ms(base)} over ${ctx.runs} runs; every figure is a median of ${ctx.runs} runs`,
        '"import" and "first request" are measured inside the process; "median" is spawn-to-exit wall time.',
        'Each bundle runs from a copy outside the repository (no node_modules), as in Lambda, with the environment a deployed function has: the AWS runtime (LOUPE_RUNTIME=aws), the variables the stack sets (placeholder ARNs and queue URLs) and those Lambda sets (region, role credentials, function name and memory); only the table endpoint (LOUPE_DYNAMODB_ENDPOINT) points at the local store, reached over signed HTTP.',
      ],
      overTarget,
    };
  }
}

const ACCOUNT = '123456789012';
const REGION = 'us-east-1';

/**
 * The environment of a deployed function (infra/stack.ts and infra/constructs/function.ts set the
 * LOUPE_ variables, Lambda the AWS_ ones), with placeholder ARNs, fake role credentials (the local
 * store does not check signatures) and the table endpoint pointing at the local store. `fn` undefined:
 * the baseline process, which gets the same environment.
 */
export function deployedEnvironment(
  fn: FunctionEntry | undefined,
  taskRoot: string,
  local: Record<string, string>,
): Record<string, string> {
  const all = functionEntries();
  const name = fn ? `Loupe-${fn.kind}-${fn.name}` : 'Loupe-baseline';
  const def = fn && (fn.kind === 'http' ? fn.group : fn.worker);
  const queueUrls = Object.fromEntries(
    all.flatMap((f) =>
      f.kind === 'workers' && f.worker.queue
        ? [[f.name, `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/Loupe-${f.name}`]]
        : [],
    ),
  );
  const workerArns = Object.fromEntries(
    all.flatMap((f) =>
      f.kind === 'workers'
        ? [[f.name, `arn:aws:lambda:${REGION}:${ACCOUNT}:function:Loupe-workers-${f.name}`]]
        : [],
    ),
  );
  return {
    PATH: local.PATH,
    ...runtimeEnvironment,
    // Set by Lambda.
    AWS_REGION: REGION,
    AWS_DEFAULT_REGION: REGION,
    AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
    AWS_LAMBDA_FUNCTION_NAME: name,
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(def?.memoryMb ?? DEFAULT_MEMORY_MB),
    AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${name}`,
    AWS_LAMBDA_LOG_STREAM_NAME: '2026/11/24/[$LATEST]0123456789abcdef0123456789abcdef',
    AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
    AWS_ACCESS_KEY_ID: 'ASIAEXAMPLEBENCH0000',
    AWS_SECRET_ACCESS_KEY: 'bench/secret/access/key/0000000000000000',
    AWS_SESSION_TOKEN: 'bench-session-token',
    LAMBDA_TASK_ROOT: taskRoot,
    LAMBDA_RUNTIME_DIR: '/var/runtime',
    TZ: ':UTC',
    LANG: 'en_US.UTF-8',
    // Set by the stack.
    LOUPE_TABLE_NAME: local.LOUPE_TABLE_NAME,
    LOUPE_KMS_KEY_ID: `arn:aws:kms:${REGION}:${ACCOUNT}:key/00000000-0000-4000-8000-000000000000`,
    LOUPE_QUEUE_URLS: JSON.stringify(queueUrls),
    LOUPE_SCHEDULER_GROUP: 'Loupe-workflows',
    LOUPE_SCHEDULER_ROLE_ARN: `arn:aws:iam::${ACCOUNT}:role/Loupe-scheduler`,
    LOUPE_WORKER_ARNS: JSON.stringify(workerArns),
    LOUPE_OPENAI_SECRET_ARN: `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:Loupe-model-key-AbCdEf`,
    LOUPE_PUBLIC_URL: `https://abcdefghij.execute-api.${REGION}.amazonaws.com/v1`,
    POWERTOOLS_METRICS_NAMESPACE: 'Loupe/Loupe',
    LOUPE_TRACING: 'on',
    // The local store in place of DynamoDB.
    LOUPE_DYNAMODB_ENDPOINT: local.LOUPE_DYNAMODB_ENDPOINT,
  };
}
