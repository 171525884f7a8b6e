import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { open, seal } from './aes';
import { canonicalContext, DecryptionFailed, type Encryption, type EncryptionContext } from './port';

const PREFIX = 'lk1';

/** Loads the base64 master key from the variable, or from the key file (created 0600 on first use). */
export function loadMasterKey(fromEnv: string | undefined, keyFile: string): Buffer {
  const source = fromEnv ? 'LOUPE_MASTER_KEY' : `The master key file ${keyFile}`;
  const b64 = fromEnv ?? (existsSync(keyFile) ? readFileSync(keyFile, 'utf8').trim() : undefined);
  if (b64) {
    const key = Buffer.from(b64, 'base64');
    if (key.length !== 32) throw new Error(`${source} must hold the base64 encoding of exactly 32 bytes.`);
    return key;
  }
  const key = randomBytes(32);
  mkdirSync(dirname(keyFile), { recursive: true });
  writeFileSync(keyFile, key.toString('base64'), { mode: 0o600, flag: 'wx' });
  return key;
}

/** What KMS does, done locally: AES-256-GCM under a master key, the context as additional data. */
export class LocalEncryption implements Encryption {
  constructor(private readonly key: Buffer) {}

  async encrypt(plaintext: string, context: EncryptionContext): Promise<string> {
    const { iv, tag, ct } = seal(this.key, Buffer.from(plaintext, 'utf8'), canonicalContext(context));
    return [PREFIX, iv.toString('base64'), tag.toString('base64'), ct.toString('base64')].join(':');
  }

  async decrypt(ciphertext: string, context: EncryptionContext): Promise<string> {
    const [prefix, iv, tag, ct] = ciphertext.split(':');
    if (prefix !== PREFIX || !iv || !tag || ct === undefined)
      throw new DecryptionFailed('Not a local ciphertext');
    const parts = {
      iv: Buffer.from(iv, 'base64'),
      tag: Buffer.from(tag, 'base64'),
      ct: Buffer.from(ct, 'base64'),
    };
    try {
      return open(this.key, parts, canonicalContext(context)).toString('utf8');
    } catch {
      throw new DecryptionFailed('The ciphertext does not open with the master key under this context');
    }
  }
}
