import { describe, expect, it } from 'vitest';
import { db } from '../../shared/platform/db/store';
import {
  FANOUT_WORKER,
  getEvent,
  listEvents,
  markDispatched,
  outbox,
  pendingEventsBefore,
} from '../../shared/platform/events';
import { DynamoOutbox, EVENT_RETENTION_DAYS, eventSk } from '../../shared/platform/events/outbox';
import { newId } from '../../shared/platform/ids';
import { LocalQueue } from '../../shared/platform/queue/local';
import { useTestStore } from '../support/store';

useTestStore('outbox');

describe('event outbox', () => {
  it('records an event as pending in the organization events partition, with a cleanup TTL', async () => {
    const orgId = newId();
    const at = Date.parse('2026-05-01T10:00:00Z');
    const event = await new DynamoOutbox(() => at).record(orgId, 'schema.updated', {
      connectionId: 'c1',
      tables: 3,
    });
    expect(event).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      orgId,
      type: 'schema.updated',
      createdAt: '2026-05-01T10:00:00.000Z',
      data: { connectionId: 'c1', tables: 3 },
    });
    const item = await db.get(`ORG#${orgId}#EVENTS`, eventSk(event.createdAt, event.id));
    expect(item).toMatchObject({ status: 'pending', type: 'schema.updated', orgId });
    expect(item?.ttl).toBe(at / 1000 + EVENT_RETENTION_DAYS * 86_400);
    expect(await listEvents(orgId)).toEqual([{ ...event, status: 'pending' }]);
  });

  it('lists events in time order (or newest first), limited, and only for their organization', async () => {
    const orgId = newId();
    const other = newId();
    let clock = Date.parse('2026-05-01T00:00:00Z');
    const ob = new DynamoOutbox(() => clock);
    const recorded = [];
    for (const type of ['query.approval.requested', 'query.approved', 'workflow.run.completed'] as const) {
      recorded.push(await ob.record(orgId, type, { n: recorded.length }));
      clock += 1000;
    }
    await ob.record(other, 'webhook.test', {});
    expect((await listEvents(orgId)).map((e) => e.type)).toEqual([
      'query.approval.requested',
      'query.approved',
      'workflow.run.completed',
    ]);
    expect((await listEvents(orgId, { newestFirst: true, limit: 2 })).map((e) => e.id)).toEqual([
      recorded[2].id,
      recorded[1].id,
    ]);
    expect((await listEvents(other)).map((e) => e.type)).toEqual(['webhook.test']);
    expect(await listEvents(newId())).toEqual([]);
  });

  it('outbox() records through the same table', async () => {
    const orgId = newId();
    const e = await outbox().record(orgId, 'connection.health.degraded', { connectionId: 'c9' });
    expect((await listEvents(orgId)).map((x) => x.id)).toEqual([e.id]);
  });

  it('rejects an unknown event type, data that is not JSON, and data over the size limit', async () => {
    const orgId = newId();
    const ob = new DynamoOutbox();
    await expect(ob.record(orgId, 'made.up' as never, {})).rejects.toThrow(/Unknown event type "made.up"/);
    await expect(ob.record(orgId, 'webhook.test', { n: 1n })).rejects.toThrow(TypeError);
    await expect(ob.record(orgId, 'webhook.test', { big: 'x'.repeat(300 * 1024) })).rejects.toThrow(
      /at most/,
    );
    await expect(ob.record('', 'webhook.test', {})).rejects.toThrow(/organization id/);
    expect(await listEvents(orgId)).toEqual([]);
  });

  it('queues a fan-out message per event and keeps it in the pending index until it is dispatched', async () => {
    const orgId = newId();
    const e = await outbox().record(orgId, 'query.approved', { approvalId: 'a' });
    const q = new LocalQueue();
    const messages = (await q.pending(FANOUT_WORKER)).map((m) => JSON.parse(m.body));
    expect(messages).toContainEqual({ orgId, eventId: e.id, createdAt: e.createdAt });
    const later = new Date(Date.parse(e.createdAt) + 1).toISOString();
    expect(await pendingEventsBefore(later, 1000)).toContainEqual({
      orgId,
      eventId: e.id,
      createdAt: e.createdAt,
    });
    expect(await pendingEventsBefore(e.createdAt.replace(/Z$/, ''), 1000)).not.toContainEqual(
      expect.objectContaining({ eventId: e.id }),
    );
    await markDispatched(orgId, e.createdAt, e.id, 2);
    expect(await getEvent(orgId, e.createdAt, e.id)).toMatchObject({ status: 'dispatched', deliveries: 2 });
    expect(await pendingEventsBefore(later, 1000)).not.toContainEqual(
      expect.objectContaining({ eventId: e.id }),
    );
    // A second dispatch is a no-op (the condition needs a pending event).
    await markDispatched(orgId, e.createdAt, e.id, 5);
    expect(await getEvent(orgId, e.createdAt, e.id)).toMatchObject({ deliveries: 2 });
    expect(await getEvent(newId(), e.createdAt, e.id)).toBeUndefined();
  });
});
