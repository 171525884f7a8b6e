import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { LOCAL_NODE_FLAGS } from '../../infra/local/node-flags';

const ROOT = join(import.meta.dirname, '..', '..');

export interface ServerProcess {
  child: ChildProcess;
  /** The base URL the process printed (`… serving http://…`). */
  url: string;
  /** Everything it wrote to stdout and stderr so far. */
  output: string[];
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<number | null>;
}

/**
 * Starts a server as its own process, `node --import tsx <entry>` (so its pid is the server's, not a
 * wrapper's), and waits until it prints the URL it serves. `entry` is relative to the project root, e.g.
 * `infra/local/server.ts` with PORT=0 and a fresh LOUPE_DATA_DIR in `env`.
 */
export async function spawnServer(entry: string, env: Record<string, string>): Promise<ServerProcess> {
  const child = spawn(process.execPath, [...LOCAL_NODE_FLAGS, '--import', 'tsx', entry], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.stderr?.on('data', (c: Buffer) => output.push(c.toString('utf8')));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (c: Buffer) => {
      output.push(c.toString('utf8'));
      const m = /serving (http:\/\/\S+)/.exec(output.join(''));
      if (m) resolve(m[1]);
    });
    void exited.then((code) =>
      reject(new Error(`${entry} exited with ${code}: ${output.join('').slice(-4000)}`)),
    );
  });
  return {
    child,
    url,
    output,
    exited,
    stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
