import type { AuthContext } from '../auth/context';
import { authStore } from '../auth/store';
import { forbidden, notFound } from '../platform/errors';

/** The user whose usage is read: the caller, or (admins only) another user of the same organization. */
export async function usageSubject(ctx: AuthContext, userId: string | undefined): Promise<string> {
  if (!userId || userId === ctx.userId) return ctx.userId;
  if (ctx.role !== 'admin') throw forbidden('Only admins can read another user’s usage.');
  if (!(await authStore.getUser(ctx.orgId, userId))) throw notFound('User');
  return userId;
}
