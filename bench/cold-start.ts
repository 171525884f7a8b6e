import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NODE_FLAGS } from '../infra/bundling';
import { type BenchModule, median, ms } from './context';

/** Target: median cold start (fresh process → one answered request) under 150 ms. */
export const COLD_START_TARGET_MS = 150;
const CHILD = join(import.meta.dirname, 'cold-start-child.mjs');

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
    const [bundles, org, env] = await Promise.all([ctx.bundles(), ctx.org(), ctx.childEnv()]);
    // Each bundle is copied out of the repository first, as Lambda sees it: no node_modules to fall
    // back on, nothing of the repository on the module path.
    const isolated = mkdtempSync(join(tmpdir(), 'loupe-cold-'));
    const http = bundles.flatMap((b) => {
      if (b.fn.kind !== 'http') return [];
      const dir = join(isolated, b.fn.name);
      cpSync(b.dir, dir, { recursive: true });
      return [{ name: b.fn.name, bundle: join(dir, 'index.mjs'), prefixes: b.fn.group.prefixes, path: '' }];
    });
    try {
      return await measure(ctx, http, org, env);
    } finally {
      rmSync(isolated, { recursive: true, force: true });
    }
  },
};

async function measure(
  ctx: Parameters<BenchModule['run']>[0],
  http: { name: string; bundle: string; prefixes: string[]; path: string }[],
  org: { key: string },
  env: Record<string, string>,
) {
  {
    const baseline: number[] = [];
    const samples = new Map<string, Sample[]>(http.map((b) => [b.name, []]));
    // Warm the file cache (these runs are not counted) and pick the request: GET on the group's first
    // prefix that answers 2xx with an admin key (auth, routing, a store read), else its first prefix.
    for (const b of http) {
      for (const p of b.prefixes) {
        const s = await runOnce({ ...env, BENCH_BUNDLE: b.bundle, BENCH_KEY: org.key, BENCH_PATH: p });
        if (s.status >= 200 && s.status < 300) {
          b.path = p;
          break;
        }
      }
      b.path ||= b.prefixes[0];
    }
    // Interleaved, so drift on the machine affects the baseline and the functions alike.
    for (let i = 0; i < ctx.runs; i++) {
      baseline.push((await runOnce(env)).wallMs);
      for (const b of http) {
        const s = await runOnce({ ...env, BENCH_BUNDLE: b.bundle, BENCH_KEY: org.key, BENCH_PATH: b.path });
        if (s.status >= 500 || s.status === 0)
          throw new Error(`${b.name}: GET ${b.path} answered ${s.status}`);
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
        `GET ${b.path} → ${s[0].status}`,
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
        'Each bundle runs from a copy outside the repository (no node_modules), as in Lambda.',
      ],
      overTarget,
    };
  }
}
