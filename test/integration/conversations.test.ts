import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../../shared/auth/bootstrap';
import { conversationStore } from '../../shared/conversations/store';
import { startTestServer, type TestServer } from '../support/server';

describe('conversations', () => {
  let s: TestServer;
  let memberKey: string;
  let otherOrgKey: string;
  let connectionId: string;
  let hiddenConnectionId: string;

  beforeAll(async () => {
    s = await startTestServer();
    const conn = await s.call('POST', '/connections', {
      body: { name: 'conv-sqlite', type: 'SQLITE', database: 'loupe-conv-test.db' },
    });
    expect(conn.status).toBe(201);
    connectionId = conn.body.data.id;
    const hidden = await s.call('POST', '/connections', {
      body: { name: 'conv-hidden', type: 'SQLITE', database: 'loupe-conv-hidden.db' },
    });
    hiddenConnectionId = hidden.body.data.id;
    const m = await s.call('POST', '/members', {
      body: { email: 'conv-member@example.com', name: 'Member', connectionIds: [connectionId] },
    });
    memberKey = (await s.call('POST', `/members/${m.body.data.id}/keys`, { body: { name: 'k' } })).body.data
      .key;
    otherOrgKey = (await createOrganization({ name: 'Other conv org', adminEmail: 'conv-other@example.com' }))
      .key;
  });
  afterAll(() => s.stop());

  it('creates (201), reads, renames and lists a conversation', async () => {
    const created = await s.call('POST', '/conversations', {
      body: { title: 'Revenue questions', connectionId },
    });
    expect(created.status).toBe(201);
    const c = created.body.data;
    expect(c).toMatchObject({
      title: 'Revenue questions',
      connectionId,
      orgId: s.app.orgId,
      userId: s.app.adminUserId,
    });
    const got = await s.call('GET', `/conversations/${c.id}`);
    expect(got.status).toBe(200);
    expect(got.body.data).toMatchObject({ id: c.id, messages: [], messageCount: 0 });
    const renamed = await s.call('PATCH', `/conversations/${c.id}`, { body: { title: 'Renamed' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data.title).toBe('Renamed');
    expect(Date.parse(renamed.body.data.updatedAt)).toBeGreaterThanOrEqual(Date.parse(c.updatedAt));
    const list = await s.call('GET', '/conversations');
    expect(list.body.data.map((x: any) => x.id)).toContain(c.id);
  });

  it('creates a conversation without a body, titled "New conversation" and bound to no connection', async () => {
    const r = await s.call('POST', '/conversations');
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({ title: 'New conversation', connectionId: null });
  });

  it('rejects bad input with 400 and unknown or hidden connections with 404', async () => {
    expect((await s.call('POST', '/conversations', { body: { title: '' } })).status).toBe(400);
    expect((await s.call('POST', '/conversations', { body: { title: 'x'.repeat(201) } })).status).toBe(400);
    const created = (await s.call('POST', '/conversations', { body: {} })).body.data;
    const noTitle = await s.call('PATCH', `/conversations/${created.id}`, { body: {} });
    expect(noTitle.status).toBe(400);
    expect(noTitle.body.error.code).toBe('VALIDATION_ERROR');
    expect((await s.call('POST', '/conversations', { body: { connectionId: 'missing' } })).status).toBe(404);
    const hidden = await s.call('POST', '/conversations', {
      body: { connectionId: hiddenConnectionId },
      key: memberKey,
    });
    expect(hidden.status).toBe(404);
    const visible = await s.call('POST', '/conversations', { body: { connectionId }, key: memberKey });
    expect(visible.status).toBe(201);
  });

  it('filters the list by connection and pages it', async () => {
    const tagged = (await s.call('POST', '/conversations', { body: { title: 'tagged', connectionId } })).body
      .data;
    const filtered = await s.call('GET', `/conversations?connectionId=${connectionId}`);
    expect(filtered.body.data.every((x: any) => x.connectionId === connectionId)).toBe(true);
    expect(filtered.body.data.map((x: any) => x.id)).toContain(tagged.id);
    const all = await s.call('GET', '/conversations?pageSize=2');
    expect(all.body.data).toHaveLength(2);
    expect(all.body.meta.pagination.total).toBeGreaterThan(2);
    expect(all.body.meta.pagination.totalPages).toBe(Math.ceil(all.body.meta.pagination.total / 2));
  });

  it('keeps conversations per user: other users of the org and other orgs get 404 and see none', async () => {
    const mine = (await s.call('POST', '/conversations', { body: { title: 'private' } })).body.data;
    for (const key of [memberKey, otherOrgKey]) {
      for (const [method, path, body] of [
        ['GET', `/conversations/${mine.id}`],
        ['PATCH', `/conversations/${mine.id}`, { title: 'hijack' }],
        ['DELETE', `/conversations/${mine.id}`],
        ['GET', `/conversations/${mine.id}/messages`],
      ] as const) {
        const r = await s.call(method, path, { key, body });
        expect(r.status, `${method} ${path}`).toBe(404);
        expect(r.body.error.code).toBe('NOT_FOUND');
      }
      const list = await s.call('GET', '/conversations', { key });
      expect(list.body.data.map((x: any) => x.id)).not.toContain(mine.id);
    }
    expect((await s.call('GET', `/conversations/${mine.id}`)).body.data.title).toBe('private');
  });

  it('pages messages chronologically with per-conversation sequence numbers and a counter total', async () => {
    const conv = (await s.call('POST', '/conversations', { body: { title: 'long' } })).body.data;
    for (let i = 1; i <= 5; i++)
      await conversationStore.append(s.app.orgId, s.app.adminUserId, conv.id, {
        role: i % 2 ? 'USER' : 'ASSISTANT',
        content: `message ${i}`,
        sqlQuery: i % 2 ? null : `SELECT ${i}`,
        resultSummary: i % 2 ? null : '1 row',
        promptTokens: i % 2 ? null : 10 * i,
        completionTokens: i % 2 ? null : i,
        model: i % 2 ? null : 'test-model',
      });
    const p1 = await s.call('GET', `/conversations/${conv.id}/messages?pageSize=2`);
    expect(p1.body.meta.pagination).toEqual({ total: 5, page: 1, pageSize: 2, totalPages: 3 });
    expect(p1.body.data.map((m: any) => m.content)).toEqual(['message 1', 'message 2']);
    expect(p1.body.data[1]).toMatchObject({
      conversationId: conv.id,
      role: 'ASSISTANT',
      sqlQuery: 'SELECT 2',
      resultSummary: '1 row',
      promptTokens: 20,
      completionTokens: 2,
      model: 'test-model',
    });
    expect(Object.keys(p1.body.data[0]).sort()).toEqual(
      [
        'completionTokens',
        'content',
        'conversationId',
        'createdAt',
        'id',
        'model',
        'promptTokens',
        'resultSummary',
        'role',
        'sqlQuery',
      ].sort(),
    );
    const p3 = await s.call('GET', `/conversations/${conv.id}/messages?pageSize=2&page=3`);
    expect(p3.body.data.map((m: any) => m.content)).toEqual(['message 5']);
    const p9 = await s.call('GET', `/conversations/${conv.id}/messages?pageSize=2&page=9`);
    expect(p9.body.data).toEqual([]);
    const whole = await s.call('GET', `/conversations/${conv.id}`);
    expect(whole.body.data.messageCount).toBe(5);
    expect(whole.body.data.messages.map((m: any) => m.content)).toEqual(
      [1, 2, 3, 4, 5].map((i) => `message ${i}`),
    );
  });

  it('deletes a conversation with its messages; a second delete is 404 and an interrupted delete completes', async () => {
    const conv = (await s.call('POST', '/conversations', { body: { title: 'doomed' } })).body.data;
    await conversationStore.append(s.app.orgId, s.app.adminUserId, conv.id, {
      role: 'USER',
      content: 'hi',
      sqlQuery: null,
      resultSummary: null,
      promptTokens: null,
      completionTokens: null,
      model: null,
    });
    const del = await s.call('DELETE', `/conversations/${conv.id}`);
    expect(del.status).toBe(200);
    expect(del.body.data).toEqual({ deleted: true });
    expect((await s.call('GET', `/conversations/${conv.id}`)).status).toBe(404);
    expect((await s.call('GET', `/conversations/${conv.id}/messages`)).status).toBe(404);
    expect(await conversationStore.messagesBetween(s.app.orgId, conv.id, 1, 10)).toEqual([]);
    expect((await s.call('DELETE', `/conversations/${conv.id}`)).status).toBe(404);

    // A delete interrupted after marking the conversation: it is already gone for readers, and the next
    // delete removes what is left.
    const half = (await s.call('POST', '/conversations', { body: { title: 'half' } })).body.data;
    await conversationStore.append(s.app.orgId, s.app.adminUserId, half.id, {
      role: 'USER',
      content: 'left over',
      sqlQuery: null,
      resultSummary: null,
      promptTokens: null,
      completionTokens: null,
      model: null,
    });
    await conversationStore.update(s.app.orgId, s.app.adminUserId, half.id, { title: 'half' });
    const { db } = await import('../../shared/platform/db/store');
    await db.patch(`ORG#${s.app.orgId}#CONVS#${s.app.adminUserId}`, `CONV#${half.id}`, {
      deletingAt: new Date().toISOString(),
    });
    expect((await s.call('GET', `/conversations/${half.id}`)).status).toBe(404);
    expect((await s.call('DELETE', `/conversations/${half.id}`)).status).toBe(200);
    expect(await conversationStore.messagesBetween(s.app.orgId, half.id, 1, 10)).toEqual([]);
  });

  it('requires the chat scope', async () => {
    const k = await s.call('POST', '/keys', { body: { name: 'usage only', scopes: ['usage'] } });
    const r = await s.call('GET', '/conversations', { key: k.body.data.key });
    expect(r.status).toBe(403);
  });
});
