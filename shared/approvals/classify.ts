/**
 * PROVISIONAL statement classification for query approval, built on the current read-only guard.
 * CONTRACTS.md assigns `classifyStatement(type, text)` to `shared/connections/sql-guard.ts` (owner:
 * the `guard` branch); until that is merged this file provides the same signature and meaning, and
 * the integrator switches the import in shared/approvals/approvals.ts to the guard's version and
 * deletes this file. (approvals.ts checks writes with assertSingleStatement either way.)
 *
 * - 'read' exactly when `assertReadOnly` accepts the text (same parser, same token checks).
 * - Otherwise 'write', after assertSingleStatement (single-statement.ts) verified it is exactly one
 *   statement. MongoDB: a `$out`/`$merge`-style query is a 'write'; text that is not a MongoDB query
 *   throws the guard's error.
 */
import type { DbType } from '../connections/drivers/types';
import { assertReadOnly } from '../connections/sql-guard';
import { isAppError } from '../platform/errors';
import { assertSingleStatement, STRUCTURAL } from './single-statement';

export interface Classification {
  kind: 'read' | 'write';
  statementType: string;
}

export async function classifyStatement(type: DbType, text: string): Promise<Classification> {
  try {
    const read = await assertReadOnly(type, text);
    return { kind: 'read', statementType: read.kind.toUpperCase() };
  } catch (e) {
    if (!isAppError(e) || e.code !== 'READ_ONLY_VIOLATION') throw e;
    const details = (e.details ?? {}) as { statementType?: unknown };
    const statementType = typeof details.statementType === 'string' ? details.statementType : 'UNKNOWN';
    if (STRUCTURAL.has(statementType)) throw e;
    if (type === 'MONGODB') return { kind: 'write', statementType };
    const parsed = await assertSingleStatement(type, text);
    return { kind: 'write', statementType: statementType !== 'UNKNOWN' ? statementType : parsed };
  }
}
