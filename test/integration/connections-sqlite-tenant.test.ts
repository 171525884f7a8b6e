/**
 * SQLite files belong to one organization: over the real HTTP API a second organization's admin cannot
 * register or open the first organization's file (demo database included), by any path form, and the
 * answers never tell whether a path outside its folder exists.
 */
import { mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../../shared/auth/bootstrap';
import { placeSqlite } from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';

describe('SQLite sources over HTTP: one organization per folder', () => {
  let s: TestServer;
  let other: { orgId: string; key: string };
  let fileA: string;
  let before: Buffer;

  beforeAll(async () => {
    s = await startTestServer();
    const dir = join(s.dataDir, 'tmp-a');
    mkdirSync(dir, { recursive: true });
    fileA = join(dir, 'secret.db');
    const d = new DatabaseSync(fileA);
    d.exec("CREATE TABLE secrets (v TEXT); INSERT INTO secrets VALUES ('org-a-only');");
    d.close();
    placeSqlite(s, fileA);
    before = readFileSync(fileA);
    const org = await createOrganization({ name: 'Org B', adminEmail: 'admin@org-b.example' });
    other = { orgId: org.orgId, key: org.key };
    // An operator's mistake: a link in org B's folder to org A's file.
    mkdirSync(join(s.dataDir, 'sqlite', other.orgId), { recursive: true });
    symlinkSync(
      join(s.dataDir, 'sqlite', s.app.orgId, 'secret.db'),
      join(s.dataDir, 'sqlite', other.orgId, 'link.db'),
    );
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('org A reads its own file by its relative name', async () => {
    const c = await s.call('POST', '/connections', {
      body: { name: 'mine', type: 'SQLITE', database: 'secret.db' },
    });
    expect(c.status).toBe(201);
    const q = await s.call('POST', `/connections/${c.body.data.id}/query`, {
      body: { sql: 'SELECT v FROM secrets' },
    });
    expect(q.body.data.rows).toEqual([{ v: 'org-a-only' }]);
  });

  const refusedAtSave = (orgA: string) => [
    join('/', 'data', 'sqlite', orgA, 'secret.db'),
    `../${orgA}/secret.db`,
    `./../${orgA}/secret.db`,
    '/etc/passwd',
    '/etc/does-not-exist.db',
    's3://some-bucket/secret.db',
  ];
  it('org B cannot register org A’s file by any path form (400), the same answer for existing and missing paths', async () => {
    const absolute = join(s.dataDir, 'sqlite', s.app.orgId, 'secret.db');
    const answers: string[] = [];
    for (const database of [absolute, ...refusedAtSave(s.app.orgId)]) {
      const r = await s.call('POST', '/connections', {
        key: other.key,
        body: { name: 'theirs', type: 'SQLITE', database },
      });
      expect(r.status, database).toBe(400);
      expect(r.body.error.details.issues[0].path).toBe('body.database');
      answers.push(r.body.error.details.issues[0].message);
    }
    expect(new Set(answers).size).toBe(1);
  });

  it('a link in org B’s folder leading outside is refused at save (400 on body.database, the text opening gives)', async () => {
    symlinkSync(join(s.dataDir, 'nowhere', 'gone.db'), join(s.dataDir, 'sqlite', other.orgId, 'dangling.db'));
    symlinkSync('/etc/passwd', join(s.dataDir, 'sqlite', other.orgId, 'passwd.db'));
    const outside = await s.call('POST', '/connections', {
      key: other.key,
      body: { name: 'theirs', type: 'SQLITE', database: '/etc/passwd' },
    });
    for (const database of ['link.db', './link.db', 'dangling.db', 'passwd.db']) {
      const r = await s.call('POST', '/connections', {
        key: other.key,
        body: { name: 'link', type: 'SQLITE', database },
      });
      expect(r.status, database).toBe(400);
      expect(r.body.error.details.issues).toEqual(outside.body.error.details.issues);
      expect(r.text).not.toContain('org-a-only');
    }
    // PATCH to a link is refused the same way, and leaves the connection as it was.
    const ok = await s.call('POST', '/connections', {
      key: other.key,
      body: { name: 'plain', type: 'SQLITE', database: 'plain.db' },
    });
    expect(ok.status, ok.text).toBe(201);
    const patched = await s.call('PATCH', `/connections/${ok.body.data.id}`, {
      key: other.key,
      body: { database: 'link.db' },
    });
    expect(patched.status).toBe(400);
    expect(patched.body.error.details.issues).toEqual(outside.body.error.details.issues);
    expect(
      (await s.call('GET', `/connections/${ok.body.data.id}`, { key: other.key })).body.data.database,
    ).toBe('plain.db');
  });

  it('a link placed after saving is refused when opened (422, no rows), file unchanged', async () => {
    const c = await s.call('POST', '/connections', {
      key: other.key,
      body: { name: 'later', type: 'SQLITE', database: 'later.db' },
    });
    expect(c.status, c.text).toBe(201);
    symlinkSync(
      join(s.dataDir, 'sqlite', s.app.orgId, 'secret.db'),
      join(s.dataDir, 'sqlite', other.orgId, 'later.db'),
    );
    const q = await s.call('POST', `/connections/${c.body.data.id}/query`, {
      key: other.key,
      body: { sql: 'SELECT v FROM secrets' },
    });
    expect(q.status).toBe(422);
    expect(q.body.error.code).toBe('CONNECTION_FAILED');
    expect(q.text).not.toContain('org-a-only');
    expect(q.body.error.details.diagnosis.title).toBe("SQLite source outside the organization's area");
    // The same text the save-time refusal gives.
    const atSave = await s.call('POST', '/connections', {
      key: other.key,
      body: { name: 'again', type: 'SQLITE', database: 'later.db' },
    });
    expect(atSave.status).toBe(400);
    expect(q.body.error.message).toContain(atSave.body.error.details.issues[0].message);
    const t = await s.call('POST', `/connections/${c.body.data.id}/test`, { key: other.key });
    expect(t.status).toBe(422);
    expect(readFileSync(fileA).equals(before)).toBe(true);
  });
});
