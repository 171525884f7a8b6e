import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DecryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resetConfig } from '../../shared/platform/config';
import { DecryptionFailed, encryption, resetEncryption } from '../../shared/platform/encryption';
import { KmsEncryption } from '../../shared/platform/encryption/kms';
import { LocalEncryption, loadMasterKey } from '../../shared/platform/encryption/local';

const dir = mkdtempSync(join(tmpdir(), 'loupe-encryption-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ctx = { orgId: 'org-1', resource: 'connection', connectionId: 'c-1' };

/** Flips one bit in the base64 part `index` of a `prefix:part:part…` ciphertext. */
function tamper(ciphertext: string, index: number): string {
  const parts = ciphertext.split(':');
  const bytes = Buffer.from(parts[index], 'base64');
  bytes[0] ^= 0x01;
  parts[index] = bytes.toString('base64');
  return parts.join(':');
}

describe('local encryption (AES-256-GCM under the master key)', () => {
  const enc = new LocalEncryption(randomBytes(32));

  it('round-trips a secret and never shows the plaintext in the ciphertext', async () => {
    const secret = 'p@ssw0rd-é-🔑';
    const ct = await enc.encrypt(secret, ctx);
    expect(ct.startsWith('lk1:')).toBe(true);
    expect(ct).not.toContain(secret);
    expect(await enc.decrypt(ct, ctx)).toBe(secret);
    expect(await enc.encrypt(secret, ctx)).not.toBe(ct); // fresh IV each time
  });

  it('decrypts whatever the order of the context keys', async () => {
    const ct = await enc.encrypt('s', ctx);
    expect(await enc.decrypt(ct, { connectionId: 'c-1', resource: 'connection', orgId: 'org-1' })).toBe('s');
  });

  it('fails to decrypt under another context (a ciphertext copied to another resource or organization)', async () => {
    const ct = await enc.encrypt('s', ctx);
    await expect(enc.decrypt(ct, { ...ctx, connectionId: 'c-2' })).rejects.toThrow();
    await expect(enc.decrypt(ct, { ...ctx, orgId: 'org-2' })).rejects.toThrow();
    await expect(enc.decrypt(ct, { orgId: 'org-1' })).rejects.toThrow();
  });

  it('fails to decrypt a tampered ciphertext, tag or IV', async () => {
    const ct = await enc.encrypt('secret value', ctx);
    for (const part of [1, 2, 3]) await expect(enc.decrypt(tamper(ct, part), ctx)).rejects.toThrow();
    await expect(enc.decrypt(ct.replace(/^lk1/, 'kms1'), ctx)).rejects.toThrow(/Not a local ciphertext/);
    await expect(enc.decrypt('lk1:abc', ctx)).rejects.toThrow(/Not a local ciphertext/);
  });

  it('fails to decrypt under another master key', async () => {
    const ct = await enc.encrypt('s', ctx);
    await expect(new LocalEncryption(randomBytes(32)).decrypt(ct, ctx)).rejects.toThrow();
  });

  it('says DecryptionFailed (trying again cannot succeed) for every ciphertext that does not open, without showing it', async () => {
    const ct = await enc.encrypt('secret value', ctx);
    const bad = [
      ...[1, 2, 3].map((part) => tamper(ct, part)),
      `${ct.slice(0, -6)}AAAAAA`,
      ct.replace(/^lk1/, 'kms1'),
      'lk1:abc',
      'lk1:::',
      'lk1:AAAA:AAAA:AAAA', // IV and tag of the wrong length
      '',
    ];
    for (const c of bad) {
      const e = await enc.decrypt(c, ctx).catch((x: unknown) => x);
      expect(e, c).toBeInstanceOf(DecryptionFailed);
      if (c) expect((e as Error).message, c).not.toContain(c);
    }
    const other = await new LocalEncryption(randomBytes(32)).decrypt(ct, ctx).catch((x: unknown) => x);
    expect(other).toBeInstanceOf(DecryptionFailed);
    const elsewhere = await enc.decrypt(ct, { ...ctx, orgId: 'org-2' }).catch((x: unknown) => x);
    expect(elsewhere).toBeInstanceOf(DecryptionFailed);
  });
});

describe('local master key', () => {
  it('is created on first use as a 0600 file and read back on later starts', () => {
    const file = join(dir, 'first', 'master.key');
    const key = loadMasterKey(undefined, file);
    expect(key).toHaveLength(32);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(Buffer.from(readFileSync(file, 'utf8'), 'base64').equals(key)).toBe(true);
    expect(loadMasterKey(undefined, file).equals(key)).toBe(true);
  });

  it('comes from LOUPE_MASTER_KEY when set, without writing a file', () => {
    const given = randomBytes(32);
    const file = join(dir, 'from-env', 'master.key');
    expect(loadMasterKey(given.toString('base64'), file).equals(given)).toBe(true);
    expect(existsSync(file)).toBe(false);
  });

  it('rejects a LOUPE_MASTER_KEY that is not 32 bytes', () => {
    const file = join(dir, 'bad', 'master.key');
    expect(() => loadMasterKey(randomBytes(16).toString('base64'), file)).toThrow(/exactly 32 bytes/);
    expect(() => loadMasterKey(randomBytes(33).toString('base64'), file)).toThrow(/exactly 32 bytes/);
  });

  describe('encryption() in the local runtime', () => {
    const KEYS = ['LOUPE_RUNTIME', 'LOUPE_DATA_DIR', 'LOUPE_MASTER_KEY', 'LOUPE_KMS_KEY_ID'] as const;
    const saved = Object.fromEntries(KEYS.map((k) => [k, process.env[k]]));
    beforeEach(() => {
      for (const k of KEYS) delete process.env[k];
      resetConfig();
      resetEncryption();
    });
    afterEach(() => {
      for (const k of KEYS) {
        if (saved[k] === undefined) delete process.env[k];
        else process.env[k] = saved[k];
      }
      resetConfig();
      resetEncryption();
    });

    it('keeps the master key in the data directory, so secrets decrypt after a restart', async () => {
      process.env.LOUPE_RUNTIME = 'local';
      process.env.LOUPE_DATA_DIR = join(dir, 'data');
      resetConfig();
      const ct = await encryption().encrypt('db-password', ctx);
      expect(statSync(join(dir, 'data', 'master.key')).mode & 0o777).toBe(0o600);
      resetEncryption(); // a new process start
      expect(await encryption().decrypt(ct, ctx)).toBe('db-password');
    });

    it('refuses a wrong-length LOUPE_MASTER_KEY', () => {
      process.env.LOUPE_RUNTIME = 'local';
      process.env.LOUPE_DATA_DIR = join(dir, 'data2');
      process.env.LOUPE_MASTER_KEY = Buffer.from('too short').toString('base64');
      resetConfig();
      expect(() => encryption()).toThrow(
        /LOUPE_MASTER_KEY must hold the base64 encoding of exactly 32 bytes/,
      );
    });

    it('requires LOUPE_KMS_KEY_ID in AWS', () => {
      process.env.LOUPE_RUNTIME = 'aws';
      resetConfig();
      expect(() => encryption()).toThrow(/LOUPE_KMS_KEY_ID is required/);
    });
  });
});

describe('KMS envelope encryption', () => {
  const kms = mockClient(KMSClient);
  const KEY_ID = 'arn:aws:kms:eu-west-1:123456789012:key/1111-2222';
  const dataKey = randomBytes(32);
  const encryptedDataKey = Buffer.from('encrypted-data-key-blob');
  const make = () => new KmsEncryption(KEY_ID, new KMSClient({ region: 'eu-west-1' }));

  beforeEach(() => {
    kms.reset();
    // fresh copies: the adapter zeroes the plaintext key after use
    kms.on(GenerateDataKeyCommand).callsFake(async () => ({
      KeyId: KEY_ID,
      Plaintext: Uint8Array.from(dataKey),
      CiphertextBlob: Uint8Array.from(encryptedDataKey),
    }));
    kms.on(DecryptCommand).callsFake(async () => ({ KeyId: KEY_ID, Plaintext: Uint8Array.from(dataKey) }));
  });

  it('asks KMS for a data key under the key id and the encryption context, and stores only the encrypted data key', async () => {
    const ct = await make().encrypt('api-token', ctx);
    expect(kms.commandCalls(GenerateDataKeyCommand).map((c) => c.args[0].input)).toEqual([
      { KeyId: KEY_ID, KeySpec: 'AES_256', EncryptionContext: ctx },
    ]);
    const [prefix, edk] = ct.split(':');
    expect(prefix).toBe('kms1');
    expect(Buffer.from(edk, 'base64').equals(encryptedDataKey)).toBe(true);
    expect(ct).not.toContain(dataKey.toString('base64'));
    expect(ct).not.toContain('api-token');
  });

  it('decrypts through KMS Decrypt with the encrypted data key, the context and the key id', async () => {
    const ct = await make().encrypt('api-token', ctx);
    expect(await make().decrypt(ct, ctx)).toBe('api-token');
    const input = kms.commandCalls(DecryptCommand)[0].args[0].input;
    expect(Buffer.from(input.CiphertextBlob!).equals(encryptedDataKey)).toBe(true);
    expect(input.EncryptionContext).toEqual(ctx);
    expect(input.KeyId).toBe(KEY_ID);
  });

  it('fails under another context even when KMS hands back the data key (the context is also the AES-GCM AAD)', async () => {
    const ct = await make().encrypt('api-token', ctx);
    await expect(make().decrypt(ct, { ...ctx, orgId: 'org-2' })).rejects.toThrow();
  });

  it('fails when KMS refuses the context, and on a tampered ciphertext', async () => {
    const ct = await make().encrypt('api-token', ctx);
    await expect(make().decrypt(tamper(ct, 4), ctx)).rejects.toThrow();
    await expect(make().decrypt(tamper(ct, 3), ctx)).rejects.toThrow();
    kms
      .on(DecryptCommand)
      .rejects(
        Object.assign(new Error('InvalidCiphertextException'), { name: 'InvalidCiphertextException' }),
      );
    await expect(make().decrypt(ct, ctx)).rejects.toThrow(/InvalidCiphertext/);
    await expect(make().decrypt('lk1:a:b:c', ctx)).rejects.toThrow(/Not a KMS ciphertext/);
  });

  const kmsError = (name: string) => Object.assign(new Error(`${name}: from KMS`), { name });

  it('says DecryptionFailed when KMS will never decrypt it (wrong ciphertext or key, key disabled or gone)', async () => {
    const ct = await make().encrypt('api-token', ctx);
    for (const name of [
      'InvalidCiphertextException',
      'IncorrectKeyException',
      'InvalidKeyUsageException',
      'NotFoundException',
      'DisabledException',
      'KMSInvalidStateException',
    ]) {
      kms.on(DecryptCommand).rejects(kmsError(name));
      const e = await make()
        .decrypt(ct, ctx)
        .catch((x: unknown) => x);
      expect(e, name).toBeInstanceOf(DecryptionFailed);
      expect((e as Error).message).toContain(name);
    }
    kms.on(DecryptCommand).callsFake(async () => ({ KeyId: KEY_ID, Plaintext: Uint8Array.from(dataKey) }));
    for (const c of [tamper(ct, 3), tamper(ct, 4), 'lk1:a:b:c'])
      await expect(make().decrypt(c, ctx)).rejects.toBeInstanceOf(DecryptionFailed);
  });

  it('passes other failures on as they are: throttling, KMS errors, access denied and the network may pass', async () => {
    const ct = await make().encrypt('api-token', ctx);
    for (const name of [
      'ThrottlingException',
      'KMSInternalException',
      'DependencyTimeoutException',
      'KeyUnavailableException',
      'AccessDeniedException',
      'TimeoutError',
    ]) {
      kms.on(DecryptCommand).rejects(kmsError(name));
      const e = await make()
        .decrypt(ct, ctx)
        .catch((x: unknown) => x);
      expect(e, name).not.toBeInstanceOf(DecryptionFailed);
      expect((e as Error).name).toBe(name);
    }
  });
});
