import * as z from 'zod/mini';
import type { OutboxEvent } from '../platform/events';
import { getEvent, markDispatched, pendingEventsBefore } from '../platform/events';
import { newId } from '../platform/ids';
import { logger } from '../platform/logger';
import { enqueueAttempt } from './schedule';
import { type DeliveryRecord, type EndpointRecord, webhookStore } from './store';

export const FanoutMessage = z.object({
  orgId: z.string().check(z.minLength(1), z.maxLength(200)),
  eventId: z.string().check(z.minLength(1), z.maxLength(200)),
  createdAt: z.string().check(z.minLength(1), z.maxLength(40)),
});

/** The body every endpoint receives for an event (signed as is). */
export const payloadOf = (e: OutboxEvent) =>
  JSON.stringify({ id: e.id, type: e.type, createdAt: e.createdAt, orgId: e.orgId, data: e.data });

export const subscribes = (endpoint: EndpointRecord, type: string) =>
  endpoint.isActive && (endpoint.events.includes('*') || endpoint.events.includes(type));

/**
 * The delivery of `event` to `endpoint`, created at most once: a guard item per (event, endpoint) is
 * claimed with a conditional put, the endpoint's next delivery number is taken with one atomic ADD,
 * and the delivery is written with a conditional put at that number. Repeating it (a re-sent fan-out
 * message, the sweep) finds the guard and the delivery and creates nothing new; `queue` then queues
 * the first attempt again only while no attempt was started (the attempt claim makes a duplicate
 * message harmless). Undefined when the endpoint was deleted meanwhile.
 */
export async function ensureDelivery(
  endpoint: EndpointRecord,
  event: OutboxEvent,
  opts: { queue: boolean },
): Promise<DeliveryRecord | undefined> {
  const { orgId } = endpoint;
  const guard = await webhookStore.claimGuard(orgId, endpoint.id, event.id, newId());
  let seq = guard.seq;
  if (seq === undefined) {
    const taken = await webhookStore.nextSeq(orgId, endpoint.id);
    if (taken === undefined) return undefined;
    seq = await webhookStore.setGuardSeq(orgId, endpoint.id, event.id, taken);
  }
  const fresh: DeliveryRecord = {
    id: guard.deliveryId,
    orgId,
    endpointId: endpoint.id,
    seq,
    eventId: event.id,
    event: event.type,
    payload: payloadOf(event),
    status: 'PENDING',
    statusCode: null,
    attempts: 0,
    completed: 0,
    leaseUntil: 0,
    deliveredAt: null,
    lastAttemptAt: null,
    nextAttemptAt: null,
    error: null,
    durationMs: null,
    createdAt: new Date().toISOString(),
  };
  const created = await webhookStore.putDelivery(fresh);
  const delivery = created ? fresh : await webhookStore.getDelivery(orgId, endpoint.id, seq);
  if (!delivery) return undefined;
  if (opts.queue && delivery.status === 'PENDING' && delivery.attempts === 0)
    await enqueueAttempt({ orgId, endpointId: endpoint.id, seq, attempt: 1 });
  return delivery;
}

/**
 * Fans one recorded event out: one delivery per active endpoint of its organization subscribed to
 * its type (or `*`), each queued; then marks the event dispatched. Idempotent; an event that is not
 * pending (already dispatched, or expired) is left alone. Returns the number of deliveries.
 */
export async function fanOutEvent(msg: z.infer<typeof FanoutMessage>): Promise<number> {
  const event = await getEvent(msg.orgId, msg.createdAt, msg.eventId);
  if (event?.status !== 'pending') return 0;
  const endpoints = (await webhookStore.list(msg.orgId)).filter((e) => subscribes(e, event.type));
  const made = await Promise.all(endpoints.map((e) => ensureDelivery(e, event, { queue: true })));
  const count = made.filter(Boolean).length;
  await markDispatched(msg.orgId, msg.createdAt, msg.eventId, count);
  return count;
}

/** Events left pending this long are fanned out by the sweep (the fan-out message was lost or failed). */
export const SWEEP_AFTER_MS = 2 * 60_000;
const SWEEP_BATCH = 200;

/**
 * The periodic sweep: fans out events still pending `olderThanMs` after they were recorded, so that
 * no recorded event is lost when its fan-out message was never sent (a crash right after the outbox
 * write) or was dead-lettered. One Query on the sparse pending-events index.
 */
export async function sweepPendingEvents(olderThanMs = SWEEP_AFTER_MS, now = Date.now()): Promise<number> {
  const before = new Date(now - olderThanMs).toISOString();
  const pending = await pendingEventsBefore(before, SWEEP_BATCH);
  let swept = 0;
  for (const m of pending) {
    try {
      await fanOutEvent(m);
      swept++;
    } catch (e) {
      logger().warn('webhook sweep: fan-out failed; next sweep retries', {
        eventId: m.eventId,
        error: (e as Error)?.message,
      });
    }
  }
  return swept;
}
