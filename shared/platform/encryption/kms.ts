import type { KMSClient } from '@aws-sdk/client-kms';
import { count } from '../measures';
import { open, seal } from './aes';
import { canonicalContext, DecryptionFailed, type Encryption, type EncryptionContext } from './port';

const PREFIX = 'kms1';

/**
 * KMS Decrypt errors that say this ciphertext will not decrypt with this key (not the ciphertext of
 * this key and context, or a key disabled, pending deletion or gone). Throttling, KMS's own failures,
 * an unavailable key store and access denied (a policy being deployed) may pass and are not in the list.
 */
const PERMANENT_KMS_ERRORS = new Set([
  'InvalidCiphertextException',
  'IncorrectKeyException',
  'InvalidKeyUsageException',
  'NotFoundException',
  'DisabledException',
  'KMSInvalidStateException',
]);

/** The KMS client library, imported on first use (the local runtime and most requests never need it). */
const kmsSdk = () => import('@aws-sdk/client-kms');

/**
 * KMS envelope encryption: a fresh data key per secret from GenerateDataKey (under the encryption
 * context), the secret sealed locally with AES-256-GCM, and only the encrypted data key stored.
 */
export class KmsEncryption implements Encryption {
  constructor(
    private readonly keyId: string,
    private kms?: KMSClient,
  ) {}

  private async client() {
    const sdk = await kmsSdk();
    this.kms ??= new sdk.KMSClient({});
    return { sdk, kms: this.kms };
  }

  async encrypt(plaintext: string, context: EncryptionContext): Promise<string> {
    const { sdk, kms } = await this.client();
    const dk = await kms
      .send(
        new sdk.GenerateDataKeyCommand({ KeyId: this.keyId, KeySpec: 'AES_256', EncryptionContext: context }),
      )
      .catch((e: unknown) => {
        count('awsErrors', { dependency: 'kms', operation: 'GenerateDataKey' });
        throw e;
      });
    if (!dk.Plaintext || !dk.CiphertextBlob) throw new Error('KMS returned no data key');
    const key = Buffer.from(dk.Plaintext);
    try {
      const { iv, tag, ct } = seal(key, Buffer.from(plaintext, 'utf8'), canonicalContext(context));
      return [
        PREFIX,
        Buffer.from(dk.CiphertextBlob).toString('base64'),
        iv.toString('base64'),
        tag.toString('base64'),
        ct.toString('base64'),
      ].join(':');
    } finally {
      key.fill(0);
    }
  }

  async decrypt(ciphertext: string, context: EncryptionContext): Promise<string> {
    const [prefix, edk, iv, tag, ct] = ciphertext.split(':');
    if (prefix !== PREFIX || !edk || !iv || !tag || ct === undefined)
      throw new DecryptionFailed('Not a KMS ciphertext');
    const { sdk, kms } = await this.client();
    const out = await kms
      .send(
        new sdk.DecryptCommand({
          CiphertextBlob: Buffer.from(edk, 'base64'),
          EncryptionContext: context,
          KeyId: this.keyId,
        }),
      )
      .catch((e: unknown) => {
        const name = (e as { name?: string })?.name ?? '';
        if (PERMANENT_KMS_ERRORS.has(name)) throw new DecryptionFailed(`KMS does not decrypt it (${name})`);
        // Throttled, access denied, KMS failing: the key service is unwell for this function.
        count('awsErrors', { dependency: 'kms', operation: 'Decrypt' });
        throw e;
      });
    if (!out.Plaintext) throw new Error('KMS returned no plaintext');
    const key = Buffer.from(out.Plaintext);
    try {
      const parts = {
        iv: Buffer.from(iv, 'base64'),
        tag: Buffer.from(tag, 'base64'),
        ct: Buffer.from(ct, 'base64'),
      };
      return open(key, parts, canonicalContext(context)).toString('utf8');
    } catch {
      throw new DecryptionFailed('The ciphertext does not open with its data key under this context');
    } finally {
      key.fill(0);
    }
  }
}
