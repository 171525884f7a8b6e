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

/**
 * The ciphertext does not open with this key under this context: it is malformed or tampered with, was
 * made for another resource or under another key, or the key can no longer be used (KMS: disabled,
 * pending deletion, gone). Trying again cannot succeed. Anything else a decrypt throws (a network
 * error, throttling) may be transient. The message never carries the ciphertext or the plaintext.
 */
export class DecryptionFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DecryptionFailed';
  }
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
