import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalApp, startLocal } from '../../infra/local/app';
import { createOrganization } from '../../shared/auth/bootstrap';
import { generateKey } from '../../shared/auth/key-material';
import { count } from '../../shared/platform/measures';
import { runScheduled } from '../../shared/workflows/runner';
import { createConnection, placeSqlite } from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';

const ORG_LIMIT = 30;

/** One scrape, as Prometheus does it: the series by name and labels (`name{a="x"}`), and the raw answer. */
async function scrape(s: Pick<TestServer, 'url'>, key: string | null) {
  const res = await fetch(`${s.url.replace(/\/v1$/, '')}/metrics`, {
    headers: key ? { authorization: `Bearer ${key}` } : {},
  });
  const text = await res.text();
  const series = new Map<string, number>();
  if (res.status === 200)
    for (const line of text.split('\n')) {
      if (!line || line.startsWith('#')) continue;
      const m = /^(\S+) (\S+)$/.exec(line);
      if (!m) throw new Error(`not a Prometheus sample line: ${line}`);
      series.set(m[1], Number(m[2]));
    }
  return {
    status: res.status,
    headers: res.headers,
    text,
    series,
    body: res.status === 200 ? null : JSON.parse(text),
  };
}

/** How much each series moved between two scrapes (absent before = 0). */
const moved = (before: Map<string, number>, after: Map<string, number>, name: string) =>
  (after.get(name) ?? 0) - (before.get(name) ?? 0);

/**
 * The local runtime's `GET /metrics`: Loupe's own measures in the Prometheus text format, read with an
 * admin key. The counters move with real requests against a real SQLite database, the local store and
 * the real runner of scheduled workflows.
 */
