import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createConnection, postgresConnection } from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';

const suffix = randomBytes(4).toString('hex');

/**
 * One ownership rule (issue 45, point 7): a workflow, like a dashboard or a saved query, is changed,
 * published, deactivated or deleted only by its creator and admins. Another member who sees it gets 403
 * FORBIDDEN (and the workflow, read back, is unchanged); it may still read, preview and run it.
 */
describe('who may change a workflow', () => {
  let s: TestServer;
  let conn: string;
  let adminId: string;
  const info = inject('postgres');

  beforeAll(async () => {
    s = await startTestServer();
    conn = await createConnection(s, postgresConnection(info, { name: `owners-${suffix}` }));
    adminId = (await s.call('GET', '/')).body.data.userId;
  });
  afterAll(() => s?.stop());

  const addMember = async (tag: string) => {
    const m = await s.call('POST', '/members', {
      body: { email: `owner-${tag}-${suffix}@x.example`, name: tag, role: 'member', connectionIds: [conn] },
    });
    expect(m.status, m.text).toBe(201);
    const k = await s.call('POST', `/members/${m.body.data.id}/keys`, { body: { name: 'k' } });
    expect(k.status, k.text).toBe(201);
    return { id: m.body.data.id as string, key: k.body.data.key as string };
  };

  const create = async (name: string, key?: string) => {
    const r = await s.call('POST', '/workflows', {
      key,
      body: {
        name: `${name} ${suffix}`,
        triggerType: 'MANUAL',
        connectionId: conn,
        steps: [{ query: 'SELECT 1 AS one LIMIT 1', stopIfEmpty: true }],
      },
    });
    expect(r.status, r.text).toBe(201);
    return r.body.data;
  };

  /** PATCH isActive true, acknowledging whatever warnings the first attempt names. */
  const publish = async (id: string, key?: string) => {
    const first = await s.call('PATCH', `/workflows/${id}`, { key, body: { isActive: true } });
    if (first.status !== 422) return first;
    return s.call('PATCH', `/workflows/${id}`, {
      key,
      body: { isActive: true, acknowledgedWarnings: first.body.error.details.warnings },
    });
  };

  const read = async (id: string) => {
    const r = await s.call('GET', `/workflows/${id}`);
    expect(r.status, r.text).toBe(200);
    return r.body.data;
  };

  const expectForbidden = (r: { status: number; text: string; body: any }) => {
    expect(r.status, r.text).toBe(403);
    expect(r.body.data).toBeNull();
    expect(r.body.error.code).toBe('FORBIDDEN');
    expect(r.body.error.message).toBe('Only the creator of this workflow or an admin can change it.');
  };

  it("a member's PATCH, publish, deactivate and DELETE of an admin's workflow answer 403; nothing changes", async () => {
    const member = await addMember('m1');
    const w = await create('admin owned');
    expect(w.createdBy).toBe(adminId);
    const published = await publish(w.id);
    expect(published.status, published.text).toBe(200);
    const before = await read(w.id);
    expect(before.isActive).toBe(true);

    // The member sees it, with its creator.
    const seen = await s.call('GET', `/workflows/${w.id}`, { key: member.key });
    expect(seen.status, seen.text).toBe(200);
    expect(seen.body.data.createdBy).toBe(adminId);
    const listed = await s.call('GET', '/workflows', { key: member.key });
    expect(listed.body.data.find((x: { id: string }) => x.id === w.id)?.createdBy).toBe(adminId);

    // A draft change (right revision), a change without a revision, publish, deactivate, delete.
    expectForbidden(
      await s.call('PATCH', `/workflows/${w.id}`, {
        key: member.key,
        body: { expectedDraftRevision: before.draftRevision, name: `taken over ${suffix}` },
      }),
    );
    expectForbidden(
      await s.call('PATCH', `/workflows/${w.id}`, { key: member.key, body: { name: 'no revision' } }),
    );
    expectForbidden(
      await s.call('PATCH', `/workflows/${w.id}`, {
        key: member.key,
        body: {
          expectedDraftRevision: before.draftRevision,
          steps: [{ query: 'SELECT 2 AS two LIMIT 1' }],
        },
      }),
    );
    expectForbidden(
      await s.call('PATCH', `/workflows/${w.id}`, { key: member.key, body: { isActive: true } }),
    );
    expectForbidden(
      await s.call('PATCH', `/workflows/${w.id}`, {
        key: member.key,
        body: { isActive: true, acknowledgedWarnings: [] },
      }),
    );
    expectForbidden(
      await s.call('PATCH', `/workflows/${w.id}`, { key: member.key, body: { isActive: false } }),
    );
    expectForbidden(await s.call('DELETE', `/workflows/${w.id}`, { key: member.key }));

    // Read back: exactly as it was (still active, same draft, version, publisher's schedule).
    expect(await read(w.id)).toEqual(before);

    // Reading, previewing and running it stay open to the member (the interface's run and preview).
    const preview = await s.call('POST', `/workflows/${w.id}/preview`, { key: member.key });
    expect(preview.status, preview.text).toBe(200);
    const run = await s.call('POST', `/workflows/${w.id}/run`, { key: member.key });
    expect(run.status, run.text).toBe(201);
    expect(run.body.data.status).toBe('SUCCESS');
    expect((await s.call('GET', `/workflows/${w.id}/runs`, { key: member.key })).status).toBe(200);
    expect(await read(w.id)).toMatchObject({
      name: before.name,
      draftRevision: before.draftRevision,
      isActive: true,
      publishedVersion: before.publishedVersion,
      updatedAt: before.updatedAt,
    });
  });

  it('a member changes, publishes, deactivates and deletes its own workflow; another member may not', async () => {
    const owner = await addMember('m2');
    const other = await addMember('m3');
    const w = await create('member owned', owner.key);
    expect(w.createdBy).toBe(owner.id);

    const renamed = await s.call('PATCH', `/workflows/${w.id}`, {
      key: owner.key,
      body: { expectedDraftRevision: 1, name: `renamed by owner ${suffix}` },
    });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.data.draftRevision).toBe(2);

    expectForbidden(
      await s.call('PATCH', `/workflows/${w.id}`, {
        key: other.key,
        body: { expectedDraftRevision: 2, name: 'by another member' },
      }),
    );
    expectForbidden(await s.call('DELETE', `/workflows/${w.id}`, { key: other.key }));

    const published = await publish(w.id, owner.key);
    expect(published.status, published.text).toBe(200);
    expect(published.body.data).toMatchObject({ isActive: true, publishedVersion: 1 });
    expectForbidden(
      await s.call('PATCH', `/workflows/${w.id}`, { key: other.key, body: { isActive: false } }),
    );
    const off = await s.call('PATCH', `/workflows/${w.id}`, { key: owner.key, body: { isActive: false } });
    expect(off.status, off.text).toBe(200);
    expect(off.body.data.isActive).toBe(false);

    expect((await s.call('DELETE', `/workflows/${w.id}`, { key: owner.key })).body.data).toEqual({
      deleted: true,
    });
    expect((await s.call('GET', `/workflows/${w.id}`)).status).toBe(404);
  });

  it("an admin changes, publishes, deactivates and deletes a member's workflow", async () => {
    const owner = await addMember('m4');
    const w = await create('member owned, admin edits', owner.key);

    const renamed = await s.call('PATCH', `/workflows/${w.id}`, {
      body: { expectedDraftRevision: 1, name: `renamed by admin ${suffix}` },
    });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.data).toMatchObject({ name: `renamed by admin ${suffix}`, createdBy: owner.id });

    const published = await publish(w.id);
    expect(published.status, published.text).toBe(200);
    expect(published.body.data.isActive).toBe(true);
    const off = await s.call('PATCH', `/workflows/${w.id}`, { body: { isActive: false } });
    expect(off.status, off.text).toBe(200);
    expect(off.body.data.isActive).toBe(false);
    // The creator stays the creator: the member may still change it.
    const again = await s.call('PATCH', `/workflows/${w.id}`, {
      key: owner.key,
      body: { expectedDraftRevision: 2, description: 'still mine' },
    });
    expect(again.status, again.text).toBe(200);

    expect((await s.call('DELETE', `/workflows/${w.id}`)).status).toBe(200);
    expect((await s.call('GET', `/workflows/${w.id}`, { key: owner.key })).status).toBe(404);
  });
});
