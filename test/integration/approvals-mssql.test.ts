import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runApproved } from '../../shared/approvals/execute';
import { closeAllDrivers } from '../../shared/databases/drivers/index';
import type { ConnectionTarget } from '../../shared/databases/drivers/types';
import type { AppError } from '../../shared/platform/errors';
import { startTdsWire, type TdsWireServer } from '../support/tds-wire';

/**
 * The SQL Server write path of approved queries, at the protocol level: the real mssql/tedious client
 * against the TDS test server (no SQL Server can be installed here). It proves the sequence the
 * driver sends — BEGIN TRANSACTION, the statement, COMMIT only on success, ROLLBACK otherwise — and
 * that rowsAffected comes from the server's DONE count. It cannot prove what a real server stores.
 */
describe('approved writes on SQL Server (TDS test server)', () => {
  let tds: TdsWireServer;
  const target = (): ConnectionTarget => ({
    id: `tds-approvals-${process.pid}`,
    version: '1',
    type: 'MSSQL',
    host: '127.0.0.1',
    port: tds.port,
    database: 'sales',
    username: 'writer',
    password: 'pw',
    sslEnabled: false,
  });
  const transactions = (from: number) =>
    tds.requests
      .slice(from)
      .filter((x) => x.kind === 'transaction')
      .map((x) => x.transaction);

  beforeAll(async () => {
    tds = await startTdsWire({
      users: { writer: 'pw' },
      databases: ['sales'],
      respond: (q) => {
        if (q.startsWith('UPDATE items')) return { rowsAffected: 7 };
        if (q.startsWith('DELETE FROM items OUTPUT'))
          return {
            columns: [{ name: 'id', type: 'int' }],
            rows: Array.from({ length: 1500 }, (_, i) => [i + 1]),
          };
        if (q.startsWith('INSERT INTO missing'))
          return { error: { number: 208, message: "Invalid object name 'missing'." } };
        return undefined;
      },
    });
  });
  afterAll(async () => {
    await closeAllDrivers();
    await tds.stop();
  });

  it('runs the write in a transaction and commits it; rowsAffected from the DONE count', async () => {
    const n = tds.requests.length;
    const r = await runApproved(target(), 'UPDATE items SET price = price * 2', 'write');
    expect(r).toMatchObject({ columns: [], rows: [], rowCount: 7, rowsAffected: 7 });
    expect(transactions(n)).toEqual(['begin', 'commit']);
    expect(
      tds.requests
        .slice(n)
        .some((x) => x.kind === 'rpc' && x.sql?.trim() === 'UPDATE items SET price = price * 2'),
    ).toBe(true);
  });

  it('a write with OUTPUT rows past the row cap runs to its end (no cancel) and commits', async () => {
    const n = tds.requests.length;
    const r = await runApproved(target(), 'DELETE FROM items OUTPUT deleted.id', 'write');
    expect(r.rows).toHaveLength(1000);
    expect(r.truncated).toBe(true);
    expect(tds.requests.slice(n).some((x) => x.kind === 'attention')).toBe(false);
    expect(transactions(n)).toEqual(['begin', 'commit']);
  });

  it('a failing write is rolled back, never committed, and answers 422 QUERY_FAILED', async () => {
    const n = tds.requests.length;
    const e = (await runApproved(target(), 'INSERT INTO missing VALUES (1)', 'write').catch(
      (x) => x,
    )) as AppError;
    expect(e.status).toBe(422);
    expect(e.code).toBe('QUERY_FAILED');
    expect(e.details).toMatchObject({ code: '208' });
    expect(transactions(n)).toEqual(['begin', 'rollback']);
  });

  it('an approved read goes through the read-only path: rolled back, never committed', async () => {
    const n = tds.requests.length;
    const r = await runApproved(target(), 'SELECT 1', 'read');
    expect(r.rowCount).toBe(1);
    expect(transactions(n)).toEqual(['begin', 'rollback']);
  });
});