describe('GET /metrics (local runtime, Prometheus text format)', () => {
  let s: TestServer;
  let conn: string;
  const dir = mkdtempSync(join(tmpdir(), 'loupe-prom-'));
  const file = join(dir, 'shop.sqlite');

  beforeAll(async () => {
    const d = new DatabaseSync(file);
    d.exec(
      'CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL); INSERT INTO orders VALUES (1, 9.5), (2, 20);',
    );
    d.close();
    s = await startTestServer({ env: { LOUPE_ORG_RATE_LIMIT: String(ORG_LIMIT) } });
    conn = await createConnection(s, { name: 'shop', type: 'SQLITE', database: placeSqlite(s, file) });
  });
  afterAll(async () => {
    await s?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers an admin key with every measure, HELP and TYPE, in text format 0.0.4', async () => {
    const r = await scrape(s, s.adminKey);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    for (const name of [
      'loupe_queries_run_total',
      'loupe_queries_refused_total',
      'loupe_query_duration_seconds',
      'loupe_workflow_runs_total',
      'loupe_scheduled_runs_late_total',
      'loupe_webhook_deliveries_total',
      'loupe_approvals_total',
      'loupe_rate_limited_total',
      'loupe_chat_requests_total',
      'loupe_ai_tokens_total',
    ])
      expect(r.text).toContain(`# TYPE ${name} `);
    expect(r.series.get('process_resident_memory_bytes')).toBeGreaterThan(0);
  });

  it('refuses a request without a key or with a bad one (401) and a member key (403)', async () => {
    const none = await scrape(s, null);
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('UNAUTHORIZED');
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer resource_metadata="/);
    expect(none.text).not.toContain('loupe_');
    const bad = await scrape(s, 'lp_not_a_real_key_0000000000000000000000000');
    expect(bad.status).toBe(401);
    const member = await s.call('POST', '/members', {
      body: { email: 'watcher@prom.example', name: 'Watcher', role: 'member', connectionIds: [conn] },
    });
    expect(member.status, member.text).toBe(201);
    const key = await s.call('POST', `/members/${member.body.data.id}/keys`, { body: { name: 'scrape' } });
    expect(key.status, key.text).toBe(201);
    const asMember = await s.call('GET', '/connections', { key: key.body.data.key });
    expect(asMember.status).toBe(200); // the key works on the API…
    const refused = await scrape(s, key.body.data.key);
    expect(refused.status).toBe(403); // …but not on /metrics
    expect(refused.body.error.code).toBe('FORBIDDEN');
    expect(refused.text).not.toContain('loupe_');
    const post = await fetch(`${s.url.replace(/\/v1$/, '')}/metrics`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.adminKey}` },
    });
    expect(post.status).toBe(405);
  });

  it('counts a query run, a refused statement and the requests that carried them', async () => {
    const before = (await scrape(s, s.adminKey)).series;
    const ok = await s.call('POST', `/connections/${conn}/query`, {
      body: { sql: 'SELECT id, total FROM orders' },
    });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data.rowCount).toBe(2);
    const refused = await s.call('POST', `/connections/${conn}/query`, {
      body: { sql: 'DELETE FROM orders' },
    });
    expect(refused.status, refused.text).toBe(400);
    expect(refused.body.error.code).toBe('READ_ONLY_VIOLATION');
    const failed = await s.call('POST', `/connections/${conn}/query`, {
      body: { sql: 'SELECT nope FROM orders' },
    });
    expect(failed.status, failed.text).toBe(422);
    const after = (await scrape(s, s.adminKey)).series;

    expect(moved(before, after, 'loupe_queries_run_total{source="query",outcome="success"}')).toBe(1);
    expect(moved(before, after, 'loupe_queries_run_total{source="query",outcome="failed"}')).toBe(1);
    expect(moved(before, after, 'loupe_queries_refused_total{source="query"}')).toBe(1);
    expect(moved(before, after, 'loupe_query_duration_seconds_count')).toBe(2);
    expect(moved(before, after, 'loupe_query_duration_seconds_bucket{le="+Inf"}')).toBe(2);
    expect(moved(before, after, 'loupe_query_duration_seconds_sum')).toBeGreaterThan(0);
    expect(moved(before, after, 'loupe_http_requests_total{group="connections",code="200"}')).toBe(1);
    expect(moved(before, after, 'loupe_http_requests_total{group="connections",code="400"}')).toBe(1);
    expect(moved(before, after, 'loupe_http_requests_total{group="connections",code="422"}')).toBe(1);
    expect(moved(before, after, 'loupe_http_request_duration_seconds_count{group="connections"}')).toBe(3);
    // The scrapes themselves are not API requests.
    expect(moved(before, after, 'loupe_rate_limited_total{limit="org"}')).toBe(0);
  });

  it('counts requests refused by the organization rate limit', async () => {
    const { key } = await createOrganization({ name: 'Busy', adminEmail: 'admin@busy.example' });
    const before = (await scrape(s, s.adminKey)).series;
    // Twice the limit and one: however the one-minute windows fall, one of them goes over.
    let limited = 0;
    for (let i = 0; i < 2 * ORG_LIMIT + 2; i++) {
      const r = await s.call('GET', '/connections', { key });
      if (r.status === 429) limited++;
      else expect(r.status).toBe(200);
    }
    expect(limited).toBeGreaterThan(0);
    const after = (await scrape(s, s.adminKey)).series;
    expect(moved(before, after, 'loupe_rate_limited_total{limit="org"}')).toBe(limited);
    expect(moved(before, after, 'loupe_http_requests_total{group="connections",code="429"}')).toBe(limited);
  });

  it('counts a scheduled run that started late, and its outcome', async () => {
    const saved = await s.call('POST', '/workflows', {
      body: {
        name: 'nightly totals',
        triggerType: 'SCHEDULE',
        triggerConfig: { preset: 'DAILY', hour: 3 },
        connectionId: conn,
        steps: [{ query: 'SELECT count(*) AS n FROM orders' }],
        actions: [],
      },
    });
    expect(saved.status, saved.text).toBe(201);
    const id = saved.body.data.id as string;
    const first = await s.call('PATCH', `/workflows/${id}`, { body: { isActive: true } });
    const published =
      first.status === 422
        ? await s.call('PATCH', `/workflows/${id}`, {
            body: { isActive: true, acknowledgedWarnings: first.body.error.details.warnings },
          })
        : first;
    expect(published.status, published.text).toBe(200);

    const before = (await scrape(s, s.adminKey)).series;
    // Due ten minutes ago (a scheduler that was down), then one due now.
    const late = new Date(Date.now() - 10 * 60_000).toISOString();
    const onTime = new Date().toISOString();
    for (const scheduledTime of [late, onTime]) {
      const r = await runScheduled({ orgId: s.app.orgId, workflowId: id, version: 1, scheduledTime });
      expect(r, JSON.stringify(r)).toMatchObject({ status: 'SUCCESS' });
    }
    // The same due time again is a duplicate: nothing runs and nothing is measured twice.
    expect(
      await runScheduled({ orgId: s.app.orgId, workflowId: id, version: 1, scheduledTime: late }),
    ).toEqual({
      skipped: 'duplicate',
    });
    const after = (await scrape(s, s.adminKey)).series;
    expect(moved(before, after, 'loupe_scheduled_runs_late_total')).toBe(1);
    expect(moved(before, after, 'loupe_scheduled_run_start_delay_seconds_count')).toBe(2);
    // The late one is above the 300 s bucket, the one due now within the first (1 s).
    expect(moved(before, after, 'loupe_scheduled_run_start_delay_seconds_bucket{le="300"}')).toBe(1);
    expect(moved(before, after, 'loupe_scheduled_run_start_delay_seconds_bucket{le="900"}')).toBe(2);
    expect(moved(before, after, 'loupe_workflow_runs_total{trigger="SCHEDULE",outcome="SUCCESS"}')).toBe(2);
    expect(moved(before, after, 'loupe_queries_run_total{source="workflow",outcome="success"}')).toBe(2);
  });
});

describe('GET /metrics with handler instances in worker threads', () => {
  let app: LocalApp;
  const dataDir = mkdtempSync(join(tmpdir(), 'loupe-prom-instances-'));
  const adminKey = generateKey();
  afterAll(async () => {
    await app?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("adds up every instance thread's registry and the main thread's (where the workers run)", async () => {
    app = await startLocal({
      port: 0,
      dataDir,
      instances: 2,
      env: { LOUPE_ADMIN_KEY: adminKey, LOUPE_LOG_LEVEL: 'SILENT' },
      log: () => {},
    });
    expect(app.instances).toBe(2);
    const s = { url: app.url };
    const before = (await scrape(s, adminKey)).series;
    // New connections each time, so the kernel may hand them to either instance.
    for (let i = 0; i < 12; i++) {
      const r = await fetch(`${app.url}/connections`, {
        headers: { authorization: `Bearer ${adminKey}`, connection: 'close' },
      });
      expect(r.status).toBe(200);
      await r.text();
    }
    // This thread is the runtime's main thread: a measure recorded here is one of a worker's.
    count('approvals', { outcome: 'expired' });
    const after = (await scrape(s, adminKey)).series;
    expect(moved(before, after, 'loupe_http_requests_total{group="connections",code="200"}')).toBe(12);
    expect(moved(before, after, 'loupe_approvals_total{outcome="expired"}')).toBe(1);
    expect((await scrape(s, null)).status).toBe(401);
  });
});
