import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer } from '../support/server';

/**
 * DELETE consults credentialInUse (shared/workflows/credential-in-use.ts) and answers 409 IN_USE while it says
 * so. Workflow references arrive with issue 12, so the lookup is replaced here by a switch the test
 * controls, to prove the route asks it with the right organization and credential and obeys it.
 */
const inUse = vi.hoisted(() => ({ value: true, calls: [] as [string, string][] }));
vi.mock('../../shared/workflows/credential-in-use', () => ({
  credentialInUse: async (orgId: string, credentialId: string) => {
    inUse.calls.push([orgId, credentialId]);
    return inUse.value;
  },
}));

describe('deleting a credential that is in use', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('answers 409 IN_USE and keeps the credential; deletes once it is no longer used', async () => {
    const c = await s.call('POST', '/workflow-credentials', {
      body: {
        name: 'used',
        kind: 'BEARER',
        allowedHosts: ['hooks.example.com'],
        config: { token: 'tok-in-use' },
      },
    });
    expect(c.status, c.text).toBe(201);
    const id = c.body.data.id;
    inUse.value = true;
    const refused = await s.call('DELETE', `/workflow-credentials/${id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('IN_USE');
    expect(inUse.calls).toEqual([[s.app.orgId, id]]);
    expect((await s.call('GET', `/workflow-credentials/${id}`)).status).toBe(200);
    inUse.value = false;
    const del = await s.call('DELETE', `/workflow-credentials/${id}`);
    expect(del.status).toBe(200);
    expect(del.body.data).toEqual({ deleted: true });
    expect((await s.call('GET', `/workflow-credentials/${id}`)).status).toBe(404);
  });
});
