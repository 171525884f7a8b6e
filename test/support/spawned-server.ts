/**
 * The real local server (`npm start`'s entry point) as a child process of the test, for tests that watch
 * the server's processes from outside: CPU and resident memory of its process tree (/proc, Linux only).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOCAL_NODE_FLAGS } from '../../infra/local/node-flags';
import { generateKey } from '../../shared/auth/key-material';
import { freePort } from './databases';

export interface SpawnedServer {
  process: ChildProcess;
  pid: number;
  key: string;
  dataDir: string;
  /** stdout and stderr so far. */
  output(): string;
  exited: Promise<{ code: number | null; signal: string | null }>;
  call(method: string, path: string, body?: unknown): Promise<Response>;
  /** Kills the server (SIGKILL) and removes its data directory. */
  kill(): void;
}

/** Starts the server with a fresh data directory; resolves once `ready` (polled over HTTP) says so. */
export async function spawnLocalServer(
  env: Record<string, string>,
  ready: (s: SpawnedServer) => Promise<boolean>,
): Promise<SpawnedServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'loupe-spawned-'));
  const port = await freePort();
  const key = generateKey();
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    LOUPE_DATA_DIR: dataDir,
    LOUPE_ADMIN_KEY: key,
    LOUPE_LOG_LEVEL: 'SILENT',
    ...env,
  };
  delete childEnv.VITEST;
  delete childEnv.NODE_OPTIONS;
  const child = spawn(process.execPath, [...LOCAL_NODE_FLAGS, '--import', 'tsx', 'infra/local/server.ts'], {
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d) => {
    output += d;
  });
  child.stderr?.on('data', (d) => {
    output += d;
  });
  const base = `http://127.0.0.1:${port}/v1`;
  const server: SpawnedServer = {
    process: child,
    pid: child.pid as number,
    key,
    dataDir,
    output: () => output,
    exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))),
    call: (method, path, body) =>
      fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    kill() {
      child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  for (let i = 0; i < 300; i++) {
    try {
      if (await ready(server)) return server;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  server.kill();
  throw new Error(`The server did not become ready:\n${output}`);
}

/** pid → parent pid of every process, from /proc. */
function parents(): Map<number, number> {
  const out = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      out.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // the process ended meanwhile
    }
  }
  return out;
}

/** `root` and all its descendants. */
export function processTree(root: number): number[] {
  const ppids = parents();
  const tree = [root];
  for (let i = 0; i < tree.length; i++)
    for (const [pid, ppid] of ppids) if (ppid === tree[i] && !tree.includes(pid)) tree.push(pid);
  return tree;
}

/** Resident memory (bytes) of `root` and all its descendants now. */
export function treeRssBytes(root: number): number {
  let total = 0;
  for (const pid of processTree(root)) {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      total += m ? Number(m[1]) * 1024 : 0;
    } catch {
      // gone
    }
  }
  return total;
}
