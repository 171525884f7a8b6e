import { db } from '../db/store';
import { newId } from '../ids';
import { logger } from '../logger';
import { queue } from '../queue';
import { EVENT_TYPES, type EventOutbox, type EventType, type OutboxEvent } from './port';

/** Outbox items expire (TTL, cleanup only) this long after they were recorded. */
export const EVENT_RETENTION_DAYS = 30;
/** Largest event `data`, as JSON, that fits comfortably in one DynamoDB item. */
export const MAX_EVENT_DATA_BYTES = 256 * 1024;

/**
 * `pending` until the webhook fan-out has created a delivery for every subscribed endpoint, then
 * `dispatched` (each delivery then has its own status in the endpoint's delivery log).
 */
export type EventStatus = 'pending' | 'dispatched' | 'delivered' | 'failed';

/** The queue worker that fans an event out to the organization's webhook endpoints. */
export const FANOUT_WORKER = 'webhook-fanout';
/** Sparse index of events not yet fanned out (the sweep re-fans those left behind). */
export const PENDING_EVENTS_GSI = 'EVENTS#PENDING';
/** The fan-out message: enough to read the event item with one GetItem. */
export interface FanoutMessage {
  orgId: string;
  eventId: string;
  createdAt: string;
}
export type StoredEvent = OutboxEvent & { status: EventStatus };

const eventsPk = (orgId: string) => `ORG#${orgId}#EVENTS`;
/** Sort key ordered by time: ISO timestamps of fixed width compare lexically. */
export const eventSk = (createdAt: string, id: string) => `EVT#${createdAt}#${id}`;

/**
 * The event outbox in the main table: one item per event in the organization's `ORG#<orgId>#EVENTS`
 * partition, time-ordered, status `pending` until the webhook-delivery capability handles it. The same
 * code runs in AWS and locally (it is just DynamoDB).
 */
export class DynamoOutbox implements EventOutbox {
  constructor(private readonly now: () => number = Date.now) {}

  async record(orgId: string, type: EventType, data: unknown): Promise<OutboxEvent> {
    if (typeof orgId !== 'string' || !orgId) throw new Error('An event needs the organization id.');
    if (!(EVENT_TYPES as readonly string[]).includes(type)) throw new Error(`Unknown event type "${type}".`);
    const json = JSON.stringify(data ?? null);
    if (json === undefined) throw new TypeError('Event data must be JSON-serializable.');
    if (Buffer.byteLength(json, 'utf8') > MAX_EVENT_DATA_BYTES)
      throw new RangeError(`Event data must be at most ${MAX_EVENT_DATA_BYTES} bytes of JSON.`);
    const nowMs = this.now();
    const event: OutboxEvent = {
      id: newId(),
      orgId,
      type,
      createdAt: new Date(nowMs).toISOString(),
      data: JSON.parse(json),
    };
    await db.put(
      {
        pk: eventsPk(orgId),
        sk: eventSk(event.createdAt, event.id),
        ...event,
        status: 'pending' satisfies EventStatus,
        gsi1pk: PENDING_EVENTS_GSI,
        gsi1sk: `${event.createdAt}#${orgId}#${event.id}`,
        ttl: Math.floor(nowMs / 1000) + EVENT_RETENTION_DAYS * 86_400,
      },
      { ifAbsent: true },
    );
    // The event is durable now; the fan-out message only makes delivery prompt. If sending it fails,
    // the periodic sweep (webhook-sweep) finds the event still pending and fans it out.
    const message: FanoutMessage = { orgId, eventId: event.id, createdAt: event.createdAt };
    await queue()
      .send(FANOUT_WORKER, message)
      .catch((e) =>
        logger().warn('queueing the webhook fan-out failed; the sweep will pick the event up', {
          eventId: event.id,
          error: (e as Error)?.message,
        }),
      );
    return event;
  }
}

/** One recorded event (with its status), or undefined when it does not exist (or expired). */
export async function getEvent(
  orgId: string,
  createdAt: string,
  id: string,
): Promise<StoredEvent | undefined> {
  const item = await db.get<
    StoredEvent & { pk: string; sk: string; ttl?: number; gsi1pk?: string; gsi1sk?: string }
  >(eventsPk(orgId), eventSk(createdAt, id));
  if (!item || item.orgId !== orgId || item.id !== id) return undefined;
  const { pk: _pk, sk: _sk, ttl: _ttl, gsi1pk: _g1, gsi1sk: _g2, ...event } = item;
  return event;
}

/** Marks a pending event fanned out and takes it out of the pending index (one conditional write). */
export async function markDispatched(orgId: string, createdAt: string, id: string, deliveries: number) {
  await db.update({
    pk: eventsPk(orgId),
    sk: eventSk(createdAt, id),
    update: 'SET #s = :dispatched, dispatchedAt = :at, deliveries = :n REMOVE gsi1pk, gsi1sk',
    condition: 'attribute_exists(pk) AND #s = :pending',
    names: { '#s': 'status' },
    values: {
      ':dispatched': 'dispatched',
      ':pending': 'pending',
      ':at': new Date().toISOString(),
      ':n': deliveries,
    },
  });
}

/** Events of every organization still pending that were recorded before `beforeIso`, oldest first. */
export async function pendingEventsBefore(beforeIso: string, limit: number): Promise<FanoutMessage[]> {
  const items = await db.query<{ orgId: string; id: string; createdAt: string }>({
    pk: PENDING_EVENTS_GSI,
    index: 'gsi1',
    between: ['0', `${beforeIso}#~`],
    limit,
  });
  return items.map((i) => ({ orgId: i.orgId, eventId: i.id, createdAt: i.createdAt }));
}

/** An organization's recorded events, oldest first unless `newestFirst`. */
export async function listEvents(
  orgId: string,
  opts: { limit?: number; newestFirst?: boolean } = {},
): Promise<StoredEvent[]> {
  const items = await db.query<
    StoredEvent & { pk: string; sk: string; ttl?: number; gsi1pk?: string; gsi1sk?: string }
  >({
    pk: eventsPk(orgId),
    prefix: 'EVT#',
    limit: opts.limit ?? 100,
    newestFirst: opts.newestFirst,
  });
  return items.map(({ pk: _pk, sk: _sk, ttl: _ttl, gsi1pk: _g1, gsi1sk: _g2, ...event }) => event);
}
