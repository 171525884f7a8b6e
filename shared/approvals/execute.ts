/**
 * Runs an approved statement: reads through the read-only path (runReadOnly: guard, read-only
 * transaction or session), writes through the driver with `readOnly: false` — one transaction under
 * the statement timeout, committed only when the statement succeeded (each driver's write path).
 * Results are bounded to the row cap and to a size that fits the stored record.
 */
import { driverFor } from '../databases/drivers/index';
import type { ConnectionTarget, QueryResult } from '../databases/drivers/types';
import { queryError, resolveOptions, runReadOnly } from '../databases/run';
import { config } from '../platform/config';
import { badRequest } from '../platform/errors';

export const APPROVAL_MAX_ROWS = 1000;
/** JSON size cap of a stored result (a DynamoDB item holds at most 400 KB). */
export const APPROVAL_MAX_RESULT_BYTES = 256 * 1024;

/** Bytes of one stored query record left for its result after the statement and context (item < 400 KB). */
const ITEM_BUDGET_BYTES = 360 * 1024;
const MIN_RESULT_BYTES = 16 * 1024;

/** The result's JSON cap: 256 KiB, less when a long statement and context already fill the record. */
export function resultBytesFor(query: string, context: string | null): number {
  const used = Buffer.byteLength(query, 'utf8') + Buffer.byteLength(context ?? '', 'utf8');
  return Math.max(MIN_RESULT_BYTES, Math.min(APPROVAL_MAX_RESULT_BYTES, ITEM_BUDGET_BYTES - used));
}

const options = (maxBytes: number, timeoutMs: number) =>
  resolveOptions({ maxRows: APPROVAL_MAX_ROWS, maxBytes, timeoutMs });

export async function runApproved(
  target: ConnectionTarget,
  text: string,
  kind: 'read' | 'write',
  maxBytes = APPROVAL_MAX_RESULT_BYTES,
  timeoutMs = config().LOUPE_DB_STATEMENT_TIMEOUT_MS,
): Promise<QueryResult> {
  if (kind === 'read') return runReadOnly(target, text, options(maxBytes, timeoutMs));
  if (target.type === 'MONGODB')
    throw badRequest('Approved MongoDB queries run only reads.', { connectionType: target.type });
  const opts = { ...options(maxBytes, timeoutMs), readOnly: false };
  let driver: Awaited<ReturnType<typeof driverFor>>;
  try {
    driver = await driverFor(target);
  } catch (e) {
    throw queryError(e, target, opts);
  }
  try {
    return await driver.query(text, opts);
  } catch (e) {
    throw queryError(e, target, opts);
  }
}
