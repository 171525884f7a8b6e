import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { DEMO_DASHBOARD_TITLE, DEMO_WIDGETS } from '../../shared/demo/dashboard';
import { generateDemoDatabase } from '../../shared/demo/generate';
import { DEMO_CONNECTION_NAME, demoEnabled } from '../../shared/demo/setup';
import { db } from '../../shared/platform/db/store';
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
      // The demo dashboard: every widget with a query answers rows from the demo database.
      const boards = (await s.call('GET', '/dashboards')).body.data;
      expect(boards.map((d: { title: string }) => d.title)).toEqual([DEMO_DASHBOARD_TITLE]);
      const widgets = boards[0].widgets as {
        id: string;
        type: string;
        title: string;
        query: string | null;
      }[];
      expect(widgets.map((w) => [w.type, w.title])).toEqual(DEMO_WIDGETS.map((w) => [w.type, w.title]));
      for (const w of widgets.filter((x) => x.query)) {
        const data = await s.call('GET', `/dashboards/${boards[0].id}/widgets/${w.id}/data`);
        expect(data.status, `${w.title}: ${data.text}`).toBe(200);
        expect(data.body.data.rowCount, w.title).toBeGreaterThan(0);
      }
      const byPlan = widgets.find((w) => w.title === 'MRR by plan')!;
      const plans = (await s.call('GET', `/dashboards/${boards[0].id}/widgets/${byPlan.id}/data`)).body.data;
      expect(plans.columns).toEqual(['plan', 'mrr_usd']);
      expect(plans.rows.map((r: { plan: string }) => r.plan).sort()).toEqual([
        'Enterprise',
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
      expect((await again.call('GET', '/dashboards')).body.data).toHaveLength(1);
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

  it('an install that registered the demo at <dataDir>/demo.sqlite gets it moved into the organization folder', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'loupe-demo-move-'));
    const first = await startTestServer({ dataDir, env: { LOUPE_DEMO_DATA: 'true' } });
    const orgId = first.app.orgId;
    const id = (await first.call('GET', '/connections')).body.data[0].id as string;
    // The state an older version left: the file in the data directory, the connection holding its absolute path.
    const inFolder = join(dataDir, 'sqlite', orgId, 'demo.sqlite');
    renameSync(inFolder, join(dataDir, 'demo.sqlite'));
    await db.patch(`ORG#${orgId}`, `CONN#${id}`, { database: join(dataDir, 'demo.sqlite') });
    const before = await first.call('POST', `/connections/${id}/query`, {
      body: { sql: 'SELECT count(*) AS n FROM plans' },
    });
    expect(before.status).toBe(422); // outside the organization's folder
    await first.stop({ keepData: true });
    const again = await startTestServer({ dataDir, env: { LOUPE_DEMO_DATA: 'true' } });
    try {
      expect(existsSync(inFolder)).toBe(true);
      expect(existsSync(join(dataDir, 'demo.sqlite'))).toBe(false);
      expect((await again.call('GET', `/connections/${id}`)).body.data.database).toBe('demo.sqlite');
      const q = await again.call('POST', `/connections/${id}/query`, {
        body: { sql: 'SELECT count(*) AS n FROM plans' },
      });
      expect(q.status, q.text).toBe(200);
    } finally {
      await again.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('an install whose demo predates the demo dashboard gets the dashboard once on the next start', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'loupe-demo-board-'));
    const first = await startTestServer({ dataDir, env: { LOUPE_DEMO_DATA: 'true' } });
    const board = (await first.call('GET', '/dashboards')).body.data[0];
    // The state an older version left: the demo done, no dashboard recorded or made.
    expect((await first.call('DELETE', `/dashboards/${board.id}`)).status).toBe(200);
    await db.patch('LOCAL', 'DEMO', { dashboardId: undefined });
    await first.stop({ keepData: true });
    const again = await startTestServer({ dataDir, env: { LOUPE_DEMO_DATA: 'true' } });
    try {
      const boards = (await again.call('GET', '/dashboards')).body.data;
      expect(boards.map((d: { title: string }) => d.title)).toEqual([DEMO_DASHBOARD_TITLE]);
      // Deleted by the user afterwards, it stays deleted.
      expect((await again.call('DELETE', `/dashboards/${boards[0].id}`)).status).toBe(200);
    } finally {
      await again.stop({ keepData: true });
    }
    const third = await startTestServer({ dataDir, env: { LOUPE_DEMO_DATA: 'true' } });
    try {
      expect((await third.call('GET', '/dashboards')).body.data).toEqual([]);
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
