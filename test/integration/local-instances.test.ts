import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type LocalApp, startLocal } from '../../infra/local/app';
import { startInstances } from '../../infra/local/instances';
import { ensureTable } from '../../infra/local/store';
import { openDirectStore } from '../../infra/local/store-client';
import { createOrganization } from '../../shared/auth/bootstrap';
import { generateKey } from '../../shared/auth/key-material';
import { type ChatEvent, parseSse } from '../../shared/chat/sse';
import { createPostgresDatabase, postgresAdmin, postgresConnection } from '../support/connections';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai';
import { earlyInRateWindow, waitFor } from '../support/wait';

/**
 * The local runtime with two handler instances (worker threads listening on one port with
 * SO_REUSEPORT, the store in the main thread): every request here opens a new connection, so the
 * kernel spreads them over both instances, and the log (each line names its instance) shows which one
 * answered. What must hold across instances as across Lambda instances: authentication and immediate
 * revocation, PostgreSQL queries, chat streaming, one shared organization rate limit, writes visible
 * everywhere, and a clean stop.
 */
const DB = 'instances_pg';
const ORG_LIMIT = 200;

type Answer = { status: number; body: any; text: string; headers: Record<string, unknown> };

describe('local runtime with 2 handler instances', () => {
  const info = inject('postgres');
  let app: LocalApp;
  let fake: FakeOpenAI;
  let dataDir: string;
  const adminKey = generateKey();
  /** Shorter than the default 10 s, so that the bound passes quickly. */
  const KEY_CACHE_MS = 1500;
  const logs: string[] = [];
  let resourcesBefore: string[];

  /** One request on a new connection (no keep-alive), so that successive calls may reach either instance. */
  const call = (method: string, path: string, o: { key?: string; body?: unknown } = {}) =>
    new Promise<Answer>((resolve, reject) => {
      const payload = o.body === undefined ? undefined : JSON.stringify(o.body);
      const req = request(
        {
          host: '127.0.0.1',
          port: app.port,
          method,
          path: `/v1${path}`,
          agent: false,
          headers: {
            authorization: `Bearer ${o.key ?? adminKey}`,
            ...(payload
              ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
              : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let body: any;
            try {
              body = JSON.parse(text);
            } catch {}
            resolve({ status: res.statusCode ?? 0, body, text, headers: res.headers });
          });
        },
      );
      req.on('error', reject);
      req.end(payload);
    });

  /** Which instances logged a line for `path` with `status` since log line `from`. */
  const answeredBy = (from: number, path: string, status: number) =>
    new Set(
      logs
        .slice(from)
        .filter((l) => l.includes(` /v1${path} ${status} `))
        .map((l) => /^\[instance (\d+)\]/.exec(l)?.[1])
        .filter(Boolean),
    );

  /** Repeats `fn` until both instances have answered it (new connections land on either), at most 200 times. */
  async function onBoth(path: string, status: number, fn: () => Promise<Answer>): Promise<Answer[]> {
    const from = logs.length;
    const answers: Answer[] = [];
    for (let i = 0; i < 200 && answeredBy(from, path, status).size < 2; i++) answers.push(await fn());
    // The last log lines cross from the threads.
    await waitFor(
      `log lines of both instances for ${path}`,
      async () => answeredBy(from, path, status).size === 2,
      10_000,
    ).catch(() => {});
    expect(answeredBy(from, path, status)).toEqual(new Set(['1', '2']));
    return answers;
  }

  beforeAll(async () => {
    await createPostgresDatabase(info, DB);
    await postgresAdmin(
      info,
      DB,
      `CREATE TABLE sales (id INTEGER PRIMARY KEY, region TEXT NOT NULL, amount NUMERIC(10,2) NOT NULL);
       INSERT INTO sales VALUES (1, 'north', 10.50), (2, 'south', 20.00), (3, 'north', 5.25);
       ALTER TABLE sales OWNER TO ${info.user};`,
    );
    fake = await startFakeOpenAI();
    resourcesBefore = process.getActiveResourcesInfo();
    dataDir = mkdtempSync(join(tmpdir(), 'loupe-instances-'));
    app = await startLocal({
      port: 0,
      dataDir,
      instances: 2,
      env: {
        LOUPE_ADMIN_KEY: adminKey,
        LOUPE_LOG_LEVEL: 'SILENT',
        LOUPE_DEMO_DATA: 'false',
        OPENAI_API_KEY: fake.apiKey,
        OPENAI_BASE_URL: fake.url,
        LOUPE_MODEL: 'test-model',
        LOUPE_ORG_RATE_LIMIT: String(ORG_LIMIT),
        LOUPE_KEY_CACHE_MS: String(KEY_CACHE_MS),
      },
      log: (l) => logs.push(l),
    });
  });

  let stopped = false;
  afterAll(async () => {
    if (!stopped) await app?.stop();
    await fake?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('runs two instances in worker threads on one port', () => {
    expect(app.instances).toBe(2);
  });

  it('authenticates on both instances; a revoked key stops at once on the instance that revoked it, and on the other within the key cache bound', async () => {
    const created = await call('POST', '/keys', { body: { name: 'temp', scopes: ['connections'] } });
    expect(created.status, created.text).toBe(201);
    const key = created.body.data.key as string;
    // Both instances now hold a copy of the key's record (LOUPE_KEY_CACHE_MS, set short here).
    await onBoth('/connections', 200, () => call('GET', '/connections', { key }));
    const beforeRevoke = logs.length;
    const revoked = await call('DELETE', `/keys/${created.body.data.id}`);
    expect(revoked.status, revoked.text).toBe(200);
    const revokedAt = Date.now();
    await new Promise((r) => setTimeout(r, 50)); // the log line crosses from the thread
    const [revoker] = answeredBy(beforeRevoke, `/keys/${created.body.data.id}`, 200);
    expect(revoker).toMatch(/^[12]$/);
    // The instance that revoked it refuses it at once, every time.
    const fromRevoke = logs.length;
    for (let i = 0; i < 200 && !answeredBy(fromRevoke, '/connections', 401).has(revoker); i++)
      await call('GET', '/connections', { key });
    await new Promise((r) => setTimeout(r, 50));
    expect(answeredBy(fromRevoke, '/connections', 401)).toContain(revoker);
    expect(answeredBy(fromRevoke, '/connections', 200)).not.toContain(revoker);
    // Once the other instance's copy is older than the bound, both refuse it.
    await new Promise((r) => setTimeout(r, Math.max(0, revokedAt + KEY_CACHE_MS + 50 - Date.now())));
    const after = await onBoth('/connections', 401, () => call('GET', '/connections', { key }));
    expect(after.every((a) => a.status === 401)).toBe(true);
    expect(
      (
        await call('GET', '/connections', {
          key: `${adminKey.slice(0, -1)}${adminKey.endsWith('a') ? 'b' : 'a'}`,
        })
      ).status,
    ).toBe(401);
  });

  let connectionId: string;
  it('sees writes of one instance on the other, and runs PostgreSQL queries on both', async () => {
    const created = await call('POST', '/connections', {
      body: { ...postgresConnection(info, { database: DB }), name: 'Sales' },
    });
    expect(created.status, created.text).toBe(201);
    connectionId = created.body.data.id;
    const reads = await onBoth(`/connections/${connectionId}`, 200, () =>
      call('GET', `/connections/${connectionId}`),
    );
    expect(reads.every((r) => r.status === 200 && r.body.data.name === 'Sales')).toBe(true);
    const sql = 'SELECT region, SUM(amount) AS total FROM sales GROUP BY region ORDER BY region';
    const queries = await onBoth(`/connections/${connectionId}/query`, 200, () =>
      call('POST', `/connections/${connectionId}/query`, { body: { sql } }),
    );
    for (const q of queries) {
      expect(q.status, q.text).toBe(200);
      expect(q.body.data.rows).toEqual([
        { region: 'north', total: '15.75' },
        { region: 'south', total: '20.00' },
      ]);
    }
    // The history written by both instances is one history.
    const history = await call('GET', `/connections/${connectionId}/queries?pageSize=100`);
    expect(history.status, history.text).toBe(200);
    expect(history.body.data.length).toBe(queries.length);
  });

  it('streams a chat answer from either instance', async () => {
    const from = logs.length;
    for (let i = 0; i < 200 && answeredBy(from, '/chat', 200).size < 2; i++) {
      fake.script({ content: `Answer ${i}: north sold most.` });
      const r = await call('POST', '/chat', {
        body: { message: 'Who sold most?', connectionId, stream: true },
      });
      expect(r.status, r.text).toBe(200);
      expect(r.headers['content-type']).toMatch(/^text\/event-stream/);
      const { events } = parseSse(r.text);
      expect(events[0].type).toBe('start');
      const done = events.at(-1) as Extract<ChatEvent, { type: 'done' }>;
      expect(done).toMatchObject({ type: 'done', content: `Answer ${i}: north sold most.` });
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(answeredBy(from, '/chat', 200)).toEqual(new Set(['1', '2']));
  });

  it('shares one organization rate limit: never more than the limit answered across both instances', async () => {
    const org = await createOrganization({ name: 'limited', adminEmail: 'admin@limited.example' });
    // Fixed one-minute windows: start early in one so that every call below shares it.
    await earlyInRateWindow(35_000);
    const from = logs.length;
    const statuses: number[] = [];
    const batch = async () => {
      const answers = await Promise.all(
        Array.from({ length: 25 }, () => call('GET', '/connections', { key: org.key })),
      );
      statuses.push(...answers.map((a) => a.status));
    };
    for (let i = 0; i < 10; i++) await batch();
    // 250 requests over two instances: limits counted per instance (about 125 each) would let every one
    // through. Shared, never more than the limit succeed (fewer only if an instance holds unspent quota).
    const ok = statuses.filter((s) => s === 200).length;
    expect(ok).toBeLessThanOrEqual(ORG_LIMIT);
    expect(ok).toBeGreaterThanOrEqual(ORG_LIMIT / 2);
    expect(statuses.filter((s) => s === 429).length).toBe(250 - ok);
    await waitFor(
      'log lines of both instances',
      async () => answeredBy(from, '/connections', 200).size === 2,
      10_000,
    ).catch(() => {});
    expect(answeredBy(from, '/connections', 200)).toEqual(new Set(['1', '2']));
    expect(answeredBy(from, '/connections', 429).size).toBeGreaterThan(0);
  });

  it('stops cleanly: both threads end on their own, no handle is left behind', async () => {
    await app.stop();
    stopped = true;
    expect(logs.filter((l) => /terminated|exited unexpectedly|local runtime error/.test(l))).toEqual([]);
    await new Promise((r) => setTimeout(r, 100));
    const left = process.getActiveResourcesInfo().filter((r) => r !== 'TTYWrap');
    const before = resourcesBefore.filter((r) => r !== 'TTYWrap');
    const count = (xs: string[]) =>
      xs.reduce<Record<string, number>>((m, x) => {
        m[x] = (m[x] ?? 0) + 1;
        return m;
      }, {});
    const extra = Object.entries(count(left)).filter(
      ([k, n]) => n > (count(before)[k] ?? 0) && k !== 'Timeout',
    );
    expect(extra).toEqual([]);
  });
});

describe('a handler instance that dies', () => {
  it('is replaced by a new one on the same port, as Lambda replaces a failed instance', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loupe-instance-restart-'));
    const store = await openDirectStore(dir);
    await ensureTable(store.endpoint, 'loupe-restart-test');
    Object.assign(process.env, {
      LOUPE_RUNTIME: 'local',
      LOUPE_DATA_DIR: dir,
      LOUPE_TABLE_NAME: 'loupe-restart-test',
      LOUPE_LOG_LEVEL: 'SILENT',
    });
    const logs: string[] = [];
    const instances = await startInstances({
      count: 1,
      port: 0,
      store: store.call,
      log: (l) => logs.push(l),
    });
    try {
      const discovery = () =>
        fetch(`http://127.0.0.1:${instances.port}/v1/`).then(
          (r) => r.status,
          () => 0,
        );
      const served = await discovery(); // an answer of the handlers (401 without a key)
      expect(served).toBeGreaterThanOrEqual(200);
      const first = instances.threads[0];
      await first.terminate();
      let status = 0;
      for (let i = 0; i < 100 && status !== served; i++) {
        await new Promise((r) => setTimeout(r, 100));
        status = await discovery();
      }
      expect(status).toBe(served);
      expect(logs.filter((l) => /exited unexpectedly \(code \d+\); starting a new one/.test(l))).toHaveLength(
        1,
      );
      expect(instances.threads).toHaveLength(1);
      expect(instances.threads[0]).not.toBe(first);
    } finally {
      expect(await instances.stop()).toBe(0);
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
