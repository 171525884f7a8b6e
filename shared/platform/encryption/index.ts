import { join } from 'node:path';
import { config } from '../config';
import { KmsEncryption } from './kms';
import { LocalEncryption, loadMasterKey } from './local';
import type { Encryption } from './port';

export { DecryptionFailed, type Encryption, type EncryptionContext } from './port';

let instance: Encryption | undefined;

/** The encryption port for this runtime: KMS in AWS, AES-256-GCM under the local master key otherwise. */
export function encryption(): Encryption {
  if (instance) return instance;
  const cfg = config();
  if (cfg.runtime === 'aws') {
    if (!cfg.LOUPE_KMS_KEY_ID) throw new Error('Invalid configuration: LOUPE_KMS_KEY_ID is required in AWS.');
    instance = new KmsEncryption(cfg.LOUPE_KMS_KEY_ID);
  } else {
    instance = new LocalEncryption(
      loadMasterKey(cfg.LOUPE_MASTER_KEY, join(cfg.LOUPE_DATA_DIR, 'master.key')),
    );
  }
  return instance;
}

export function resetEncryption(): void {
  instance = undefined;
}
