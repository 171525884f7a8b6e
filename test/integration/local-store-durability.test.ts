/**
 * The local store's storage (infra/local/durable-level.cjs) at its own interface, below dynalite: what a
 * process killed at any instant (also in the middle of a snapshot) has been answered is there when the
 * store opens again; the newest snapshot plus the logs after it give back exactly the state written; what
 * a stopped snapshot leaves is ignored; the lock is taken over from a process that is gone (also when its
 * pid now belongs to another process) and refused while its owner runs, with the owner named; the store's
 * own process fails its start with that reason. (Through dynalite: local-store-storage.test.ts.)
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startStoreProcess } from '../../infra/local/store';

const require = createRequire(import.meta.url);
const durablePath = require.resolve('../../infra/local/durable-level.cjs');
interface Level {
  open(): Promise<void>;
  close(): Promise<void>;
  put(k: string, v: string): Promise<void>;
  del(k: string): Promise<void>;
  batch(ops: { type: 'put' | 'del'; key: string; value?: string }[]): Promise<void>;
  get(k: string): Promise<string | undefined>;
  iterator(): AsyncIterable<[string, string]>;
}
const { DurableLevel, settings, LOCK } = require(durablePath) as {
  DurableLevel: new (location: string, options: object) => Level;
  settings: { compactMinBytes: number };
  LOCK: string;
};

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'loupe-durable-'));
  dirs.push(d);
  return d;
};
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function everything(db: Level): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const [k, v] of db.iterator()) out.set(k, v);
  return out;
}
/** A pid no process has now (a child that has exited). */
const deadPid = () => spawnSync(process.execPath, ['-e', '']).pid as number;

