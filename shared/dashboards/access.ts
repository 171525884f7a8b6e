import type { AuthContext } from '../auth/context';
import { isAdmin } from '../auth/context';
import { forbidden } from '../platform/errors';

/** What the access rules need to know about a dashboard, saved query or metric. */
export interface Owned {
  createdBy: string;
  isPublic?: boolean;
}

/**
 * Who sees a resource: its creator and admins always; everyone in the organization when it is
 * public (metrics have no isPublic and are always shared). Everyone else gets 404, as for a
 * resource that does not exist.
 */
export const canSee = (ctx: AuthContext, r: Owned) =>
  r.isPublic !== false || r.createdBy === ctx.userId || isAdmin(ctx);

/** Changing or deleting a resource is for its creator and admins (403 for other members who see it). */
export function assertCanChange(ctx: AuthContext, r: Owned, what: string): void {
  if (r.createdBy !== ctx.userId && !isAdmin(ctx))
    throw forbidden(`Only the creator of this ${what} or an admin can change it.`);
}

/**
 * A widget, saved query or metric on a connection the member is not assigned to is hidden like the
 * connection itself (404; its query text is not shown). Admins see all; no connection hides nothing.
 */
export const onAssignedConnection = (ctx: AuthContext, r: { connectionId?: string | null }) =>
  !r.connectionId || isAdmin(ctx) || ctx.connectionIds.includes(r.connectionId);
