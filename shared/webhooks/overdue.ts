import { logger } from '../platform/logger';
import { enqueueAttempt, MAX_ATTEMPTS } from './schedule';
import { type DeliveryRecord, webhookStore } from './store';

/**
 * A pending delivery whose next attempt was due this long ago has lost its queue message: the message
 * was dead-lettered (SQS moves it after 5 receives, 120 s apart), or the worker stopped between
 * recording an outcome and queueing the next attempt. Longer than the queue's own retries, so the sweep
 * does not race them (a message it queues anyway changes nothing twice: attempts are claimed).
 */
export const OVERDUE_AFTER_MS = 15 * 60_000;
/** The sweep queues a delivery again at most this many times in a row without a recorded outcome. */
export const MAX_RECOVERIES = 3;
const OVERDUE_BATCH = 200;

export interface OverdueSweep {
  /** Deliveries queued again (their next attempt). */
  requeued: number;
  /** Deliveries ended FAILED (no attempt left to make). */
  failed: number;
  /** Delivery logs of deleted endpoints removed (a DELETE that stopped before its log was gone). */
  purged: number;
}

/** The attempt a stuck delivery needs: the one started without an outcome, else the next one. */
const nextAttempt = (d: DeliveryRecord) => (d.attempts > d.completed ? d.attempts : d.completed + 1);

/** Why a stuck delivery ends FAILED instead of being queued again, or undefined to queue it. */
function endReason(d: DeliveryRecord): string | undefined {
  if (d.event === 'webhook.test')
    return 'The test delivery did not complete; tests are sent once and not retried.';
  if (nextAttempt(d) > MAX_ATTEMPTS) return 'Every attempt was made; not retried.';
  if ((d.recoveries ?? 0) >= MAX_RECOVERIES)
    return `Attempt ${nextAttempt(d)} could not be made: it failed inside Loupe (not at the endpoint) repeatedly; not retried.`;
  return undefined;
}

/**
 * The periodic sweep of deliveries left PENDING past their due time (the `webhook-sweep` schedule, with
 * the sweep of pending events). One Query on the due index, longest overdue first. Each stuck delivery
 * is taken with one conditional write (still pending, due as read, no attempt holding it; it is then
 * due again now), so two sweeps never both queue it, and its next attempt is queued; the worker's
 * attempt claim keeps a late original message from sending twice. A delivery queued MAX_RECOVERIES times
 * in a row without an outcome, or a test delivery, ends FAILED instead.
 */
export async function recoverOverdueDeliveries(
  olderThanMs = OVERDUE_AFTER_MS,
  now = Date.now(),
): Promise<OverdueSweep> {
  const out: OverdueSweep = { requeued: 0, failed: 0, purged: 0 };
  const before = new Date(now - olderThanMs).toISOString();
  for (const { delivery: d, due } of await webhookStore.overdue(before, OVERDUE_BATCH)) {
    try {
      if (!(await webhookStore.get(d.orgId, d.endpointId))) {
        await webhookStore.purgeLog(d.orgId, d.endpointId);
        out.purged++;
        continue;
      }
      const reason = endReason(d);
      if (reason) {
        if (await webhookStore.failOverdue(d, due, now, reason)) out.failed++;
        continue;
      }
      const taken = await webhookStore.takeOverdue(d, due, now);
      if (!taken) continue;
      await enqueueAttempt({
        orgId: d.orgId,
        endpointId: d.endpointId,
        seq: d.seq,
        attempt: nextAttempt(taken),
      });
      out.requeued++;
    } catch (e) {
      logger().warn('webhook sweep: an overdue delivery was not recovered; the next sweep retries', {
        orgId: d.orgId,
        endpointId: d.endpointId,
        deliveryId: d.id,
        error: (e as Error)?.message,
      });
    }
  }
  if (out.requeued || out.failed || out.purged)
    logger().info('webhook sweep: overdue deliveries', { ...out });
  return out;
}
