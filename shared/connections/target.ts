import { encryption } from '../platform/encryption';
import type { ConnectionTarget } from './drivers/types';
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

/** What the drivers need to connect, with the password decrypted (never log or return it). */
export async function targetFor(rec: ConnectionRecord): Promise<ConnectionTarget> {
  const password = rec.passwordCipher
    ? await encryption().decrypt(rec.passwordCipher, passwordContext(rec.orgId, rec.id))
    : '';
  return {
    id: rec.id,
    version: String(rec.version),
    type: rec.type,
    host: rec.host,
    port: rec.port,
    database: rec.database,
    username: rec.username,
    password,
    sslEnabled: rec.sslEnabled,
  };
}
