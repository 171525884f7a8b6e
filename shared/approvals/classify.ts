/**
 * Statement classification for query approval, on the read-only guard's parsers (libpg-query for
 * PostgreSQL; sqlparser-rs and node-sql-parser for the others, as the guard uses them). Unlike the guard's own
 * `classifyStatement`, structural refusals (stacked statements, executable comments, unparseable
 * text) are errors here, and a write is verified to be exactly one statement (the guard refuses a
 * non-read at its first keyword, before counting statements).
 *
 * - 'read' exactly when `assertReadOnly` accepts the text (same parser, same token checks); an
 *   approved read then runs through the read-only path, where the catalog's function rule applies.
 * - Otherwise 'write', after verifyWrite (guard/write.ts) verified it is exactly one
 *   statement on the dialect's real grammar (libpg-query; sqlparser-rs for the others). MongoDB: a `$out`/`$merge`-style query is a 'write'; text that is not a MongoDB query
 *   throws the guard's error.
 */
import type { DbType } from '../databases/drivers/types';
import { assertReadOnly } from '../guard/read';
import { STRUCTURAL, verifyWrite } from '../guard/write';
import { isAppError } from '../platform/errors';

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
    const parsed = await verifyWrite(type, text);
    return { kind: 'write', statementType: statementType !== 'UNKNOWN' ? statementType : parsed };
  }
}
