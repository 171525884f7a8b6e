import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { checkHealth, fanOutHealthChecks, slotOf } from '../../shared/connections/health';
import { connectionStore } from '../../shared/connections/store';
import { db } from '../../shared/platform/db/store';
import { listEvents } from '../../shared/platform/events';
import { freePort } from '../support/databases';
import { startTestServer, type TestServer } from '../support/server';

const slot = (minute: number) => new Date(Date.UTC(2030, 0, 1, 0, minute)).toISOString();

describe('health checks', () => {
  let s: TestServer;
  let closedPort: number;
  const pg = inject('postgres');
  beforeAll(async () => {
    s = await startTestServer();
    closedPort = await freePort();
  });
  afterAll(() => s.stop());

  const create = async (port: number, name = 'health') => {
    const r = await s.call('POST', '/connections', {
      body: {
        name,
        type: 'POSTGRES',
        host: '127.0.0.1',
        port,
        database: pg.database,
        username: pg.user,
        password: pg.password,
      },
    });
    expect(r.status, r.text).toBe(201);
    return r.body.data.id as string;
  };
  const item = (id: string) => db.get(`ORG#${s.app.orgId}`, `CONN#${id}`);
  const events = async (id: string, type: string) =>
    (await listEvents(s.app.orgId)).filter(
      (e) => e.type === type && (e.data as { connectionId: string }).connectionId === id,
    );
  const check = (id: string, minute: number) =>
    checkHealth({ orgId: s.app.orgId, connectionId: id, slot: slot(minute) });

  it('three consecutive failures deactivate the connection, store the diagnosis and record the event once', async () => {
    const id = await create(closedPort, 'down');
    expect(await check(id, 5)).toBe('failed');
    expect(await check(id, 10)).toBe('failed');
    let rec = await item(id);
    expect(rec?.isActive).toBe(true);
    expect(rec?.healthFailures).toBe(2);
    expect(rec?.lastError).toEqual(expect.any(String));
    expect(await events(id, 'connection.health.degraded')).toHaveLength(0);
    expect(await check(id, 15)).toBe('degraded');
    rec = await item(id);
    expect(rec?.isActive).toBe(false);
    expect(rec?.deactivatedBy).toBe('health');
    const view = (await s.call('GET', `/connections/${id}`)).body.data;
    expect(view.isActive).toBe(false);
    expect(view.lastErrorDiagnosis.stage).toBe('CONNECT');
    expect(view.lastErrorDiagnosis.fixSteps.join(' ')).toContain('127.0.0.1');
    const degraded = await events(id, 'connection.health.degraded');
    expect(degraded).toHaveLength(1);
    expect(degraded[0].data).toMatchObject({ connectionId: id, consecutiveFailures: 3, name: 'down' });
    expect(JSON.stringify(degraded[0].data)).not.toContain(pg.password);
    // Still failing: counted, no second event.
    expect(await check(id, 20)).toBe('failed');
    expect(await events(id, 'connection.health.degraded')).toHaveLength(1);
  });

  it('a repeated message for the same slot changes nothing', async () => {
    const id = await create(closedPort, 'repeat');
    expect(await check(id, 5)).toBe('failed');
    expect(await check(id, 5)).toBe('repeat');
    expect(await check(id, 4)).toBe('repeat');
    expect((await item(id))?.healthFailures).toBe(1);
  });

  it('a success resets the count; after a health deactivation it reactivates and records recovery', async () => {
    const id = await create(closedPort, 'flaky');
    await check(id, 5);
    await check(id, 10);
    expect(await check(id, 15)).toBe('degraded');
    // Fix the settings (the connection stays deactivated by health checks), then the next check recovers it.
    const fixed = await s.call('PATCH', `/connections/${id}`, { body: { port: pg.port } });
    expect(fixed.body.data.isActive).toBe(false);
    expect(await check(id, 20)).toBe('recovered');
    const rec = await item(id);
    expect(rec).toMatchObject({ isActive: true, deactivatedBy: null, healthFailures: 0, lastError: null });
    expect(await db.get(`ORG#${s.app.orgId}#CONN#${id}`, 'HEALTH')).toMatchObject({ gsi1pk: 'ACTIVECONN' });
    expect(await events(id, 'connection.health.recovered')).toHaveLength(1);
    expect(await check(id, 25)).toBe('healthy');
    expect(await events(id, 'connection.health.recovered')).toHaveLength(1);
  });

  it('a success on an active connection only resets the count', async () => {
    const id = await create(closedPort, 'blip');
    await check(id, 5);
    await check(id, 10);
    await s.call('PATCH', `/connections/${id}`, { body: { port: pg.port } });
    expect(await check(id, 15)).toBe('healthy');
    expect((await item(id))?.healthFailures).toBe(0);
    expect(await events(id, 'connection.health.recovered')).toHaveLength(0);
  });

  it('connections an admin deactivated are not checked, and a manual test failure takes them out of checks', async () => {
    const id = await create(pg.port, 'paused');
    await s.call('PATCH', `/connections/${id}`, { body: { isActive: false } });
    expect(await check(id, 5)).toBe('not-checked');
    expect((await item(id))?.gsi1pk).toBeUndefined();
    const broken = await create(closedPort, 'manual');
    expect((await s.call('POST', `/connections/${broken}/test`)).status).toBe(422);
    const rec = await item(broken);
    expect(rec).toMatchObject({ isActive: false, deactivatedBy: 'test' });
    expect(rec?.gsi1pk).toBeUndefined();
  });

  it('the fan-out queues one check per checked connection and the health-check worker applies it', async () => {
    const id = await create(closedPort, 'fanned');
    const at = slotOf(new Date().toISOString());
    const queued = await fanOutHealthChecks(at);
    expect(queued).toBeGreaterThanOrEqual(1);
    const deadline = Date.now() + 45_000;
    while (Date.now() < deadline && (await item(id))?.lastHealthSlot !== at)
      await new Promise((ok) => setTimeout(ok, 200));
    const rec = await item(id);
    expect(rec?.lastHealthSlot).toBe(at);
    expect(rec?.healthFailures).toBe(1);
  });

  it("a read never writes the health-check index: a connection's entry is an item of its own", async () => {
    const id = await create(pg.port, 'indexed once');
    const indexed = async () =>
      (await db.query({ pk: 'ACTIVECONN', index: 'gsi1' })).filter((x) => x.id === id);
    const before = await indexed();
    expect(before).toEqual([
      expect.objectContaining({
        pk: `ORG#${s.app.orgId}#CONN#${id}`,
        sk: 'HEALTH',
        kind: 'connection-health',
      }),
    ]);
    for (let i = 0; i < 3; i++) {
      const r = await s.call('POST', `/connections/${id}/query`, { body: { sql: 'SELECT 1' } });
      expect(r.status, r.text).toBe(200);
    }
    const conn = await item(id);
    expect(conn?.querySeq).toBe(3);
    expect(conn?.gsi1pk).toBeUndefined();
    expect(await indexed()).toEqual(before); // the entry as it was: nothing a read changes is in the index
  });

  it('a connection stored with the index keys on its item (before health entries) is moved by the next listing', async () => {
    const id = await create(closedPort, 'legacy');
    const entryKey = [`ORG#${s.app.orgId}#CONN#${id}`, 'HEALTH'] as const;
    await db.delete(...entryKey);
    await db.patch(`ORG#${s.app.orgId}`, `CONN#${id}`, {
      gsi1pk: 'ACTIVECONN',
      gsi1sk: `ORG#${s.app.orgId}#CONN#${id}`,
    });
    const listed = (await connectionStore.listHealthChecked()).filter((t) => t.id === id);
    expect(listed).toEqual([{ orgId: s.app.orgId, id }]);
    expect(await db.get(...entryKey)).toMatchObject({ gsi1pk: 'ACTIVECONN', orgId: s.app.orgId, id });
    expect((await item(id))?.gsi1pk).toBeUndefined();
    // Listed once more, from its entry alone.
    expect((await connectionStore.listHealthChecked()).filter((t) => t.id === id)).toEqual([
      { orgId: s.app.orgId, id },
    ]);
    expect(await check(id, 5)).toBe('failed');
  });

  it('moves many stored connections in one listing (more than it moves at once)', async () => {
    const org = `legacy-org-${Date.now()}`;
    const ids = Array.from({ length: 60 }, (_, n) => `legacy${n}`);
    for (const id of ids)
      await db.put({
        pk: `ORG#${org}`,
        sk: `CONN#${id}`,
        kind: 'connection',
        orgId: org,
        id,
        isActive: true,
        gsi1pk: 'ACTIVECONN',
        gsi1sk: `ORG#${org}#CONN#${id}`,
      });
    const listed = (await connectionStore.listHealthChecked()).filter((t) => t.orgId === org);
    expect(listed.map((t) => t.id).sort()).toEqual([...ids].sort());
    for (const id of ids) {
      expect((await db.get(`ORG#${org}`, `CONN#${id}`))?.gsi1pk, id).toBeUndefined();
      expect(await db.get(`ORG#${org}#CONN#${id}`, 'HEALTH'), id).toMatchObject({ orgId: org, id });
    }
    const again = (await db.query({ pk: 'ACTIVECONN', index: 'gsi1' })).filter((x) => x.orgId === org);
    expect(again).toHaveLength(60);
    expect(again.every((x) => x.kind === 'connection-health')).toBe(true);
    // Not real connections: gone again before any fan-out could queue checks of them.
    for (const id of ids) {
      await db.delete(`ORG#${org}`, `CONN#${id}`);
      await db.delete(`ORG#${org}#CONN#${id}`, 'HEALTH');
    }
  });

  it('a connection a user deactivated keeps its entry: listed, and its check pings nothing and writes nothing', async () => {
    const id = await create(closedPort, 'listed but paused');
    await s.call('PATCH', `/connections/${id}`, { body: { isActive: false } });
    expect((await connectionStore.listHealthChecked()).some((t) => t.id === id)).toBe(true);
    const before = await item(id);
    expect(await check(id, 5)).toBe('not-checked');
    expect(await item(id)).toEqual(before);
    // Activated again: checked again (its entry was kept, and is written again before the change).
    await s.call('PATCH', `/connections/${id}`, { body: { isActive: true } });
    expect(await check(id, 10)).toBe('failed');
  });

  it('the slot is the scheduled time, or now rounded down to five minutes', () => {
    expect(slotOf('2030-01-01T00:05:00Z')).toBe('2030-01-01T00:05:00.000Z');
    expect(slotOf(undefined, Date.UTC(2030, 0, 1, 0, 7, 31))).toBe('2030-01-01T00:05:00.000Z');
    expect(slotOf('<aws.scheduler.scheduled-time>', Date.UTC(2030, 0, 1, 0, 12))).toBe(
      '2030-01-01T00:10:00.000Z',
    );
  });
});
