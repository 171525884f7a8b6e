import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { checkHealth, fanOutHealthChecks, slotOf } from '../../shared/connections/health';
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
    expect(rec?.gsi1pk).toBe('ACTIVECONN');
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

  it('the slot is the scheduled time, or now rounded down to five minutes', () => {
    expect(slotOf('2030-01-01T00:05:00Z')).toBe('2030-01-01T00:05:00.000Z');
    expect(slotOf(undefined, Date.UTC(2030, 0, 1, 0, 7, 31))).toBe('2030-01-01T00:05:00.000Z');
    expect(slotOf('<aws.scheduler.scheduled-time>', Date.UTC(2030, 0, 1, 0, 12))).toBe(
      '2030-01-01T00:10:00.000Z',
    );
  });
});
