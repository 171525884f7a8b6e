import {
  afterAll,
  beforeAll,
  describe,
  expect,
  inject,
  it,
  type MockInstance,
  onTestFinished,
  vi,
} from 'vitest';
import { resetConfig } from '../../shared/platform/config';
import { documentClient } from '../../shared/platform/db/client';
import { postgresConnection } from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';
import { describeCommand } from '../support/store-commands';

/**
 * The local runtime's default (LOUPE_HISTORY_OPEN_AFTER_MS unset: 250 ms locally): a read whose statement
 * ends before its entry was sent writes the entry once, outcome included, before the answer; a longer
 * statement has its entry written while it runs and its outcome after, as in AWS
 * (test/integration/connections-store-calls.test.ts covers that shape call by call).
 */
describe('history entry written once when the statement ends first (local runtime default)', () => {
  let s: TestServer;
  let send: MockInstance;
  let id: string;
  /** Held `Put QH` commands: released by the test. */
  let holdPut: { reached: () => void; open: Promise<void> } | undefined;

  async function commandsOf<T>(fn: () => Promise<T>) {
    const before = send.mock.calls.length;
    const value = await fn();
    const calls = send.mock.calls
      .slice(before)
      .map(([operation, input]) => ({ command: describeCommand(s.app.orgId, operation, input), input }))
      .filter((c) => c.command && c.command !== 'Get KEYHASH' && c.command !== 'Update RATE');
    return { value, calls, commands: calls.map((c) => c.command) };
  }
  const query = (sql: string) => s.call('POST', `/connections/${id}/query`, { body: { sql } });
  const history = async () => {
    const r = await s.call('GET', `/connections/${id}/queries?page=1&pageSize=100`);
    expect(r.status).toBe(200);
    return r.body as { data: Array<Record<string, unknown>>; meta: { pagination: { total: number } } };
  };

  beforeAll(async () => {
    s = await startTestServer({ env: { LOUPE_HISTORY_OPEN_AFTER_MS: undefined } });
    const client = documentClient();
    const original = client.send.bind(client);
    send = vi.spyOn(client, 'send').mockImplementation(async (operation, input) => {
      const hold = holdPut;
      if (hold && describeCommand(s.app.orgId, operation, input) === 'Put QH') {
        holdPut = undefined;
        hold.reached();
        await hold.open;
      }
      return original(operation, input);
    });
    const created = await s.call('POST', '/connections', {
      body: { ...postgresConnection(inject('postgres')), name: 'single write' },
    });
    expect(created.status, created.text).toBe(201);
    id = created.body.data.id;
    expect((await query('SELECT 1')).status).toBe(200); // the pool, the key, a lease
  });
  afterAll(async () => {
    send?.mockRestore();
    await s?.stop();
  });

  it('a fast read: the connection UpdateItem, then one PutItem of the whole entry, which the answer waits for', async () => {
    let release = () => {};
    let reached = () => {};
    const arrived = new Promise<void>((r) => {
      reached = r;
    });
    holdPut = {
      reached,
      open: new Promise<void>((r) => {
        release = r;
      }),
    };
    let answered = false;
    const run = commandsOf(() =>
      query('SELECT 7 AS seven').then((a) => {
        answered = true;
        return a;
      }),
    );
    await arrived;
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(answered).toBe(false); // the entry is not stored yet: no answer
    release();
    const { value, calls, commands } = await run;
    expect(value.status).toBe(200);
    expect(value.body.data.rows).toEqual([{ seven: 7 }]);
    expect(commands).toEqual(['Update CONN', 'Put QH']);
    const item = (calls[1].input as { Item: Record<string, unknown> }).Item;
    expect(item).toMatchObject({ status: 'SUCCESS', rowCount: 1, sql: 'SELECT 7 AS seven', source: 'query' });
    const h = await history();
    expect(h.data[0]).toMatchObject({ status: 'SUCCESS', rowCount: 1, sql: 'SELECT 7 AS seven' });
    expect(h.meta.pagination.total).toBe(h.data.length);
  });

  it('a refused and a failing statement are each one PutItem with their outcome', async () => {
    const refused = await commandsOf(() => query('DELETE FROM pg_class'));
    expect(refused.value.status).toBe(400);
    expect(refused.commands).toEqual(['Update CONN', 'Put QH']);
    expect((refused.calls[1].input as { Item: Record<string, unknown> }).Item).toMatchObject({
      status: 'REJECTED',
      errorCode: 'READ_ONLY_VIOLATION',
    });
    const failed = await commandsOf(() => query('SELECT * FROM no_such_table_here'));
    expect(failed.value.status).toBeGreaterThanOrEqual(400);
    expect(failed.value.status).toBeLessThan(500);
    expect(failed.commands).toEqual(['Update CONN', 'Put QH']);
    expect((failed.calls[1].input as { Item: Record<string, unknown> }).Item).toMatchObject({
      status: 'FAILED',
    });
    const h = await history();
    expect(h.data.slice(0, 2).map((e) => e.status)).toEqual(['FAILED', 'REJECTED']);
  });

  it('a statement longer than the wait: the entry is written while it runs, the outcome after', async () => {
    // A wait of 20 ms, so that the statement (4 million rows counted) outlasts it on any machine.
    process.env.LOUPE_HISTORY_OPEN_AFTER_MS = '20';
    resetConfig();
    onTestFinished(() => {
      delete process.env.LOUPE_HISTORY_OPEN_AFTER_MS;
      resetConfig();
    });
    const { value, calls, commands } = await commandsOf(() =>
      query('SELECT count(*) AS n FROM generate_series(1, 4000000) a'),
    );
    expect(value.status).toBe(200);
    // The outcome is sent as the answer leaves: wait for it to be part of the calls.
    await vi.waitFor(async () => {
      const h = await history();
      expect(h.data[0]).toMatchObject({
        status: 'SUCCESS',
        sql: 'SELECT count(*) AS n FROM generate_series(1, 4000000) a',
      });
    });
    expect(commands.slice(0, 2)).toEqual(['Update CONN', 'Put QH']);
    const opened = (calls[1].input as { Item: Record<string, unknown> }).Item;
    expect(opened.status).toBeUndefined(); // written without its outcome, while the statement ran
    const after = send.mock.calls
      .map(([operation, input]) => describeCommand(s.app.orgId, operation, input))
      .filter((c) => c === 'Update QH');
    expect(after.length).toBeGreaterThanOrEqual(1);
  });
});
