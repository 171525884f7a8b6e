import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../../shared/auth/bootstrap';
import { addBalance } from '../../shared/usage/balance';
import { recordUsage } from '../../shared/usage/record';
import { startTestServer, type TestServer } from '../support/server';

const PRICES = JSON.stringify({ 'test-model': { promptPerMillion: 1000, completionPerMillion: 3000 } });

describe('usage records and balance', () => {
  let s: TestServer;
  let adminId: string;
  let member: { id: string; key: string };

  beforeAll(async () => {
    s = await startTestServer({ env: { LOUPE_MODEL_PRICES: PRICES, LOUPE_DEFAULT_BALANCE_CENTS: '500' } });
    adminId = s.app.adminUserId;
    const m = await s.call('POST', '/members', { body: { email: 'usage-member@example.com', name: 'M' } });
    const k = await s.call('POST', `/members/${m.body.data.id}/keys`, { body: { name: 'm' } });
    member = { id: m.body.data.id, key: k.body.data.key };
  });
  afterAll(() => s.stop());

  it('starts every user with the configured non-expiring balance', async () => {
    const r = await s.call('GET', '/usage/budget');
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({
      remaining: 500,
      currency: 'USD',
      expires: false,
      periodStart: null,
      periodEnd: null,
    });
    const m = await s.call('GET', '/usage/budget', { key: member.key });
    expect(m.body.data.remaining).toBe(500);
  });

  it('lists nothing before any model call, with zero totals', async () => {
    const r = await s.call('GET', '/usage', { key: member.key });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual([]);
    expect(r.body.meta.pagination).toEqual({ total: 0, page: 1, pageSize: 20, totalPages: 0 });
  });

  it('prices each model call from the table, deducts exactly its cost and lists records newest first', async () => {
    const before = (await s.call('GET', '/usage/budget')).body.data.remaining;
    const a = await recordUsage(
      { orgId: s.app.orgId, userId: adminId },
      {
        feature: 'chat',
        model: 'test-model',
        promptTokens: 1000,
        completionTokens: 200,
      },
    );
    const b = await recordUsage(
      { orgId: s.app.orgId, userId: adminId },
      {
        feature: 'schema_summary',
        model: 'test-model',
        promptTokens: 50,
        completionTokens: 10,
      },
    );
    expect(a.costCents).toBeCloseTo(1 + 0.6, 9);
    expect(b.costCents).toBeCloseTo(0.05 + 0.03, 9);
    const after = (await s.call('GET', '/usage/budget')).body.data.remaining;
    expect(before - after).toBeCloseTo(a.costCents + b.costCents, 9);

    const list = await s.call('GET', '/usage');
    expect(list.body.meta.pagination.total).toBe(2);
    expect(list.body.data.map((r: any) => r.id)).toEqual([b.id, a.id]);
    expect(list.body.data[1]).toEqual({
      id: a.id,
      orgId: s.app.orgId,
      userId: adminId,
      model: 'test-model',
      promptTokens: 1000,
      completionTokens: 200,
      costCents: a.costCents,
      feature: 'chat',
      createdAt: a.createdAt,
    });
    // the member's records are separate
    expect((await s.call('GET', '/usage', { key: member.key })).body.meta.pagination.total).toBe(0);
  });

  it('pages through many records newest first with a counter total', async () => {
    const who = { orgId: s.app.orgId, userId: member.id };
    const ids: string[] = [];
    for (let i = 0; i < 7; i++)
      ids.push(
        (
          await recordUsage(who, {
            feature: 'auto_annotation',
            model: 'x',
            promptTokens: i,
            completionTokens: 0,
          })
        ).id,
      );
    const p1 = await s.call('GET', '/usage?pageSize=3', { key: member.key });
    const p3 = await s.call('GET', '/usage?pageSize=3&page=3', { key: member.key });
    const p4 = await s.call('GET', '/usage?pageSize=3&page=4', { key: member.key });
    expect(p1.body.meta.pagination).toEqual({ total: 7, page: 1, pageSize: 3, totalPages: 3 });
    expect(p1.body.data.map((r: any) => r.id)).toEqual([ids[6], ids[5], ids[4]]);
    expect(p3.body.data.map((r: any) => r.id)).toEqual([ids[0]]);
    expect(p4.body.data).toEqual([]);
    expect((await s.call('GET', '/usage?pageSize=101', { key: member.key })).status).toBe(400);
  });

  it('lets admins read another user’s usage and budget, but not members, nor users of other orgs', async () => {
    const r = await s.call('GET', `/usage?userId=${member.id}`);
    expect(r.status).toBe(200);
    expect(r.body.meta.pagination.total).toBe(7);
    expect((await s.call('GET', `/usage/budget?userId=${member.id}`)).status).toBe(200);
    const denied = await s.call('GET', `/usage?userId=${adminId}`, { key: member.key });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('FORBIDDEN');
    const other = await createOrganization({ name: 'Other', adminEmail: 'other-usage@example.com' });
    expect((await s.call('GET', `/usage?userId=${other.userId}`)).status).toBe(404);
    expect((await s.call('GET', `/usage/budget?userId=${other.userId}`)).status).toBe(404);
    const otherList = await s.call('GET', '/usage', { key: other.key });
    expect(otherList.body.meta.pagination.total).toBe(0);
  });

  it('tops up a balance with addBalance (the operator tool’s `balance add`)', async () => {
    const before = (await s.call('GET', '/usage/budget', { key: member.key })).body.data.remaining;
    const out = await addBalance(s.app.orgId, member.id, 250.5);
    expect(out.remaining).toBeCloseTo(before + 250.5, 9);
    expect((await s.call('GET', '/usage/budget', { key: member.key })).body.data.remaining).toBeCloseTo(
      before + 250.5,
      9,
    );
    await expect(addBalance(s.app.orgId, 'no-such-user', 10)).rejects.toMatchObject({ status: 404 });
  });

  it('requires the usage scope', async () => {
    const k = await s.call('POST', '/keys', { body: { name: 'chat only', scopes: ['chat'] } });
    const r = await s.call('GET', '/usage/budget', { key: k.body.data.key });
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('FORBIDDEN');
  });
});
