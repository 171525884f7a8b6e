import { execFile } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployedEnvironment } from '../../bench/cold-start';
import { bundleFunction, NODE_FLAGS } from '../../infra/bundling';
import { functionEntries, ROOT } from '../../infra/functions';
import { createOrganization } from '../../shared/auth/bootstrap';
import { config } from '../../shared/platform/config';
import { useTestStore } from '../support/store';

useTestStore('tracing-bundle');
const work = mkdtempSync(join(tmpdir(), 'loupe-tracing-'));
const TRACE_ROOT = '1-6745a0b1-0123456789abcdef01234567';
const PARENT = '53995c3f42cd8ad8';

/** A stand-in for the X-Ray daemon: the UDP datagrams the SDK sends, each `{header}\n{segment}`. */
let daemon: Socket;
let datagrams: string[] = [];
let dir: string;
let key: string;

beforeAll(async () => {
  daemon = createSocket('udp4');
  daemon.on('message', (m) => datagrams.push(m.toString('utf8')));
  await new Promise<void>((ok) => daemon.bind(0, '127.0.0.1', () => ok()));
  const fn = functionEntries().find((f) => f.kind === 'http' && f.name === 'workflows')!;
  const r = await bundleFunction(fn, join(work, 'build'));
  // Copied out of the repository, as Lambda sees it.
  dir = join(work, 'workflows');
  cpSync(r.dir, dir, { recursive: true });
  ({ key } = await createOrganization({ name: 'Traced', adminEmail: 'traced@example.com' }));
}, 120_000);
afterAll(() => {
  daemon?.close();
  rmSync(work, { recursive: true, force: true });
});

/** One cold start of the bundle in a deployed function's environment; its answer and the modules it loaded. */
async function invoke(env: Record<string, string>) {
  datagrams = [];
  const loaded = join(work, 'loaded.json');
  rmSync(loaded, { force: true });
  const preload = join(work, 'preload.cjs');
  writeFileSync(
    preload,
    `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(loaded)}, JSON.stringify(process.moduleLoadList)));`,
  );
  const fn = functionEntries().find((f) => f.kind === 'http' && f.name === 'workflows')!;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [...NODE_FLAGS, '--require', preload, join(ROOT, 'bench', 'cold-start-child.mjs')],
    {
      cwd: work,
      encoding: 'utf8',
      timeout: 60_000,
      env: {
        ...deployedEnvironment(fn, dir, {
          PATH: process.env.PATH ?? '',
          LOUPE_TABLE_NAME: config().LOUPE_TABLE_NAME,
          LOUPE_DYNAMODB_ENDPOINT: config().LOUPE_DYNAMODB_ENDPOINT ?? '',
        }),
        AWS_XRAY_DAEMON_ADDRESS: `127.0.0.1:${daemon.address().port}`,
        LOUPE_LOG_LEVEL: 'ERROR',
        BENCH_BUNDLE: pathToFileURL(join(dir, 'index.mjs')).href,
        BENCH_PATH: '/workflows',
        BENCH_KEY: key,
        ...env,
      },
    },
  );
  const out: { status: number } = JSON.parse(stdout.trim().split('\n').pop()!);
  // The SDK sends each closed subsegment at once; give the last datagrams a moment to arrive.
  for (let i = 0; i < 50 && datagrams.length === 0 && env._X_AMZN_TRACE_ID?.includes('Sampled=1'); i++)
    await new Promise((r) => setTimeout(r, 20));
  const segments = datagrams.map((d) => {
    const [header, body] = d.split('\n');
    expect(JSON.parse(header)).toEqual({ format: 'json', version: 1 });
    return JSON.parse(body);
  });
  return { status: out.status, segments, modules: JSON.parse(readFileSync(loaded, 'utf8')) as string[] };
}

const header = (sampled: 0 | 1) => `Root=${TRACE_ROOT};Parent=${PARENT};Sampled=${sampled}`;

describe('tracing in a function bundle (Powertools Tracer, X-Ray SDK on AsyncLocalStorage)', () => {
  it('sends a DynamoDB subsegment of the invocation’s trace for every store call of a sampled request', async () => {
    const { status, segments, modules } = await invoke({ LOUPE_TRACING: 'on', _X_AMZN_TRACE_ID: header(1) });
    expect(status).toBe(200);
    // Authentication, the rate limit and the workflow list: several store calls, each a subsegment.
    expect(segments.length).toBeGreaterThanOrEqual(2);
    for (const s of segments) {
      expect(s).toMatchObject({
        type: 'subsegment',
        name: 'DynamoDB',
        namespace: 'aws',
        trace_id: TRACE_ROOT,
        parent_id: PARENT,
        annotations: { kind: 'store' },
      });
      expect(s.end_time).toBeGreaterThanOrEqual(s.start_time);
      expect(['GetItem', 'Query', 'UpdateItem', 'BatchGetItem', 'PutItem']).toContain(
        s.annotations.operation,
      );
    }
    expect(modules).toContain('NativeModule dgram');
    // The tracer did not bring node:https (TLS) or the X-Ray HTTP patchers' modules into a read.
    expect(modules.filter((m) => /NativeModule (https|tls|_tls_wrap)$/.test(m))).toEqual([]);
  }, 120_000);

  it('loads no tracer for an invocation that is not sampled, and none when tracing is off', async () => {
    const unsampled = await invoke({ LOUPE_TRACING: 'on', _X_AMZN_TRACE_ID: header(0) });
    expect(unsampled.status).toBe(200);
    expect(unsampled.segments).toEqual([]);
    expect(unsampled.modules).not.toContain('NativeModule dgram');
    const off = await invoke({ LOUPE_TRACING: 'off', _X_AMZN_TRACE_ID: header(1) });
    expect(off.status).toBe(200);
    expect(off.segments).toEqual([]);
    expect(off.modules).not.toContain('NativeModule dgram');
  }, 120_000);

  it('bundles the X-Ray SDK with the AsyncLocalStorage context instead of cls-hooked, in a lazy chunk', () => {
    const chunks = readdirSync(join(dir, 'chunks')).filter((f) => f.endsWith('.mjs'));
    const texts = chunks.map((f) => readFileSync(join(dir, 'chunks', f), 'utf8'));
    const entry = readFileSync(join(dir, 'index.mjs'), 'utf8');
    const xray = texts.filter((t) => t.includes('Disabling centralized sampling in Lambda environment'));
    expect(xray).toHaveLength(1);
    expect(entry).not.toContain('Disabling centralized sampling');
    // cls-hooked's hook (createHook with init/before/after/destroy) and its legacy fallback are left out.
    for (const t of [entry, ...texts]) {
      expect(t).not.toContain('async-hook-jl');
      expect(t).not.toMatch(/createHook\(\{init/);
    }
    expect(xray[0]).toContain('ns.run() or ns.bind() must be called first');
  });
});
