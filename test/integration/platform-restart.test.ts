import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startLocal } from '../../infra/local/app';
import { startTestServer } from '../support/server';

describe('local runtime persistence', () => {
  it('keeps every record across a restart on the same data directory', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'loupe-restart-'));
    try {
      const first = await startTestServer({ dataDir });
      const member = await first.call('POST', '/members', {
        body: { email: 'keep@example.com', name: 'Keep' },
      });
      const key = await first.call('POST', '/keys', { body: { name: 'survivor', scopes: ['chat'] } });
      await first.stop({ keepData: true });

      const second = await startTestServer({ dataDir, adminKey: first.adminKey });
      try {
        expect(second.app.orgId).toBe(first.app.orgId);
        expect((await second.call('GET', `/members/${member.body.data.id}`)).body.data.email).toBe(
          'keep@example.com',
        );
        expect((await second.call('GET', '/', { key: key.body.data.key })).status).toBe(200);
        const keys = await second.call('GET', '/keys');
        expect(keys.body.data.map((k: any) => k.name)).toContain('survivor');
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('creates the bootstrap admin key once and writes it to admin-key with mode 0600', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'loupe-boot-'));
    const lines: string[] = [];
    try {
      const app = await startLocal({
        port: 0,
        dataDir,
        env: { LOUPE_ADMIN_KEY: '' },
        log: (l) => lines.push(l),
      });
      const key = app.createdKey!;
      expect(key).toMatch(/^lp_[0-9A-Za-z]{40,}$/);
      const file = join(dataDir, 'admin-key');
      expect(readFileSync(file, 'utf8').trim()).toBe(key);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const res = await fetch(`${app.url}/`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status).toBe(200);
      await app.stop();
      const again = await startLocal({
        port: 0,
        dataDir,
        env: { LOUPE_ADMIN_KEY: '' },
        log: (l) => lines.push(l),
      });
      expect(again.createdKey).toBeUndefined();
      expect(again.orgId).toBe(app.orgId);
      await again.stop();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('refuses a LOUPE_ADMIN_KEY that does not look like a Loupe key', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'loupe-badkey-'));
    try {
      await expect(
        startLocal({ port: 0, dataDir, env: { LOUPE_ADMIN_KEY: 'hunter2' }, log: () => {} }),
      ).rejects.toThrow(/LOUPE_ADMIN_KEY/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
