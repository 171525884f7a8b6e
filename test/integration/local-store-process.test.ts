import { execFileSync, fork } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startLocal } from '../../infra/local/app';
import { runningStoreEndpoint, startStoreProcess } from '../../infra/local/store';
import { generateKey } from '../../shared/auth/key-material';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'loupe-store-proc-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const until = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  return check();
};

describe('local store process', () => {
  it('serves the table from its own process, is found through the endpoint file, and stops on close', async () => {
    const dir = tempDir();
    const crashes: string[] = [];
    const store = await startStoreProcess(dir, 'loupe-test', { onCrash: (r) => crashes.push(r) });
    expect(store.pid).toBeGreaterThan(0);
    expect(store.pid).not.toBe(process.pid);
    expect(readFileSync(join(dir, 'dynamodb.endpoint'), 'utf8')).toBe(store.endpoint);
    expect(await runningStoreEndpoint(dir)).toBe(store.endpoint);
    await store.close();
    expect(alive(store.pid!)).toBe(false);
    expect(await runningStoreEndpoint(dir)).toBeUndefined();
    expect(crashes).toEqual([]);
    // The same data directory opens again (LevelDB's lock was released).
    const again = await startStoreProcess(dir, 'loupe-test');
    await again.close();
  });

  it('reports a crash of the store process', async () => {
    const crashes: string[] = [];
    const store = await startStoreProcess(tempDir(), 'loupe-test', { onCrash: (r) => crashes.push(r) });
    process.kill(store.pid!, 'SIGKILL');
    expect(await until(() => crashes.length > 0)).toBe(true);
    expect(crashes[0]).toMatch(/stopped unexpectedly: signal SIGKILL/);
    await store.close();
  });

  it('exits when its parent goes away, and ignores the terminal SIGINT its parent handles', async () => {
    const child = fork(
      new URL('../../infra/local/store-process.mjs', import.meta.url).pathname,
      [tempDir()],
      {
        execArgv: [],
        stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
      },
    );
    const port = await new Promise<number>((r) =>
      child.once('message', (m) => r((m as { port: number }).port)),
    );
    expect(port).toBeGreaterThan(0);
    child.kill('SIGINT');
    await new Promise((r) => setTimeout(r, 200));
    expect(alive(child.pid!)).toBe(true);
    child.disconnect(); // what the parent's death does
    expect(await until(() => !alive(child.pid!))).toBe(true);
  });
  it('runs the local runtime on a store process when asked, and stops that process with the runtime', async () => {
    const children = () =>
      execFileSync('ps', ['-o', 'args=', '--ppid', String(process.pid)], { encoding: 'utf8' })
        .split('\n')
        .filter((l) => l.includes('store-process.mjs'));
    const key = generateKey();
    const app = await startLocal({
      port: 0,
      dataDir: tempDir(),
      storeProcess: true,
      env: { LOUPE_ADMIN_KEY: key, LOUPE_LOG_LEVEL: 'SILENT', LOUPE_DEMO_DATA: 'false' },
      log: () => {},
    });
    try {
      expect(children()).toHaveLength(1);
      const r = await fetch(`${app.url}/keys`, { headers: { authorization: `Bearer ${key}` } });
      expect(r.status).toBe(200);
    } finally {
      await app.stop();
    }
    expect(children()).toHaveLength(0);
  });
});
