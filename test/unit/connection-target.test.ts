import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ConnectionRecord } from '../../shared/connections/store';
import { encryptPassword, PASSWORD_TTL_MS, targetFor } from '../../shared/connections/target';
import { resetConfig } from '../../shared/platform/config';
import { encryption, resetEncryption } from '../../shared/platform/encryption';

const dir = mkdtempSync(join(tmpdir(), 'loupe-target-'));
const saved = { ...process.env };

beforeEach(() => {
  process.env.LOUPE_RUNTIME = 'local';
  process.env.LOUPE_DATA_DIR = dir;
  process.env.LOUPE_MASTER_KEY = randomBytes(32).toString('base64');
  resetConfig();
  resetEncryption();
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});
afterAll(() => {
  process.env = saved;
  resetConfig();
  resetEncryption();
  rmSync(dir, { recursive: true, force: true });
});

async function record(over: Partial<ConnectionRecord> = {}): Promise<ConnectionRecord> {
  const orgId = over.orgId ?? 'org-a';
  const id = over.id ?? `conn-${randomBytes(4).toString('hex')}`;
  return {
    id,
    orgId,
    name: 'c',
    type: 'POSTGRES',
    host: 'db.example.com',
    port: 5432,
    database: 'app',
    username: 'reader',
    passwordCipher: await encryptPassword(orgId, id, 's3cret-pw'),
    sslEnabled: false,
    readOnly: true,
    isActive: true,
    deactivatedBy: null,
    lastTestedAt: null,
    lastError: null,
    lastErrorDiagnosis: null,
    schemaUpdatedAt: null,
    healthFailures: 0,
    lastHealthSlot: null,
    version: 1,
    createdAt: '2024-01-01T00:00:00.000Z',
    updatedAt: '2024-01-01T00:00:00.000Z',
    ...over,
  };
}

describe('targetFor decrypts a connection password once per warm instance', () => {
  it('reuses the decrypted password for the same connection, version and ciphertext', async () => {
    const rec = await record();
    const decrypt = vi.spyOn(encryption(), 'decrypt');
    expect((await targetFor(rec)).password).toBe('s3cret-pw');
    expect((await targetFor({ ...rec, host: 'other.example.com' })).host).toBe('other.example.com');
    expect(decrypt).toHaveBeenCalledTimes(1);
  });

  it('decrypts again when the version or the ciphertext changes', async () => {
    const rec = await record();
    const decrypt = vi.spyOn(encryption(), 'decrypt');
    await targetFor(rec);
    await targetFor({ ...rec, version: 2 });
    const changed = await encryptPassword(rec.orgId, rec.id, 'new-password');
    expect((await targetFor({ ...rec, version: 2, passwordCipher: changed })).password).toBe('new-password');
    expect(decrypt).toHaveBeenCalledTimes(3);
  });

  it('never answers another organization from the cache (its ciphertext context does not match)', async () => {
    const rec = await record({ orgId: 'org-a', id: 'shared-id' });
    await targetFor(rec);
    await expect(targetFor({ ...rec, orgId: 'org-b' })).rejects.toThrow();
  });

  it('decrypts again after the time to live', async () => {
    vi.useFakeTimers({ now: new Date('2024-05-01T00:00:00Z') });
    const rec = await record();
    const decrypt = vi.spyOn(encryption(), 'decrypt');
    await targetFor(rec);
    vi.setSystemTime(Date.now() + PASSWORD_TTL_MS - 1);
    await targetFor(rec);
    expect(decrypt).toHaveBeenCalledTimes(1);
    vi.setSystemTime(Date.now() + 2);
    await targetFor(rec);
    expect(decrypt).toHaveBeenCalledTimes(2);
  });

  it('starts empty with a new encryption instance (another master key fails as before)', async () => {
    const rec = await record();
    await targetFor(rec);
    process.env.LOUPE_MASTER_KEY = randomBytes(32).toString('base64');
    resetConfig();
    resetEncryption();
    await expect(targetFor(rec)).rejects.toThrow();
  });
});
