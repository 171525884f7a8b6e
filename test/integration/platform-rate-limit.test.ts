import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createOrganization } from '../../shared/auth/bootstrap';
import { maxSliceOf, SharedRateLimiter } from '../../shared/http/rate-limit';
import { documentClient } from '../../shared/platform/db/client';
import { db } from '../../shared/platform/db/store';
import { startTestServer, type TestServer } from '../support/server';
import { earlyInRateWindow } from '../support/wait';

const LIMIT = 8;

const earlyInWindow = () => earlyInRateWindow();

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

  describe('two instances leasing from one shared window', () => {
    const WINDOW_LIMIT = 50;
    const MAX_SLICE = maxSliceOf(WINDOW_LIMIT); // 5
    // A fixed instant: both limiters see the same window whatever the clock says.
    const NOW = Date.UTC(2026, 0, 1, 12, 0, 10);
    const windowStart = NOW - (NOW % 60_000);

    /** Runs hits, each on its instance, all at once; counts admissions and checks every refusal is a 429. */
    async function burst(hits: Array<{ on: SharedRateLimiter; orgId: string }>) {
      const outcomes = await Promise.allSettled(hits.map((h) => h.on.hit(h.orgId, 'all', WINDOW_LIMIT, NOW)));
      for (const o of outcomes)
        if (o.status === 'rejected') {
          expect(o.reason.status).toBe(429);
          expect(o.reason.headers['RateLimit-Remaining']).toBe('0');
        }
      return outcomes.filter((o) => o.status === 'fulfilled').length;
    }
    const sharedCount = async (orgId: string) =>
      Number((await db.get<{ count?: number }>(`ORG#${orgId}`, `RATE#all#${windowStart}`))?.count ?? 0);

    it('never admits more than the limit in a window, and refuses only once at least limit - instances x maxSlice were admitted', async () => {
      const orgId = randomUUID();
      const [a, b] = [new SharedRateLimiter(), new SharedRateLimiter()];
      // 200 requests at once, alternating between the instances.
      const admitted = await burst(Array.from({ length: 200 }, (_, i) => ({ on: i % 2 ? b : a, orgId })));
      expect(admitted).toBeLessThanOrEqual(WINDOW_LIMIT);
      expect(admitted).toBeGreaterThanOrEqual(WINDOW_LIMIT - 2 * MAX_SLICE);
      expect(await sharedCount(orgId)).toBeLessThanOrEqual(WINDOW_LIMIT);
      // Later requests of the window, on either instance, are refused.
      expect(
        await burst([
          { on: a, orgId },
          { on: b, orgId },
        ]),
      ).toBe(0);
    });

    it('an instance that stops using its lease holds back at most maxSlice', async () => {
      const orgId = randomUUID();
      const [a, b] = [new SharedRateLimiter(), new SharedRateLimiter()];
      let admittedA = 0;
      for (let i = 0; i < 30; i++) admittedA += await burst([{ on: a, orgId }]);
      expect(admittedA).toBe(30);
      // A has leased more than it used; B then takes whatever is left, and no more.
      const admittedB = await burst(Array.from({ length: 100 }, () => ({ on: b, orgId })));
      expect(admittedA + admittedB).toBeLessThanOrEqual(WINDOW_LIMIT);
      expect(admittedA + admittedB).toBeGreaterThanOrEqual(WINDOW_LIMIT - MAX_SLICE);
      expect(await sharedCount(orgId)).toBe(WINDOW_LIMIT);
      // A still spends what it leased before it is refused too.
      const rest = await burst(Array.from({ length: 20 }, () => ({ on: a, orgId })));
      expect(admittedA + admittedB + rest).toBe(WINDOW_LIMIT);
    });

    it('one instance alone reports remaining = limit - admitted, leasing far fewer times than it admits', async () => {
      const orgId = randomUUID();
      const a = new SharedRateLimiter();
      const seen: number[] = [];
      const send = vi.spyOn(documentClient(), 'send');
      try {
        for (let i = 0; i < WINDOW_LIMIT; i++)
          seen.push(Number((await a.hit(orgId, 'all', WINDOW_LIMIT, NOW))['RateLimit-Remaining']));
        await a.idle(); // the lease started alongside the last hits
        // Each lease starts alongside the hit that leaves a quarter of the slice or less, and asks for no
        // more than keeps the unspent part within the cap (5): leases of 1, 2, 4, then 4 (5 less the one
        // left): 47 after 13 writes; the 14th asks for 4, fails its condition and takes the remaining 3
        // (dynalite does not return the old count with the failure, so one GetItem reads it; DynamoDB
        // returns it). The last finds the window full (UpdateItem, GetItem): the next hit is refused
        // without a store call. The local runtime's queue and scheduler poll the same store meanwhile:
        // only this window's item is counted.
        const calls = send.mock.calls
          .filter(([, input]) => (input as { Key?: { sk?: string } }).Key?.sk === `RATE#all#${windowStart}`)
          .map(([operation]) => operation);
        expect(calls).toEqual([
          ...Array(14).fill('UpdateItem'),
          'GetItem',
          'UpdateItem',
          'UpdateItem',
          'GetItem',
        ]);
      } finally {
        send.mockRestore();
      }
      expect(seen).toEqual(Array.from({ length: WINDOW_LIMIT }, (_, i) => WINDOW_LIMIT - 1 - i));
      await expect(a.hit(orgId, 'all', WINDOW_LIMIT, NOW)).rejects.toMatchObject({ status: 429 });
    });
  });
});
