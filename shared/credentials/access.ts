/**
 * Who may attach and send a workflow credential: admins, and members when an admin shared the credential
 * with members (`sharedWithMembers`, default false). Checked when a workflow naming the credential is saved
 * or published and when one of its actions is tested (the caller), and again when a run sends it (the
 * run's user: the caller of a manual run or test, the publisher of a scheduled run, with the role the
 * user has now).
 */
import { type AuthContext, isAdmin, type Role } from '../auth/context';
import { authStore } from '../auth/store';
import { AppError, forbidden, notFound } from '../platform/errors';
import { type CredentialRecord, credentialStore } from './store';

export const mayUse = (role: Role | undefined, r: Pick<CredentialRecord, 'sharedWithMembers'>) =>
  role === 'admin' || (role === 'member' && r.sharedWithMembers === true);

const notShared = (r: CredentialRecord) =>
  `The workflow credential "${r.name}" is not shared with members: only an admin can attach or send it, or an admin shares it (PATCH /workflow-credentials/${r.id} with {"sharedWithMembers": true}).`;

/**
 * For a request naming credentials in a workflow's actions: nothing for an admin; for a member, 404
 * when a credential is not in the organization and 403 when it is not shared with members.
 */
export async function assertCredentialsUsable(ctx: AuthContext, ids: readonly string[]): Promise<void> {
  if (isAdmin(ctx)) return;
  for (const id of new Set(ids)) {
    const r = await credentialStore.get(ctx.orgId, id);
    if (!r) throw notFound('Workflow credential');
    if (!mayUse(ctx.role, r)) throw forbidden(notShared(r));
  }
}

/** The credential may not be sent for the run's user: the action fails with this, sending nothing. */
export class CredentialNotUsable extends AppError {
  constructor(message: string) {
    super(403, 'CREDENTIAL_NOT_USABLE', message);
    this.name = 'CredentialNotUsable';
  }
}

/** At send time: the run's user, as the organization has it now, may use the credential. */
export async function assertRunMayUse(orgId: string, userId: string, r: CredentialRecord): Promise<void> {
  const user = await authStore.getUser(orgId, userId);
  if (!user || user.deletedAt)
    throw new CredentialNotUsable(
      `The workflow credential "${r.name}" was not sent: the user this run acts for no longer exists in the organization.`,
    );
  if (!mayUse(user.role, r))
    throw new CredentialNotUsable(
      `The workflow credential "${r.name}" was not sent: the user this run acts for is a member and the credential is not shared with members.`,
    );
}
