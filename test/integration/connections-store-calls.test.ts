import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it, type MockInstance, vi } from 'vitest';
import { documentClient } from '../../shared/platform/db/client';
import { db } from '../../shared/platform/db/store';
import { placeSqlite } from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';

/** Start the calls of a test early in a minute, so that they share one rate-limit window. */
async function earlyInWindow() {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 15_000) await new Promise((r) => setTimeout(r, left + 50));
}

/**
 * Every store command the requests of this organization make, as `<command> <item>`: the key lookup
 * (KEYHASH), the connection item (CONN), a history entry (QH#), the rate-limit window (RATE), ... The local
 * runtime's queue and scheduler poll the same store meanwhile; their partitions are left out.
 */
function describeCommand(orgId: string, operation: string, sent: unknown) {
  const input = sent as {
    Key?: { pk: string; sk: string };
    Item?: { pk: string; sk: string };
    ExpressionAttributeValues?: Record<string, unknown>;
  };
  const pk = input.Key?.pk ?? input.Item?.pk ?? String(input.ExpressionAttributeValues?.[':pk'] ?? '');
  const sk = input.Key?.sk ?? input.Item?.sk ?? '';
  if (!pk.startsWith('KEYHASH#') && !pk.startsWith(`ORG#${orgId}`)) return undefined;
  const item = pk.startsWith('KEYHASH#')
    ? 'KEYHASH'
    : sk
      ? sk.split('#')[0]
      : `${pk.split('#')[2] ?? 'ORG'} partition`;
  return `${operation.replace(/Item$/, '')} ${item}`;
}

describe('store calls on the query path (at most 3 per query in steady state)', () => {
  let s: TestServer;
  let send: MockInstance;
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
    s = await startTestServer();
    send = vi.spyOn(documentClient(), 'send');
  });
  afterAll(async () => {
    send?.mockRestore();
    await s?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a query reads the key, reads the connection while taking its number, and writes the entry', async () => {
    const id = await create('steady');
    await earlyInWindow();
    // Warm-up: the first request of a minute may also write lastUsedAt and lease rate-limit admissions.
    expect((await query(id)).status).toBe(200);
    const perRequest: string[][] = [];
    for (let i = 0; i < 12; i++) {
      const { value, commands } = await commandsOf(() => query(id));
      expect(value.status).toBe(200);
      perRequest.push(commands);
    }
    const core = ['Get KEYHASH', 'Update CONN', 'Put QH'];
    // Every request: the key lookup, one UpdateItem of the connection item (read + history number), the
    // entry. Apart from those, only a rate-limit lease, now and then: the instance leases 1, 2, 4, 8...
    // admissions at a time (up to a tenth of the limit), so lease calls thin out.
    for (const commands of perRequest) expect(commands.filter((c) => c !== 'Update RATE')).toEqual(core);
    const leases = perRequest.flat().filter((c) => c === 'Update RATE').length;
    expect(leases).toBeLessThanOrEqual(4);
    // The steady state: the last requests made exactly the three calls.
    for (const commands of perRequest.slice(-4)) expect(commands).toEqual(core);
    const h = await history(id);
    expect(h.total).toBe(13);
    expect(h.sequences).toEqual(Array.from({ length: 13 }, (_, i) => 13 - i));
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
    expect(commands.filter((c) => c !== 'Update RATE')).toEqual([
      'Get KEYHASH',
      'Get CONN',
      'Query CONN partition',
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
