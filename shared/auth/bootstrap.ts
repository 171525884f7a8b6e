import { config } from '../platform/config';
import { looksLikeKey } from './key-material';
import { authStore } from './store';

/** Creates an organization, its first admin user and an admin key (`*` scopes). */
export async function createOrganization(input: {
  name: string;
  adminEmail: string;
  adminName?: string;
  key?: string;
}) {
  if (input.key && !looksLikeKey(input.key))
    throw new Error(
      'The given admin key does not look like a Loupe key (lp_ followed by 40+ base62 characters).',
    );
  const org = await authStore.createOrg(input.name);
  const user = await authStore.createUser(
    org.id,
    { email: input.adminEmail, name: input.adminName ?? input.adminEmail, role: 'admin' },
    config().LOUPE_DEFAULT_BALANCE_CENTS,
  );
  if (!user) throw new Error('Could not create the admin user.');
  const { key, record } = await authStore.createKey(
    org.id,
    user.id,
    { name: 'bootstrap admin', scopes: ['*'] },
    input.key,
  );
  return { orgId: org.id, userId: user.id, keyId: record.id, key };
}
