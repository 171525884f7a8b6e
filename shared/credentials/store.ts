import { db, strip } from '../platform/db/store';
import { nameGuard } from '../saved-queries/name-guard';
import type { CredentialKind } from './api';

/**
 * Workflow credentials. Items:
 *  ORG#o / WFCRED#<id>                 the credential: metadata and `configCipher` (the secret config as
 *                                      ciphertext, context {orgId, credentialId, purpose}); never returned
 *  ORG#o / WFCREDNAME#<normalized>     the unique-name guard (saved-queries/name-guard.ts)
 */
export interface CredentialRecord {
  id: string;
  orgId: string;
  name: string;
  kind: CredentialKind;
  allowedHosts: string[];
  /** encryption() ciphertext of the JSON config, bound to credentialContext(orgId, id). */
  configCipher: string;
  /** Bumped by every rotation. */
  secretVersion: number;
  /** Members may attach and send it too (admins always may); absent on older records = false. */
  sharedWithMembers?: boolean;
  lastTestedAt: string | null;
  lastTestStatus: string | null;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

/** The encryption context a credential's config is bound to: a ciphertext moved elsewhere does not decrypt. */
export const credentialContext = (orgId: string, credentialId: string) => ({
  orgId,
  credentialId,
  purpose: 'workflow-credential',
});

const pk = (orgId: string) => `ORG#${orgId}`;
const sk = (id: string) => `WFCRED#${id}`;

const get = async (orgId: string, id: string): Promise<CredentialRecord | undefined> => {
  const item = await db.get(pk(orgId), sk(id));
  return item ? (strip(item) as unknown as CredentialRecord) : undefined;
};

export const credentialNames = nameGuard('WFCRED', async (orgId, id) => (await get(orgId, id))?.name);

export const credentialStore = {
  get,

  /** One Query over the organization's credentials. */
  async list(orgId: string): Promise<CredentialRecord[]> {
    const items = await db.query({ pk: pk(orgId), prefix: 'WFCRED#' });
    return items.map((i) => strip(i) as unknown as CredentialRecord);
  },

  async put(r: CredentialRecord): Promise<boolean> {
    return db.put({ pk: pk(r.orgId), sk: sk(r.id), type: 'workflow-credential', ...r }, { ifAbsent: true });
  },

  /** Applies changes if the record still has `expectedName` and `expectedVersion` (one conditional write). */
  async update(
    orgId: string,
    id: string,
    expected: { name: string; secretVersion: number },
    changes: Partial<Omit<CredentialRecord, 'id' | 'orgId' | 'createdBy' | 'createdAt'>>,
  ): Promise<CredentialRecord | undefined> {
    const set = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined));
    const item = await db.patch(pk(orgId), sk(id), set, {
      condition: '#n = :expectedName AND secretVersion = :expectedVersion',
      names: { '#n': 'name' },
      values: { ':expectedName': expected.name, ':expectedVersion': expected.secretVersion },
    });
    return item ? (strip(item) as unknown as CredentialRecord) : undefined;
  },

  /** Records the outcome of a live use of the credential (e.g. a workflow action test). */
  async markTested(orgId: string, id: string, status: string, at: string): Promise<void> {
    await db.patch(pk(orgId), sk(id), { lastTestedAt: at, lastTestStatus: status.slice(0, 100) });
  },

  async delete(orgId: string, id: string): Promise<boolean> {
    return db.delete(pk(orgId), sk(id), { ifExists: true });
  },
};

/** Metadata for publish checks; undefined when missing. */
export async function getCredentialMeta(
  orgId: string,
  id: string,
): Promise<{ id: string; name: string; allowedHosts: string[] } | undefined> {
  const r = await get(orgId, id);
  return r ? { id: r.id, name: r.name, allowedHosts: [...r.allowedHosts] } : undefined;
}

/** Records when and how a credential was last used live (e.g. by a workflow action test). */
export async function recordCredentialTest(orgId: string, id: string, status: string): Promise<void> {
  await credentialStore.markTested(orgId, id, status, new Date().toISOString());
}
