import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createOrganization } from '../../shared/auth/bootstrap';
import { hashKey, looksLikeKey } from '../../shared/auth/key-material';
import { authStore } from '../../shared/auth/store';
import { db } from '../../shared/platform/db/store';
import { nowIso } from '../../shared/platform/ids';

export interface BootstrapResult {
  orgId: string;
  adminUserId: string;
  firstStart: boolean;
  /** The admin key, only when it was created now. */
  createdKey?: string;
}

/**
 * On the first start of an empty store: an organization, an admin user and an admin key (the
 * LOUPE_ADMIN_KEY value when set), written to `<dataDir>/admin-key` with mode 0600.
 */
export async function bootstrapLocal(
  dataDir: string,
  givenKey: string | undefined,
): Promise<BootstrapResult> {
  if (givenKey && !looksLikeKey(givenKey))
    throw new Error(
      'LOUPE_ADMIN_KEY must look like a Loupe key: lp_ followed by 40 or more base62 characters.',
    );
  const marker = await db.get<{ orgId: string; adminUserId: string }>('LOCAL', 'BOOTSTRAP');
  if (marker) {
    let createdKey: string | undefined;
    if (givenKey && !(await authStore.findKeyByHash(hashKey(givenKey)))) {
      await authStore.createKey(
        marker.orgId,
        marker.adminUserId,
        { name: 'LOUPE_ADMIN_KEY', scopes: ['*'] },
        givenKey,
      );
      createdKey = givenKey;
    }
    return { orgId: marker.orgId, adminUserId: marker.adminUserId, firstStart: false, createdKey };
  }
  const created = await createOrganization({
    name: 'Local organization',
    adminEmail: 'admin@localhost',
    adminName: 'Local admin',
    key: givenKey,
  });
  await db.put({
    pk: 'LOCAL',
    sk: 'BOOTSTRAP',
    orgId: created.orgId,
    adminUserId: created.userId,
    createdAt: nowIso(),
  });
  const file = join(dataDir, 'admin-key');
  writeFileSync(file, `${created.key}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return { orgId: created.orgId, adminUserId: created.userId, firstStart: true, createdKey: created.key };
}
