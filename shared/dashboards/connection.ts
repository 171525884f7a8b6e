import type { AuthContext } from '../auth/context';
import { connectionForUse } from '../connections/execute';
import type { DbType } from '../databases/drivers/types';
import { AppError, isAppError } from '../platform/errors';

/**
 * The connection a widget, saved query or metric names, checked when it is saved: it must exist in
 * the caller's organization and be visible to the caller (members: assigned connections only).
 * Otherwise 404 NOT_FOUND with `details.path` naming the request field, the same answer as for a
 * connection that does not exist.
 */
export async function connectionForSave(ctx: AuthContext, connectionId: string, path: string) {
  try {
    return await connectionForUse(ctx, connectionId);
  } catch (e) {
    if (isAppError(e) && e.status === 404)
      throw new AppError(404, 'NOT_FOUND', 'Connection not found.', { path, connectionId });
    throw e;
  }
}

/** 400 READ_ONLY_VIOLATION at save time (the same check runs again at run time), naming the field. */
export async function assertReadOnlyAt(
  type: DbType,
  text: string,
  path: string,
  /** The connection's allowedFunctions (stored functions reads may call). */
  allowedFunctions: readonly string[] = [],
): Promise<void> {
  try {
    // Lazily: the SQL guard (parsers' loaders, allow lists) is needed to save SQL, not to read records.
    const { assertReadOnly } = await import('../guard/read');
    await assertReadOnly(type, text, { allowedFunctions });
  } catch (e) {
    if (isAppError(e)) {
      const details = e.details && typeof e.details === 'object' ? { ...e.details, path } : { path };
      throw new AppError(e.status, e.code, e.message, details, e.headers);
    }
    throw e;
  }
}
