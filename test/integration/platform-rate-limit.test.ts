import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../../shared/auth/bootstrap';
import { startTestServer, type TestServer } from '../support/server';

const LIMIT = 8;

/** Fixed one-minute windows: start the calls of a test early in a window so they all share it. */
async function earlyInWindow() {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 8_000) await new Promise((r) => setTimeout(r, left + 50));
}

describe('organization rate limit (counted in the shared store alongside authentication)', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ env: { LOUPE_ORG_RATE_LIMIT: String(LIMIT) } });
  });
  afterAll(async () => {
    await s?.stop();
  });

  const newOrg = async (name: string) =>
    (await createOrganization({ name, adminEmail: `admin@${name}.example` })).key;

  it('counts every request of the organization, then answers 429 before the body is validated', async () => {
    const key = await newOrg('counted');
    await earlyInWindow();
    const seen: number[] = [];
    for (let i = 0; i < LIMIT; i++) {
      const r = await s.call('GET', '/connections', { key });
      expect(r.status).toBe(200);
      expect(r.headers.get('ratelimit-limit')).toBe(String(LIMIT));
      seen.push(Number(r.headers.get('ratelimit-remaining')));
    }
    expect(seen).toEqual([7, 6, 5, 4, 3, 2, 1, 0]);
    const limited = await s.call('POST', '/connections', { key, body: { name: '' } });
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('RATE_LIMITED');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited.headers.get('ratelimit-remaining')).toBe('0');
  });

  it('does not count a request whose key lacks the route scope (403) or a bad key (401)', async () => {
    const admin = await newOrg('scoped');
    await earlyInWindow();
    const created = await s.call('POST', '/keys', {
      key: admin,
      body: { name: 'query only', scopes: ['query'] },
    });
    expect(created.status).toBe(201);
    const narrow = created.body.data.key as string;
    for (let i = 0; i < LIMIT + 2; i++) {
      const r = await s.call('GET', '/connections', { key: narrow });
      expect(r.status).toBe(403);
      expect(r.headers.get('ratelimit-remaining')).toBeNull();
    }
    // Another last character (a fixed 'x' was the real key whenever the key already ended in 'x').
    const wrong = `${narrow.slice(0, -1)}${narrow.endsWith('x') ? 'y' : 'x'}`;
    expect((await s.call('GET', '/connections', { key: wrong })).status).toBe(401);
    const after = await s.call('GET', '/connections', { key: admin });
    expect(after.status).toBe(200);
    // POST /keys and this call.
    expect(after.headers.get('ratelimit-remaining')).toBe(String(LIMIT - 2));
  });

  it('keeps each organization in its own window', async () => {
    const [a, b] = [await newOrg('window-a'), await newOrg('window-b')];
    await earlyInWindow();
    for (let i = 0; i < 3; i++) expect((await s.call('GET', '/connections', { key: a })).status).toBe(200);
    const other = await s.call('GET', '/connections', { key: b });
    expect(other.headers.get('ratelimit-remaining')).toBe(String(LIMIT - 1));
  });
});