describe('local store storage: durability', () => {
  it('keeps every answered write of a process killed at any instant, also during snapshots', async () => {
    const dir = tempDir();
    const store = join(dir, 'store');
    // A writer with a small snapshot threshold: several snapshots while it writes. Each write's key is
    // printed (one write(2), not buffered) only after the storage answered it.
    const script = join(dir, 'writer.cjs');
    writeFileSync(
      script,
      `const fs = require('node:fs');
const { DurableLevel, settings } = require(${JSON.stringify(durablePath)});
settings.compactMinBytes = 32 * 1024;
const db = new DurableLevel(${JSON.stringify(store)}, {});
(async () => {
  await db.open();
  const say = (line) => fs.writeSync(1, line + '\\n');
  for (let i = 0; ; i++) {
    const k = 'k' + String(i).padStart(7, '0');
    const body = 'v'.repeat(50 + (i % 13)) + i;
    if (i % 10 === 9) {
      await db.batch([{ type: 'put', key: k, value: body }, { type: 'del', key: 'k' + String(i - 1).padStart(7, '0') }]);
      say('b ' + k + ' ' + body);
    } else {
      await db.put(k, body);
      say('p ' + k + ' ' + body);
    }
    // As a server between requests: the event loop turns (a snapshot under way writes meanwhile).
    if (i % 20 === 0) await new Promise((r) => setImmediate(r));
  }
})();
`,
    );
    const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    let out = '';
    let killed = false;
    await new Promise<void>((resolve) => {
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        // Past a few snapshots (about 70 bytes a write, a snapshot each 32 KiB or more of log).
        if (!killed && out.length > 600_000) {
          killed = true;
          child.kill('SIGKILL');
        }
      });
      child.once('exit', () => resolve());
    });
    expect(killed).toBe(true);
    const answered = out.split('\n').filter((l) => /^[pb] k\d{7} v+\d+$/.test(l)); // a cut last line is not one
    expect(answered.length).toBeGreaterThan(5000);
    expect(readdirSync(store).some((n) => /^snapshot-\d+\.jsonl$/.test(n))).toBe(true);

    // The state the answered writes make, in their order (one write at a time: at most the next one, not
    // answered, may also be there; it touches the key after the last answered one and that key's predecessor).
    const model = new Map<string, string>();
    const keyOf = (n: number) => `k${String(n).padStart(7, '0')}`;
    for (const line of answered) {
      const [kind, key, value] = line.split(' ') as [string, string, string];
      model.set(key, value);
      if (kind === 'b') model.delete(keyOf(Number(key.slice(1)) - 1));
    }
    const lastKey = answered[answered.length - 1]!.split(' ')[1]!;
    const db = new DurableLevel(store, {}); // takes over the lock the killed writer left
    await db.open();
    try {
      const found = await everything(db);
      found.delete(keyOf(Number(lastKey.slice(1)) + 1)); // the write in flight, if it got in
      if (!found.has(lastKey)) found.set(lastKey, model.get(lastKey)!); // deleted by that write
      expect(found.size).toBe(model.size);
      expect(found).toEqual(model);
    } finally {
      await db.close();
    }
  }, 120_000);

  it('gives back exactly the state written: newest snapshot plus the logs after it; a stopped snapshot is ignored', async () => {
    const dir = join(tempDir(), 'store');
    const was = settings.compactMinBytes;
    settings.compactMinBytes = 16 * 1024;
    const model = new Map<string, string>();
    try {
      const db = new DurableLevel(dir, {});
      await db.open();
      // Deterministic mix of puts, overwrites, deletes and batches over a small key space.
      let seed = 7;
      const rand = (n: number) => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed % n;
      };
      const pending: Promise<void>[] = [];
      for (let i = 0; i < 6000; i++) {
        const key = `key-${rand(3000)}`;
        const r = rand(10);
        if (r < 6) {
          const value = `value ${i} ${'é"\\\n'.repeat(rand(5))}${'x'.repeat(rand(80))}`;
          model.set(key, value);
          pending.push(db.put(key, value));
        } else if (r < 8) {
          model.delete(key);
          pending.push(db.del(key));
        } else {
          const other = `key-${rand(3000)}`;
          const ops = [
            { type: 'put' as const, key, value: `batch ${i}` },
            { type: 'del' as const, key: other },
          ];
          model.set(key, `batch ${i}`);
          model.delete(other);
          pending.push(db.batch(ops));
        }
        if (i % 100 === 99) {
          await Promise.all(pending.splice(0));
          await new Promise((r) => setImmediate(r)); // as a server between requests: a snapshot under way writes
        }
      }
      await Promise.all(pending);
      expect(await everything(db)).toEqual(model);
      await db.close();

      const names = readdirSync(dir);
      const newest = Math.max(...names.map((n) => Number(/^snapshot-(\d+)\.jsonl$/.exec(n)?.[1] ?? 0)));
      expect(newest).toBeGreaterThan(2);
      // What a stop in the middle of snapshots leaves: an unfinished snapshot, and older files whose
      // removal did not happen (with writes the newer snapshot already holds, or overwrote since).
      writeFileSync(join(dir, `snapshot-${newest + 1}.jsonl.tmp`), '["p","key-1","unfinished"]\n["p","ke');
      writeFileSync(join(dir, 'snapshot-1.jsonl'), '["p","key-old","from an old snapshot"]\n');
      writeFileSync(join(dir, 'log-1.jsonl'), '["p","key-2","from an old log"]\n');

      const again = new DurableLevel(dir, {});
      await again.open();
      expect(await everything(again)).toEqual(model);
      await again.close();
      const left = readdirSync(dir);
      expect(
        left.filter((n) => n.endsWith('.tmp') || n === 'snapshot-1.jsonl' || n === 'log-1.jsonl'),
      ).toEqual([]);
      // Every line of what is left parses: the snapshot and logs are whole.
      for (const n of left.filter((x) => x.endsWith('.jsonl')))
        for (const line of readFileSync(join(dir, n), 'utf8').split('\n').filter(Boolean)) JSON.parse(line);
    } finally {
      settings.compactMinBytes = was;
    }
  });

  it('takes over a lock whose process is gone or whose pid is now another process; refuses a live one by name', async () => {
    const dir = join(tempDir(), 'store');
    const first = new DurableLevel(dir, {});
    await first.open();
    await first.put('a', '1');
    await first.close();

    // A process that is gone.
    writeFileSync(join(dir, LOCK), `${deadPid()} 12345\n`);
    let db = new DurableLevel(dir, {});
    await db.open();
    expect(await db.get('a')).toBe('1');
    await db.close();

    // A live pid whose start time is not the lock's: the pid was given to another process since.
    const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    children.push(sleeper);
    writeFileSync(join(dir, LOCK), `${sleeper.pid} 1\n`);
    db = new DurableLevel(dir, {});
    await db.open();
    await db.close();

    // A live owner (its start time as /proc has it, or no start time): refused, the owner named.
    const stat = readFileSync(`/proc/${sleeper.pid}/stat`, 'utf8');
    const started = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    for (const owner of [`${sleeper.pid} ${started}\n`, `${sleeper.pid}\n`]) {
      writeFileSync(join(dir, LOCK), owner);
      db = new DurableLevel(dir, {});
      const e = await db.open().catch((x: Error) => x);
      expect(String((e as Error & { cause?: Error }).cause?.message ?? e)).toMatch(
        new RegExp(`in use by process ${sleeper.pid} .*Stop it first`),
      );
      expect(readFileSync(join(dir, LOCK), 'utf8')).toBe(owner); // left as it was
    }
    sleeper.kill('SIGKILL');
    await new Promise((r) => sleeper.once('exit', r));
    db = new DurableLevel(dir, {});
    await db.open();
    expect(await db.get('a')).toBe('1');
    await db.close();
    expect(readdirSync(dir).filter((n) => n.startsWith(LOCK))).toEqual([]);
  });

  it("the store's own process fails its start with the reason when the store is in use", async () => {
    const dataDir = tempDir();
    const db = new DurableLevel(join(dataDir, 'dynamodb'), {});
    await db.open();
    try {
      await expect(startStoreProcess(dataDir, 'loupe-durable-test')).rejects.toThrow(
        new RegExp(`in use by process ${process.pid}`),
      );
    } finally {
      await db.close();
    }
  });
});
