import type { ConnectionTarget } from '../databases/drivers/types';
import { type Encryption, encryption } from '../platform/encryption';
import type { ConnectionRecord } from './store';

/** The encryption context a connection password is bound to: a ciphertext moved elsewhere does not decrypt. */
export const passwordContext = (orgId: string, connectionId: string) => ({
  orgId,
  connectionId,
  purpose: 'connection-password',
});

export async function encryptPassword(
  orgId: string,
  connectionId: string,
  password: string,
): Promise<string> {
  return encryption().encrypt(password, passwordContext(orgId, connectionId));
}

/**
 * Decrypted passwords of this warm instance (KMS Decrypt is a network call per query otherwise), keyed
 * by organization, connection, version and the ciphertext itself, so that a changed password or another
 * organization never hits; entries live at most PASSWORD_TTL_MS, and a new encryption() instance (another
 * master key) starts empty. The record is still read on every use (deleted or deactivated connections
 * stop at once); the pooled driver holds the same password for as long anyway.
 */
const caches = new WeakMap<Encryption, Map<string, { password: string; expires: number }>>();
export const PASSWORD_TTL_MS = 5 * 60_000;
const MAX_PASSWORDS = 500;

async function passwordOf(rec: ConnectionRecord, cipher: string): Promise<string> {
  const enc = encryption();
  let passwords = caches.get(enc);
  if (!passwords) {
    passwords = new Map();
    caches.set(enc, passwords);
  }
  const key = `${rec.orgId}\n${rec.id}\n${rec.version}\n${cipher}`;
  const now = Date.now();
  const hit = passwords.get(key);
  if (hit && hit.expires > now) return hit.password;
  const password = await enc.decrypt(cipher, passwordContext(rec.orgId, rec.id));
  passwords.delete(key);
  if (passwords.size >= MAX_PASSWORDS)
    for (const [k, v] of passwords)
      if (v.expires <= now || passwords.size >= MAX_PASSWORDS) passwords.delete(k);
  passwords.set(key, { password, expires: now + PASSWORD_TTL_MS });
  return password;
}

/** What the drivers need to connect, with the password decrypted (never log or return it). */
export async function targetFor(rec: ConnectionRecord): Promise<ConnectionTarget> {
  const password = rec.passwordCipher ? await passwordOf(rec, rec.passwordCipher) : '';
  return {
    id: rec.id,
    version: String(rec.version),
    orgId: rec.orgId,
    type: rec.type,
    host: rec.host,
    port: rec.port,
    database: rec.database,
    username: rec.username,
    password,
    sslEnabled: rec.sslEnabled,
    allowedFunctions: rec.allowedFunctions ?? [],
  };
}
