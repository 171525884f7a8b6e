import { db } from '../db/store';
import { newId } from '../ids';
import { EVENT_TYPES, type EventOutbox, type EventType, type OutboxEvent } from './port';

/** Outbox items expire (TTL, cleanup only) this long after they were recorded. */
export const EVENT_RETENTION_DAYS = 30;
/** Largest event `data`, as JSON, that fits comfortably in one DynamoDB item. */
export const MAX_EVENT_DATA_BYTES = 256 * 1024;

export type EventStatus = 'pending' | 'delivered' | 'failed';
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
        ttl: Math.floor(nowMs / 1000) + EVENT_RETENTION_DAYS * 86_400,
      },
      { ifAbsent: true },
    );
    return event;
  }
}

/** An organization's recorded events, oldest first unless `newestFirst`. */
export async function listEvents(
  orgId: string,
  opts: { limit?: number; newestFirst?: boolean } = {},
): Promise<StoredEvent[]> {
  const items = await db.query<StoredEvent & { pk: string; sk: string; ttl?: number }>({
    pk: eventsPk(orgId),
    prefix: 'EVT#',
    limit: opts.limit ?? 100,
    newestFirst: opts.newestFirst,
  });
  return items.map(({ pk: _pk, sk: _sk, ttl: _ttl, ...event }) => event);
}
