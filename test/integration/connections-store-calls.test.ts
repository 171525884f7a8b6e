import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it, type MockInstance, vi } from 'vitest';
import { authStore } from '../../shared/auth/store';
import { outcomeLostAfterMs } from '../../shared/connections/history';
import { config } from '../../shared/platform/config';
import { documentClient } from '../../shared/platform/db/client';
import { db } from '../../shared/platform/db/store';
import { placeSqlite, postgresConnection } from '../support/connections';
import { mcpPost } from '../support/mcp';
import { startTestServer, type TestServer } from '../support/server';
import { describeCommand } from '../support/store-commands';

/** Start the calls of a test early in a minute, so that they share one rate-limit window. */
async function earlyInWindow() {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 15_000) await new Promise((r) => setTimeout(r, left + 50));
}

/** A store command the test holds until it is released (see `hold`). */
interface Gate {
  reached: Promise<void>;
  release(): void;
}

describe('store calls on the read path (one round trip before the statement, none after the answer)', () => {
  let s: TestServer;
  let send: MockInstance;
  /** Commands held when they are sent (`<command> <item>` of describeCommand), until released. */
  const gates = new Map<string, Gate & { arrive(): void; open: Promise<void> }>();
  /** Holds the next `command` of this organization; the command goes on once released. */
  function hold(command: string): Gate {
    let arrive = () => {};
    let release = () => {};
    const reached = new Promise<void>((r) => {
      arrive = r;
    });
    const open = new Promise<void>((r) => {
      release = r;
    });
    const gate = { reached, release, arrive, open };
    gates.set(command, gate);
    return gate;
  }
  const dir = mkdtempSync(join(tmpdir(), 'loupe-store-calls-'));
  const file = join(dir, 'items.db');

  /** Runs `fn` and returns the store commands made for this organization meanwhile. */
  async function commandsOf<T>(fn: () => Promise<T>): Promise<{ value: T; commands: string[] }> {
    const before = send.mock.calls.length;
    const value = await fn();
    const commands = send.mock.calls
      .slice(before)
      .map(([operation, input]) => describeCommand(s.app.orgId, operation, input))
      .filter((c): c is string => !!c);
    return { value, commands };
  }
  const create = async (name: string) => {
    const r = await s.call('POST', '/connections', {
      body: { name, type: 'SQLITE', database: placeSqlite(s, file) },
    });
    expect(r.status).toBe(201);
    return r.body.data.id as string;
  };
  const query = (id: string, body: unknown = { sql: 'SELECT id FROM items' }) =>
    s.call('POST', `/connections/${id}/query`, { body });
  const history = async (id: string, page = 1, pageSize = 100) => {
    const r = await s.call('GET', `/connections/${id}/queries?page=${page}&pageSize=${pageSize}`);
    expect(r.status).toBe(200);
    return {
      total: r.body.meta.pagination.total as number,
      sequences: (r.body.data as Array<{ sequence: number }>).map((e) => e.sequence),
      entries: r.body.data as Array<{ sequence: number; status: string; source: string }>,
    };
  };

  beforeAll(async () => {
    const d = new DatabaseSync(file);
    d.exec('CREATE TABLE items (id INTEGER PRIMARY KEY); INSERT INTO items VALUES (1), (2);');
    d.close();
    // The entry written alongside the statement, as in AWS (LOUPE_HISTORY_OPEN_AFTER_MS 0). The local
    // default (the entry written once when the statement ends first) is test/integration/history-single-write.test.ts.
    s = await startTestServer({ env: { LOUPE_HISTORY_OPEN_AFTER_MS: '0' } });
    const client = documentClient();
    const original = client.send.bind(client);
    send = vi.spyOn(client, 'send').mockImplementation(async (operation, input) => {
      const command = describeCommand(s.app.orgId, operation, input);
      const gate = command ? gates.get(command) : undefined;
      if (gate) {
        gates.delete(command!);
        gate.arrive();
        await gate.open;
      }
      return original(operation, input);
    });
  });
  afterAll(async () => {
    send?.mockRestore();
    await s?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** What a read may add to its own calls now and then: a key read (its copy is older than the bound), a rate-limit lease. */
  const occasional = (c: string) => c === 'Get KEYHASH' || c === 'Update RATE';
  /** Key reads over `ms`: one, then at most one per LOUPE_KEY_CACHE_MS (the copy lives that long). */
  const keyReadsAtMost = (ms: number) => 1 + Math.floor(ms / config().LOUPE_KEY_CACHE_MS);
  /** Every read: one UpdateItem of the connection item (read + history number), the entry, its outcome. */
  const READ = ['Update CONN', 'Put QH', 'Update QH'];

  it('a REST read: the connection and its number in one UpdateItem, the entry, the outcome; the key from the instance', async () => {
    const id = await create('steady');
    await earlyInWindow();
    // Warm-up: the first request reads the key (none of this instance's copies here), leases rate-limit
    // admissions and writes lastUsedAt.
    authStore.forgetCachedKeys();
    const warm = await commandsOf(() => query(id));
    expect(warm.value.status).toBe(200);
    expect(warm.commands).toContain('Get KEYHASH');
    const started = Date.now();
    const perRequest: string[][] = [];
    for (let i = 0; i < 12; i++) {
      const { value, commands } = await commandsOf(() => query(id));
      expect(value.status).toBe(200);
      perRequest.push(commands);
    }
    for (const commands of perRequest) expect(commands.filter((c) => !occasional(c))).toEqual(READ);
    // The key is read again only once this instance's copy is older than the bound (10 s by default).
    const keyReads = perRequest.flat().filter((c) => c === 'Get KEYHASH').length;
    expect(keyReads).toBeLessThanOrEqual(keyReadsAtMost(Date.now() - started) - 1);
    // Leases of 1, 2, 4, 8... admissions (up to a tenth of the limit), each started before the last is spent.
    expect(perRequest.flat().filter((c) => c === 'Update RATE').length).toBeLessThanOrEqual(4);
    const h = await history(id);
    expect(h.total).toBe(13);
    expect(h.sequences).toEqual(Array.from({ length: 13 }, (_, i) => 13 - i));
    expect(h.entries.every((e) => e.status === 'SUCCESS')).toBe(true);
  });

  it('an MCP run_query read makes the same store calls as the REST read', async () => {
    const id = await create('mcp');
    const call = (n: number) =>
      mcpPost(s, {
        jsonrpc: '2.0',
        id: n,
        method: 'tools/call',
        params: { name: 'run_query', arguments: { connectionId: id, sql: 'SELECT id FROM items' } },
      });
    await earlyInWindow();
    expect((await call(0)).json.result.isError).toBeFalsy();
    const started = Date.now();
    const perRequest: string[][] = [];
    for (let i = 1; i <= 8; i++) {
      const { value, commands } = await commandsOf(() => call(i));
      expect(value.status).toBe(200);
      expect(value.json.result.structuredContent.rowCount).toBe(2);
      perRequest.push(commands);
    }
    for (const commands of perRequest) expect(commands.filter((c) => !occasional(c))).toEqual(READ);
    expect(perRequest.flat().filter((c) => c === 'Get KEYHASH').length).toBeLessThanOrEqual(
      keyReadsAtMost(Date.now() - started) - 1,
    );
    const h = await history(id);
    expect(h.total).toBe(9);
    expect(h.entries.map((e) => e.source)).toEqual(Array(9).fill('mcp'));
  });

  it('a page of history is one Query, and the total comes with the connection read', async () => {
    const id = await create('paged');
    await Promise.all(Array.from({ length: 20 }, () => query(id)));
    await earlyInWindow();
    await history(id); // warm-up
    const { value, commands } = await commandsOf(() =>
      s.call('GET', `/connections/${id}/queries?page=2&pageSize=7`),
    );
    expect(value.body.meta.pagination).toMatchObject({ total: 20, page: 2, pageSize: 7, totalPages: 3 });
    expect(value.body.data.map((e: { sequence: number }) => e.sequence)).toEqual([13, 12, 11, 10, 9, 8, 7]);
    expect(commands.filter((c) => !occasional(c))).toEqual(['Get CONN', 'Query CONN partition']);
  });

  it('the statement waits for one store call only; the answer waits for the entry, never for the outcome', async () => {
    const info = inject('postgres');
    const created = await s.call('POST', '/connections', {
      body: { ...postgresConnection(info), name: 'timeline' },
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.id as string;
    expect((await query(id, { sql: 'SELECT 1' })).status).toBe(200); // the pool, the key, a lease
    const marker = `SELECT 42 AS timeline_${Date.now()}`;
    // Which statements reach PostgreSQL, and when their replies have come back.
    const Client = pg.Client.prototype as unknown as { query: (...a: unknown[]) => unknown };
    const originalQuery = Client.query;
    const sent: Array<{ text: string; done: boolean }> = [];
    const pgQuery = vi.spyOn(Client, 'query').mockImplementation(function (this: unknown, ...args) {
      const a = args[0] as string | { text?: string };
      const entry = { text: typeof a === 'string' ? a : (a?.text ?? ''), done: false };
      sent.push(entry);
      const r = originalQuery.apply(this, args);
      if (r && typeof (r as Promise<unknown>).then === 'function')
        (r as Promise<unknown>).then(
          () => {
            entry.done = true;
          },
          () => {
            entry.done = true;
          },
        );
      else entry.done = true;
      return r;
    });
    try {
      const ran = () => sent.findIndex((q) => q.text.includes(marker));
      const connection = hold('Update CONN');
      const entry = hold('Put QH');
      let answered = false;
      const mark = send.mock.calls.length;
      const answer = query(id, { sql: marker }).then((a) => {
        answered = true;
        return a;
      });
      // 1. Before the statement: the UpdateItem that reads the connection and takes the number.
      await connection.reached;
      expect(ran()).toBe(-1);
      connection.release();
      // 2. The statement runs while the entry's PutItem is still held: it does not wait for it.
      await entry.reached;
      await vi.waitFor(() => expect(ran()).toBeGreaterThanOrEqual(0), { timeout: 20_000, interval: 5 });
      // Every reply PostgreSQL owes for this read has come back…
      await vi.waitFor(() => expect(sent.slice(ran()).every((q) => q.done)).toBe(true), {
        timeout: 20_000,
        interval: 5,
      });
      for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
      // …and neither the answer nor the outcome has left: both wait until the entry is stored.
      expect(answered).toBe(false);
      expect(
        send.mock.calls
          .slice(mark)
          .some(([op, input]) => describeCommand(s.app.orgId, op, input) === 'Update QH'),
      ).toBe(false);
      // 3. The entry stored, the answer leaves while the outcome's UpdateItem is still held.
      const outcome = hold('Update QH');
      entry.release();
      const a = await answer;
      expect(a.status, a.text).toBe(200);
      expect(a.body.data.rows).toEqual([{ [`timeline_${marker.split('_')[1]}`]: 42 }]);
      await outcome.reached;
      // At the answer, the execution is recorded (its outcome on the way): a crash here leaves this entry.
      const [stored] = await db.query({
        pk: `ORG#${s.app.orgId}#CONN#${id}`,
        prefix: 'QH#',
        newestFirst: true,
        limit: 1,
      });
      expect(stored).toMatchObject({ sequence: 2, sql: marker, source: 'query' });
      expect(stored.status).toBeUndefined();
      outcome.release();
      const h = await history(id);
      expect(h.total).toBe(2);
      expect(h.entries.map((e) => [e.sequence, e.status])).toEqual([
        [2, 'SUCCESS'],
        [1, 'SUCCESS'],
      ]);
    } finally {
      pgQuery.mockRestore();
      gates.clear();
    }
  });

  it('an entry without its outcome is left out while it may run, then shown as OUTCOME_NOT_RECORDED', async () => {
    const id = await create('crash');
    expect((await query(id)).status).toBe(200);
    const pk = `ORG#${s.app.orgId}#CONN#${id}`;
    // What a process stopped between the answer and the outcome leaves: the number taken, the entry
    // without its outcome. One from long ago, one just now (its execution could still be running).
    for (const [seq, createdAt] of [
      [2, new Date(Date.now() - outcomeLostAfterMs() - 1000).toISOString()],
      [3, new Date().toISOString()],
    ] as const) {
      await db.update({
        pk: `ORG#${s.app.orgId}`,
        sk: `CONN#${id}`,
        update: 'ADD querySeq :one',
        values: { ':one': 1 },
      });
      await db.put({
        pk,
        sk: `QH#${String(seq).padStart(12, '0')}`,
        kind: 'query',
        id: `lost-${seq}`,
        sequence: seq,
        connectionId: id,
        source: 'mcp',
        question: null,
        sql: 'SELECT id FROM items',
        userId: s.app.adminUserId,
        createdAt,
      });
    }
    const h = await history(id);
    expect(h.total).toBe(3);
    expect(h.entries).toMatchObject([
      {
        sequence: 2,
        status: 'FAILED',
        errorCode: 'OUTCOME_NOT_RECORDED',
        sql: 'SELECT id FROM items',
        source: 'mcp',
        rowCount: null,
        executionTime: null,
        truncated: false,
      },
      { sequence: 1, status: 'SUCCESS' },
    ]);
  });

  it('20 queries at once take numbers 1..20, each with its entry', async () => {
    const id = await create('concurrent');
    const answers = await Promise.all(Array.from({ length: 20 }, () => query(id)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    const h = await history(id);
    expect(h.total).toBe(20);
    expect([...h.sequences].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    const pages = await Promise.all([1, 2, 3].map((p) => history(id, p, 8)));
    expect(pages.map((p) => p.sequences)).toEqual([
      [20, 19, 18, 17, 16, 15, 14, 13],
      [12, 11, 10, 9, 8, 7, 6, 5],
      [4, 3, 2, 1],
    ]);
  });

  it('a 400 (bad body) or a 422 (inactive connection) takes no number; a refused statement is recorded', async () => {
    const id = await create('refusals');
    expect((await query(id)).status).toBe(200);
    for (const body of [{ sql: '' }, { sql: 'SELECT 1', maxRows: 0 }, { sql: '   ' }, { nope: true }]) {
      const { value, commands } = await commandsOf(() => query(id, body));
      expect(value.status).toBe(400);
      expect(value.body.error.code).toBe('VALIDATION_ERROR');
      expect(commands.filter((c) => c.endsWith('CONN') || c.endsWith('QH'))).toEqual([]);
    }
    expect((await s.call('PATCH', `/connections/${id}`, { body: { isActive: false } })).status).toBe(200);
    const { value: inactive, commands } = await commandsOf(() => query(id));
    expect(inactive.status).toBe(422);
    expect(inactive.body.error.code).toBe('CONNECTION_INACTIVE');
    // The conditional update fails (nothing taken), then the item is read to tell why.
    expect(commands.filter((c) => c.endsWith('CONN') || c.endsWith('QH'))).toEqual([
      'Update CONN',
      'Get CONN',
    ]);
    expect((await s.call('PATCH', `/connections/${id}`, { body: { isActive: true } })).status).toBe(200);
    // A write statement reaches the guard: refused (400), and recorded as REJECTED.
    const refused = await query(id, { sql: 'DELETE FROM items' });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('READ_ONLY_VIOLATION');
    expect((await query(id)).status).toBe(200);
    const h = await history(id);
    expect(h.total).toBe(3);
    expect(h.entries.map((e) => [e.sequence, e.status])).toEqual([
      [3, 'SUCCESS'],
      [2, 'REJECTED'],
      [1, 'SUCCESS'],
    ]);
    expect((await query('00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });

  it('writes of the connection item (update, test, saved-query runs) keep one counter', async () => {
    const id = await create('shared counter');
    expect((await query(id)).status).toBe(200);
    expect((await s.call('PATCH', `/connections/${id}`, { body: { name: 'renamed' } })).status).toBe(200);
    expect((await s.call('POST', `/connections/${id}/test`)).status).toBe(200);
    const saved = await s.call('POST', '/saved-queries', {
      body: { name: 'all items', query: 'SELECT id FROM items', connectionId: id },
    });
    expect(saved.status).toBe(201);
    const run = await s.call('POST', `/saved-queries/${saved.body.data.id}/run`, { body: {} });
    expect(run.status).toBe(200);
    expect((await query(id)).status).toBe(200);
    const h = await history(id);
    expect(h.total).toBe(3);
    expect(h.entries.map((e) => [e.sequence, e.source])).toEqual([
      [3, 'query'],
      [2, 'saved_query'],
      [1, 'query'],
    ]);
  });

  it('a connection from before querySeq continues from its QHSEQ counter, even under concurrent first queries', async () => {
    const id = await create('legacy');
    const orgId = s.app.orgId;
    // The item as the previous version left it: no querySeq, the count in ORG#o#CONN#c / QHSEQ.
    await db.update({
      pk: `ORG#${orgId}`,
      sk: `CONN#${id}`,
      update: 'REMOVE querySeq',
    });
    await db.put({ pk: `ORG#${orgId}#CONN#${id}`, sk: 'QHSEQ', seq: 5 });
    expect((await history(id)).total).toBe(5);
    expect((await query(id)).status).toBe(200);
    let h = await history(id);
    expect(h.total).toBe(6);
    expect(h.sequences).toEqual([6]);

    const other = await create('legacy, concurrent');
    await db.update({ pk: `ORG#${orgId}`, sk: `CONN#${other}`, update: 'REMOVE querySeq' });
    await db.put({ pk: `ORG#${orgId}#CONN#${other}`, sk: 'QHSEQ', seq: 5 });
    const answers = await Promise.all(Array.from({ length: 5 }, () => query(other)));
    expect(answers.map((a) => a.status)).toEqual(Array(5).fill(200));
    h = await history(other);
    expect(h.total).toBe(10);
    expect(h.sequences).toEqual([10, 9, 8, 7, 6]);
  });
});
