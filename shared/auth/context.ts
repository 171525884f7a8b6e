import { forbidden, notFound } from '../platform/errors';

export type Role = 'admin' | 'member';

/** Who is calling: resolved from the API key on every request. */
export interface AuthContext {
  orgId: string;
  userId: string;
  keyId: string;
  role: Role;
  scopes: string[];
  /** Connections assigned to a member (admins see all). */
  connectionIds: string[];
}

export const isAdmin = (ctx: AuthContext) => ctx.role === 'admin';

/** Members see only their assigned connections; anything else is reported as not found. */
export function assertConnectionVisible(ctx: AuthContext, connectionId: string): void {
  if (!isAdmin(ctx) && !ctx.connectionIds.includes(connectionId)) throw notFound('Connection');
}

export function assertAdmin(ctx: AuthContext): void {
  if (!isAdmin(ctx)) throw forbidden('This operation requires an admin.');
}
