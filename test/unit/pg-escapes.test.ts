/**
 * The escape inventory's bookkeeping (guard/postgres-escapes.ts), with a scripted catalog: concurrent
 * reads of a connection share one inventory (single flight), a timed-out inventory is remembered for a
 * while instead of being run again by every retry, a strict verdict is found again after its recheck
 * time, and the open-mode check follows the snapshot and digest protocol of the catalog check.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  FAILURE_MEMORY_MS,
  forgetEscapeInventories,
  pgReadMode,
  pgReadSafety,
  STRICT_RECHECK_MS,
} from '../../shared/guard/postgres-escapes';
import {
  ESCAPE_CHANGED_MARK,
  ESCAPE_SNAPSHOT_MARK,
  INVENTORY_SQL,
} from '../../shared/guard/postgres-escapes-sql';
import { AppError } from '../../shared/platform/errors';

const target = { id: 'c1', version: '1' };

/** A catalog answering the digest query and the inventory, counting each, after `delayMs`. */
function catalog(escapes: unknown[] = [], delayMs = 5) {
  const calls = { version: 0, inventory: 0 };
  const query = vi.fn(async (sql: string) => {
    await new Promise((r) => setTimeout(r, delayMs));
    if (sql === INVENTORY_SQL) {
      calls.inventory++;
      return { rows: escapes };
    }
    calls.version++;
    return { rows: [{ snapshot: '10:10:', hash: 'abc123' }] };
  });
  return { calls, query };
}

afterEach(() => {
  forgetEscapeInventories();
  vi.useRealTimers();
});

describe('escape inventory', () => {
  it('32 concurrent first reads of a connection run one inventory', async () => {
    const { calls, query } = catalog();
    const modes = await Promise.all(Array.from({ length: 32 }, () => pgReadMode(target, query)));
    expect(modes.every((m) => m.mode === 'open')).toBe(true);
    expect(calls).toEqual({ version: 1, inventory: 1 });
    // Remembered: the next read asks nothing.
    await pgReadMode(target, query);
    expect(calls).toEqual({ version: 1, inventory: 1 });
  });

  it('an inventory that timed out is remembered for a while: retries answer the same error without a query', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const timeout = new AppError(504, 'QUERY_TIMEOUT', 'The query did not finish within 10 s.');
    const query = vi.fn(async () => {
      throw timeout;
    });
    await expect(pgReadMode(target, query)).rejects.toBe(timeout);
    await expect(pgReadMode(target, query)).rejects.toBe(timeout);
    expect(query).toHaveBeenCalledTimes(1);
    vi.setSystemTime(Date.now() + FAILURE_MEMORY_MS + 1);
    const { query: ok } = catalog();
    expect((await pgReadMode(target, ok)).mode).toBe('open');
  });

  it('another failure (the connection) is not remembered', async () => {
    const refused = new AppError(422, 'CONNECTION_FAILED', 'Connection refused');
    const query = vi.fn(async () => {
      throw refused;
    });
    await expect(pgReadMode(target, query)).rejects.toBe(refused);
    await expect(pgReadMode(target, query)).rejects.toBe(refused);
    expect(query).toHaveBeenCalledTimes(2);
  });

  it('a strict verdict is found again after its recheck time; an open one stands on its checks', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const dblinkEscape = {
      kind: 'extension',
      object: 'dblink',
      detail: 'd',
      revoke: ['REVOKE …'],
      reaches: null,
    };
    const strict = catalog([dblinkEscape]);
    expect((await pgReadMode(target, strict.query)).mode).toBe('strict');
    await pgReadMode(target, strict.query);
    expect(strict.calls.inventory).toBe(1);
    vi.setSystemTime(Date.now() + STRICT_RECHECK_MS + 1);
    const open = catalog([]);
    expect((await pgReadMode(target, open.query)).mode).toBe('open');
    vi.setSystemTime(Date.now() + 10 * STRICT_RECHECK_MS);
    await pgReadMode(target, open.query);
    expect(open.calls.inventory).toBe(1);
    // The API finds it anew whenever asked.
    await pgReadSafety(target, open.query, { fresh: true });
    expect(open.calls.inventory).toBe(2);
  });

  it('the open-mode check: quiet form first, the digest form once the snapshot moved, forgotten when the digest changed', async () => {
    const { calls, query } = catalog();
    const first = await pgReadMode(target, query);
    if (first.mode !== 'open') throw new Error('expected open');
    expect(first.check.sql).toContain("s.v = '10:10:'");
    expect(first.check.sql).not.toContain('abc123');
    const moved = Object.assign(
      new Error(`invalid input syntax for type integer: "${ESCAPE_SNAPSHOT_MARK} 11:11:"`),
      {
        code: '22P02',
        inPreCheck: true,
      },
    );
    expect(first.check.changed(moved)).toBe(true);
    const second = await pgReadMode(target, query);
    if (second.mode !== 'open') throw new Error('expected open');
    expect(second.check.sql).toContain("= 'abc123'");
    // The statement's own error is not the check's.
    expect(second.check.changed(Object.assign(new Error('boom'), { code: '22P02' }))).toBe(false);
    const changed = Object.assign(new Error(`… "${ESCAPE_CHANGED_MARK} 12:12:"`), {
      code: '22P02',
      inPreCheck: true,
    });
    expect(second.check.changed(changed)).toBe(true);
    await pgReadMode(target, query);
    expect(calls.inventory).toBe(2);
  });
});
