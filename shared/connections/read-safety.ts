/**
 * GET /connections/{id}/read-safety: what the connection's role can reach beyond a read-only
 * transaction, and so how its reads are checked (guard/postgres-escapes.ts). PostgreSQL only: the
 * inventory is found now (one catalog query with JIT off) and replaces the one reads remember, so a
 * REVOKE shows, and takes effect, at once. Other databases answer `not-applicable`.
 */
import type { AuthContext } from '../auth/context';
import { readSafety } from '../databases/run';
import type { PgReadSafety } from '../guard/postgres-escapes';
import { AppError } from '../platform/errors';
import { loadConnection } from './connections';
import { targetFor } from './target';

export interface ReadSafetyView {
  mode: 'open' | 'strict' | 'not-applicable';
  escapes: { kind: string; object: string; detail: string; revoke: string[] }[];
  explanation: string;
  checkedAt: string | null;
}

/** The API's view of an inventory, with a plain explanation of its mode. */
export function readSafetyView(s: PgReadSafety): ReadSafetyView {
  const escapes = s.escapes.map(({ kind, object, detail, revoke }) => ({ kind, object, detail, revoke }));
  const explanation =
    s.mode === 'open'
      ? "Open mode: the connection's role reaches nothing that a read-only transaction does not contain (no other session, network, server file or program, superuser, unreviewed C extension or untrusted language, directly or through a SECURITY DEFINER function). Reads run on PostgreSQL's guarantees alone: a read-only transaction ended by ROLLBACK, then a session reset. Owner functions and views run."
      : `Strict mode: the connection's role reaches ${escapes.length === 1 ? 'an escape' : `${escapes.length} escapes`} (${escapes
          .slice(0, 3)
          .map((e) => `${e.kind} ${e.object}`)
          .join(
            ', ',
          )}${escapes.length > 3 ? ', …' : ''}), so code a read runs could change something outside the read. Every read is also checked against the catalog: code the database owner wrote runs only when listed in allowedFunctions. Run the REVOKE statements below (or connect with a role that has none of these) to read in open mode.`;
  return { mode: s.mode, escapes, explanation, checkedAt: s.checkedAt };
}

export async function getReadSafety(ctx: AuthContext, connectionId: string): Promise<ReadSafetyView> {
  const rec = await loadConnection(ctx, connectionId);
  if (rec.type !== 'POSTGRES')
    return {
      mode: 'not-applicable',
      escapes: [],
      explanation: `${rec.type} reads are checked by the database's own grammar and the function rule; the escape inventory is PostgreSQL's.`,
      checkedAt: null,
    };
  if (!rec.isActive)
    throw new AppError(
      422,
      'CONNECTION_INACTIVE',
      'The connection is inactive: test it (POST /connections/{id}/test) or reactivate it first.',
    );
  return readSafetyView(await readSafety(await targetFor(rec), { fresh: true }));
}
