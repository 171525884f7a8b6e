import { expect, it } from 'vitest';
import { unpooledDriver } from '../../shared/databases/drivers/index';
import type { ConnectionTarget } from '../../shared/databases/drivers/types';
import { runReadOnly } from '../../shared/databases/run';
import type { AppError } from '../../shared/platform/errors';

/** The error a promise rejects with; throws when it resolves. */
export async function failure(p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (e) {
    return e as AppError;
  }
  throw new Error('expected a failure');
}

/** Pings through a one-off driver and returns the raw driver error; throws when the ping succeeds. */
export async function pingError(target: ConnectionTarget): Promise<unknown> {
  const d = await unpooledDriver(target);
  try {
    await d.ping();
  } catch (e) {
    return e;
  } finally {
    await d.close();
  }
  throw new Error('expected the ping to fail');
}

/**
 * One test per [name, sql] attempt: runReadOnly refuses it with 400 READ_ONLY_VIOLATION and the
 * table still holds exactly `rows` rows (counted by an administrator session) afterwards.
 */
export function refusesEach(
  attempts: Array<[string, string]>,
  target: () => ConnectionTarget,
  count: () => Promise<number>,
  rows: number,
) {
  for (const [name, sql] of attempts) {
    it(`refuses ${name}`, async () => {
      const before = await count();
      const e = await failure(runReadOnly(target(), sql));
      expect(e.status).toBe(400);
      expect(e.code).toBe('READ_ONLY_VIOLATION');
      expect(await count()).toBe(before);
      expect(before).toBe(rows);
    });
  }
}
