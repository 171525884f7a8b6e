/**
 * A SQLite query that never ends, against the real local server (`npm start`'s entry point, spawned as
 * a child process): 504 at the statement timeout, then its SQLite process gone and the server's process
 * tree back near idle, then a clean stop on SIGTERM while another runaway runs. What is asserted is what
 * happened (processes, CPU seconds used, exit status), never how long it took: the machine may be loaded.
 */
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { processTree, type SpawnedServer, spawnLocalServer } from '../support/spawned-server';
import { waitFor } from '../support/wait';

const TICKS = 100; // USER_HZ on Linux

/** CPU seconds used so far by a process and all its descendants (from /proc). */
function treeCpuSeconds(root: number): number {
  let total = 0;
  for (const pid of processTree(root)) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += Number(fields[11]) + Number(fields[12]);
    } catch {
      // the process ended meanwhile
    }
  }
  return total / TICKS;
}

/** Descendants of `root` running SQLite statements (our SQLite child processes). */
function sqliteProcesses(root: number): number[] {
  return processTree(root)
    .slice(1)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('node:sqlite');
      } catch {
        return false; // gone
      }
    });
}

const cpuOver = async (pid: number, ms: number) => {
  const a = treeCpuSeconds(pid);
  await new Promise((r) => setTimeout(r, ms));
  return (treeCpuSeconds(pid) - a) / (ms / 1000);
};

describe.skipIf(process.platform !== 'linux')('SQLite runaway query on the real local server', () => {
  let server: SpawnedServer | undefined;
  afterAll(() => server?.kill());

  it('504, then its process gone and CPU near idle, then SIGTERM stops the server cleanly', async () => {
    // Ready when the demo connection is registered (the demo database is created on the first start).
    let demoId: string | undefined;
    server = await spawnLocalServer(
      {
        LOUPE_DEMO_DATA: 'true',
        // The handlers in the main thread: the counts of SQLite processes below assume one driver pool (with
        // handler instances, each instance and the main thread's workers keep their own, as Lambda
        // instances do, and the demo's introspection leaves an idle one in the main thread).
        LOUPE_LOCAL_INSTANCES: '0',
        // A stop lets requests under way finish for up to 25 s (the runaway below would end at its 25 s
        // statement timeout); here the stop cuts it after 2 s, and nothing of it may outlive the server.
        LOUPE_DRAIN_MS: '2000',
      },
      async (s) => {
        const r = await s.call('GET', '/connections');
        if (!r.ok) return false;
        const list = (await r.json()) as { data: { id: string; name: string; isActive: boolean }[] };
        demoId = list.data.find((c) => c.name === 'Demo SaaS (SQLite)' && c.isActive)?.id;
        return !!demoId;
      },
    );
    const { pid, exited } = server;
    const output = server.output;
    const call = server.call;

    const sql = 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r) SELECT count(*) FROM r';
    const answer = call('POST', `/connections/${demoId}/query`, { sql });
    // While it runs, the query's own SQLite process keeps using CPU (so the idle check below can fail).
    // How much depends on what else the machine runs: only that it uses some is asserted.
    const [runaway] = await waitFor('the SQLite process', async () => {
      const found = sqliteProcesses(pid);
      return found.length ? found : undefined;
    });
    const spent = treeCpuSeconds(runaway);
    await waitFor('the runaway to use CPU', async () => treeCpuSeconds(runaway) > spent + 0.05);
    expect(sqliteProcesses(pid)).toHaveLength(1);
    const res = await answer;
    expect(res.status).toBe(504);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('QUERY_TIMEOUT');

    // After the answer the statement's process is gone and the process tree is back near idle (load
    // elsewhere can only lower this process tree's share of the CPU, never raise it).
    await waitFor('the SQLite process to end', async () => sqliteProcesses(pid).length === 0);
    await new Promise((r) => setTimeout(r, 1_000)); // the server finishes the request: history write, logs
    const idle = await cpuOver(pid, 1_000);
    expect(idle).toBeLessThan(0.15);

    // The server still answers, and SQLite works again (a fresh process).
    const again = await call('POST', `/connections/${demoId}/query`, {
      sql: 'SELECT count(*) AS n FROM plans',
    });
    expect(again.status).toBe(200);

    // A new runaway query is running when SIGTERM arrives: the server still stops cleanly and quickly.
    const pendingAnswer = call('POST', `/connections/${demoId}/query`, { sql }).catch(() => undefined);
    await waitFor('the second runaway', async () => sqliteProcesses(pid).length === 1);
    server.process.kill('SIGTERM');
    // The drain (2 s) cuts the runaway; the bound here only keeps a hung stop from hanging the test.
    const result = await Promise.race([
      exited,
      new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 45_000)),
    ]);
    expect(result, output()).toEqual({ code: 0, signal: null });
    await pendingAnswer;
    // No SQLite process outlived the server.
    expect(treeCpuSeconds(pid)).toBe(0);
  }, 90_000);
});
