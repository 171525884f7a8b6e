import mysqlParser from 'node-sql-parser/build/mysql';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { assertReadOnly } from '../../shared/guard/read';

afterEach(() => {
  vi.restoreAllMocks();
});

const astify = () =>
  vi.spyOn(
    (mysqlParser as unknown as { Parser: { prototype: { astify(): unknown } } }).Parser.prototype,
    'astify',
  );

describe('the read-only guard remembers verified reads', () => {
  it('parses a repeated read once and answers the same kind', async () => {
    const spy = astify();
    const sql = 'SELECT id, total FROM guard_memo_orders WHERE total > 10';
    expect(await assertReadOnly('MYSQL', sql)).toEqual({ kind: 'select' });
    expect(await assertReadOnly('MYSQL', sql)).toEqual({ kind: 'select' });
    expect(await assertReadOnly('MYSQL', `${sql} `)).toEqual({ kind: 'select' });
    expect(spy).toHaveBeenCalledTimes(2);
  });

  it('refuses a refused statement every time', async () => {
    for (let i = 0; i < 3; i++)
      await expect(assertReadOnly('POSTGRES', 'SELECT 1; DELETE FROM guard_memo_orders')).rejects.toThrow(
        expect.objectContaining({ code: 'READ_ONLY_VIOLATION' }),
      );
  });

  it('keeps verdicts per database type', async () => {
    const pragma = 'PRAGMA table_info(guard_memo_orders)';
    expect(await assertReadOnly('SQLITE', pragma)).toEqual({ kind: 'pragma' });
    await expect(assertReadOnly('POSTGRES', pragma)).rejects.toThrow(
      expect.objectContaining({ code: 'READ_ONLY_VIOLATION' }),
    );
    await expect(assertReadOnly('POSTGRES', pragma)).rejects.toThrow(
      expect.objectContaining({ code: 'READ_ONLY_VIOLATION' }),
    );
  });

  it('does not let a caller change a remembered verdict', async () => {
    const sql = 'SELECT 2 AS guard_memo';
    const first = await assertReadOnly('POSTGRES', sql);
    (first as { kind: string }).kind = 'pragma';
    expect(await assertReadOnly('POSTGRES', sql)).toEqual({ kind: 'select' });
  });
});
