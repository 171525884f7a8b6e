import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { generateDemoDatabase } from '../../shared/demo/generate';
import { DEMO_CONNECTION_NAME, demoEnabled } from '../../shared/demo/setup';
import { startTestServer } from '../support/server';

const TABLES = [
  'plans',
  'accounts',
  'users',
  'subscriptions',
  'payments',
  'product_events',
  'support_tickets',
];

function digest(file: string) {
  const db = new DatabaseSync(file, { readOnly: true });
  const h = createHash('sha256');
  for (const t of TABLES)
    for (const row of db.prepare(`SELECT * FROM ${t} ORDER BY id`).all()) h.update(JSON.stringify(row));
  db.close();
  return h.digest('hex');
}

describe('local demo data', () => {
  const dir = mkdtempSync(join(tmpdir(), 'loupe-demo-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('generates the same SaaS database from the same seed, with foreign keys and indexes', () => {
    const a = join(dir, 'a.sqlite');
    const b = join(dir, 'b.sqlite');
    const counts = generateDemoDatabase(a);
    generateDemoDatabase(b);
    expect(digest(a)).toBe(digest(b));
    expect(Object.keys(counts).sort()).toEqual([...TABLES].sort());
    const total = Object.values(counts).reduce((s, n) => s + n, 0);
    expect(total).toBeGreaterThan(20_000);
    expect(counts.product_events).toBeGreaterThan(10_000);
    const db = new DatabaseSync(a, { readOnly: true });
    const fks = db.prepare("SELECT * FROM pragma_foreign_key_list('payments')").all();
    expect(fks.map((f) => f.table).sort()).toEqual(['accounts', 'subscriptions']);
    const indexes = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'")
      .all();
    expect(indexes.length).toBeGreaterThanOrEqual(10);
    expect(db.prepare('PRAGMA foreign_key_check').all()).toEqual([]);
    db.close();
    const other = join(dir, 'c.sqlite');
    generateDemoDatabase(other, 7);
    expect(digest(other)).not.toBe(digest(a));
  });

  it('on the first start registers "Demo SaaS (SQLite)" with its schema cached, once', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'loupe-demo-start-'));
    const s = await startTestServer({ dataDir, env: { LOUPE_DEMO_DATA: 'true' } });
    let demoId: string;
    try {
      // In the organization's own SQLite folder, like any file a user brings.
      expect(existsSync(join(dataDir, 'sqlite', s.app.orgId, 'demo.sqlite'))).toBe(true);
      expect(existsSync(join(dataDir, 'demo.sqlite'))).toBe(false);
      const list = await s.call('GET', '/connections');
      const demo = list.body.data.filter((c: { name: string }) => c.name === DEMO_CONNECTION_NAME);
      expect(demo).toHaveLength(1);
      demoId = demo[0].id;
      expect(demo[0]).toMatchObject({
        type: 'SQLITE',
        database: 'demo.sqlite',
        isActive: true,
      });
      const schema = await s.call('GET', `/connections/${demoId}/schema`);
      expect(schema.status).toBe(200);
      const names = schema.body.data.schema.tables.map((t: { name: string }) => t.name);
      expect(names).toEqual(expect.arrayContaining([...TABLES, 'monthly_revenue']));
      expect(schema.body.data.schemaSummary).toContain('product_events');
      const q = await s.call('POST', `/connections/${demoId}/query`, {
        body: {
          sql: 'SELECT p.name AS plan, COUNT(*) AS accounts FROM accounts a JOIN plans p ON p.id = a.plan_id GROUP BY p.name ORDER BY p.name',
          question: 'How many accounts per plan?',
        },
      });
      expect(q.status, q.text).toBe(200);
      expect(q.body.data.rows.map((r: { plan: string }) => r.plan)).toEqual([
        'Enterprise',
        'Free',
        'Growth',
        'Starter',
      ]);
    } finally {
      await s.stop({ keepData: true });
    }
    // A restart does not add it again; after the user deletes it, it stays deleted.
    const again = await startTestServer({ dataDir, env: { LOUPE_DEMO_DATA: 'true' } });
    try {
      const list = await again.call('GET', '/connections');
      expect(list.body.data.filter((c: { name: string }) => c.name === DEMO_CONNECTION_NAME)).toHaveLength(1);
      expect((await again.call('DELETE', `/connections/${demoId}`)).status).toBe(200);
    } finally {
      await again.stop({ keepData: true });
    }
    const third = await startTestServer({ dataDir, env: { LOUPE_DEMO_DATA: 'true' } });
    try {
      expect((await third.call('GET', '/connections')).body.data).toEqual([]);
    } finally {
      await third.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('is skipped with LOUPE_DEMO_DATA=false', async () => {
    const s = await startTestServer({ env: { LOUPE_DEMO_DATA: 'false' } });
    try {
      expect((await s.call('GET', '/connections')).body.data).toEqual([]);
      expect(existsSync(join(s.dataDir, 'demo.sqlite'))).toBe(false);
    } finally {
      await s.stop();
    }
  });

  it('is on by default outside the test runner and rejects unclear values', () => {
    expect(demoEnabled({})).toBe(true);
    expect(demoEnabled({ VITEST: 'true' })).toBe(false);
    expect(demoEnabled({ VITEST: 'true', LOUPE_DEMO_DATA: 'true' })).toBe(true);
    expect(demoEnabled({ LOUPE_DEMO_DATA: 'off' })).toBe(false);
    expect(() => demoEnabled({ LOUPE_DEMO_DATA: 'maybe' })).toThrow(/LOUPE_DEMO_DATA/);
  });
});
