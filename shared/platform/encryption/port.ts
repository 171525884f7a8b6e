/** Encryption context: names the organization and the resource a secret belongs to. */
export type EncryptionContext = Record<string, string>;

/**
 * Encrypts secrets at rest. The context is bound to the ciphertext (KMS encryption context, or
 * AES-GCM additional data locally): a ciphertext copied onto another resource does not decrypt.
 */
export interface Encryption {
  encrypt(plaintext: string, context: EncryptionContext): Promise<string>;
  decrypt(ciphertext: string, context: EncryptionContext): Promise<string>;
}

/** Canonical form of a context (sorted keys) used as additional authenticated data. */
export const canonicalContext = (context: EncryptionContext): Buffer =>
  Buffer.from(
    JSON.stringify(
      Object.keys(context)
        .sort()
        .map((k) => [k, context[k]]),
    ),
    'utf8',
  );
