import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server';

describe('pagination', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
    for (let i = 0; i < 24; i++)
      await s.call('POST', '/members', { body: { email: `p${i}@example.com`, name: `P${i}` } });
  });
  afterAll(() => s.stop());

  it('defaults to page 1 of 20 with totals', async () => {
    const r = await s.call('GET', '/members');
    expect(r.body.data).toHaveLength(20);
    expect(r.body.meta.pagination).toEqual({ total: 25, page: 1, pageSize: 20, totalPages: 2 });
  });

  it('serves later pages and an empty page past the end with correct totals', async () => {
    const p2 = await s.call('GET', '/members?page=2&pageSize=20');
    expect(p2.body.data).toHaveLength(5);
    const p9 = await s.call('GET', '/members?page=9&pageSize=10');
    expect(p9.status).toBe(200);
    expect(p9.body.data).toEqual([]);
    expect(p9.body.meta.pagination).toEqual({ total: 25, page: 9, pageSize: 10, totalPages: 3 });
  });

  it('pages without overlap or gaps', async () => {
    const ids = new Set<string>();
    for (let page = 1; page <= 3; page++) {
      const r = await s.call('GET', `/members?page=${page}&pageSize=10`);
      for (const m of r.body.data) ids.add(m.id);
    }
    expect(ids.size).toBe(25);
  });

  it.each([
    ['page=0', 'query.page'],
    ['pageSize=0', 'query.pageSize'],
    ['pageSize=101', 'query.pageSize'],
    ['page=abc', 'query.page'],
    ['page=1.5', 'query.page'],
  ])('rejects %s with 400 VALIDATION_ERROR', async (qs, path) => {
    const r = await s.call('GET', `/members?${qs}`);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('VALIDATION_ERROR');
    expect(r.body.error.details.issues[0].path).toBe(path);
  });

  it('accepts pageSize=100', async () => {
    const r = await s.call('GET', '/members?pageSize=100');
    expect(r.body.data).toHaveLength(25);
    expect(r.body.meta.pagination.totalPages).toBe(1);
  });
});
