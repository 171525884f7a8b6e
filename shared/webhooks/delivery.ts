import { OutboundFailed, OutboundRefused, sendOutbound } from '../outbound';
import { config } from '../platform/config';
import { encryption } from '../platform/encryption';
import { logger } from '../platform/logger';
import {
  type DeliveryMessage,
  enqueueAttempt,
  isRetryableStatus,
  MAX_ATTEMPTS,
  retryDelayMs,
} from './schedule';
import { secretContext, signedHeaders } from './signing';
import { type DeliveryRecord, type EndpointRecord, webhookStore } from './store';

/** Bytes of the receiver's answer that are read (the rest is discarded; only the status matters). */
const MAX_RESPONSE_BYTES = 4096;

/** The secrets that sign now: the current one, and the previous one during the 24 h after a rotation. */
export async function signingSecrets(endpoint: EndpointRecord, now = Date.now()): Promise<string[]> {
  const ctx = secretContext(endpoint.orgId, endpoint.id);
  const out = [await encryption().decrypt(endpoint.secretEnc, ctx)];
  if (
    endpoint.previousSecretEnc &&
    endpoint.previousSecretUntil &&
    Date.parse(endpoint.previousSecretUntil) > now
  )
    out.push(await encryption().decrypt(endpoint.previousSecretEnc, ctx));
  return out;
}

export interface AttemptResult {
  delivery: DeliveryRecord;
  success: boolean;
  error: string | null;
}

/**
 * Makes attempt `n` of a delivery: claims it (one conditional write, so two workers never both send
 * it), signs and POSTs the payload through the outbound module with the attempt timeout, and records
 * the outcome; when a retry is due, queues the next attempt. Returns undefined when the attempt was
 * not this caller's to make (already made, or the delivery is finished or gone).
 */
export async function attemptDelivery(
  endpoint: EndpointRecord,
  seq: number,
  n: number,
  opts: { maxAttempts?: number } = {},
): Promise<AttemptResult | undefined> {
  const cfg = config();
  const timeoutMs = cfg.LOUPE_WEBHOOK_TIMEOUT_MS;
  const start = Date.now();
  const claimed = await webhookStore.claimAttempt(
    endpoint.orgId,
    endpoint.id,
    seq,
    n,
    start,
    start + timeoutMs + 30_000,
  );
  if (!claimed) return undefined;
  const secrets = await signingSecrets(endpoint, start);
  const timestamp = Math.floor(start / 1000);
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'Loupe-Webhooks/1.0',
    ...signedHeaders(secrets, claimed.eventId, timestamp, claimed.payload),
  };
  let statusCode: number | null = null;
  let error: string | null = null;
  let retryable = false;
  let durationMs: number | null = null;
  try {
    const res = await sendOutbound({
      url: endpoint.url,
      method: 'POST',
      headers,
      body: claimed.payload,
      timeoutMs,
      maxResponseBytes: MAX_RESPONSE_BYTES,
    });
    statusCode = res.status;
    durationMs = Math.round(res.durationMs);
    if (res.status < 200 || res.status > 299) {
      retryable = isRetryableStatus(res.status);
      error = `The endpoint answered HTTP ${res.status}${retryable ? '' : ' (not retried)'}.`;
    }
  } catch (e) {
    durationMs = Date.now() - start;
    if (e instanceof OutboundRefused) error = `Refused before connecting: ${e.reason}`;
    else if (e instanceof OutboundFailed) error = `${e.kind}: ${e.message}`;
    else throw e; // not a delivery outcome: the message is retried by the queue once the claim's lease ends
    retryable = true; // network errors; a refusal may be a transient DNS answer, and no connection was made
  }
  const success = error === null;
  const last = n >= (opts.maxAttempts ?? MAX_ATTEMPTS);
  const nextAt = !success && retryable && !last ? Date.now() + retryDelayMs(n) : null;
  const updated = await webhookStore.completeAttempt(endpoint.orgId, endpoint.id, seq, n, {
    status: success ? 'SUCCESS' : nextAt ? 'PENDING' : 'FAILED',
    statusCode,
    deliveredAt: success ? new Date().toISOString() : null,
    nextAttemptAt: nextAt ? new Date(nextAt).toISOString() : null,
    error: error ? error.slice(0, 500) : null,
    durationMs,
  });
  if (!updated) return undefined; // the lease ran out and another worker took the attempt over
  if (nextAt)
    await enqueueAttempt({
      orgId: endpoint.orgId,
      endpointId: endpoint.id,
      seq,
      attempt: n + 1,
      notBefore: nextAt,
    });
  if (!success)
    logger().info('webhook delivery attempt failed', {
      orgId: endpoint.orgId,
      endpointId: endpoint.id,
      deliveryId: updated.id,
      attempt: n,
      statusCode,
      willRetry: nextAt !== null,
    });
  return { delivery: updated, success, error };
}

/** The delivery worker's work for one message (idempotent: a repeated message changes nothing twice). */
export async function handleDeliveryMessage(msg: DeliveryMessage): Promise<void> {
  const now = Date.now();
  if (msg.notBefore && msg.notBefore - now > 1000) {
    await enqueueAttempt(msg, now); // the next hop of a wait longer than one queue delay
    return;
  }
  const endpoint = await webhookStore.get(msg.orgId, msg.endpointId);
  if (!endpoint) return; // deleted with its log
  const d = await webhookStore.getDelivery(msg.orgId, msg.endpointId, msg.seq);
  if (d?.status !== 'PENDING') return;
  if (d.completed >= msg.attempt) {
    // This attempt's outcome is recorded; if the worker stopped before queueing the next one, queue it.
    if (d.completed === msg.attempt && d.attempts === msg.attempt && d.nextAttemptAt)
      await enqueueAttempt({ ...msg, attempt: msg.attempt + 1, notBefore: Date.parse(d.nextAttemptAt) });
    return;
  }
  if (!endpoint.isActive) {
    await webhookStore.abandon(msg.orgId, msg.endpointId, msg.seq, 'The endpoint was deactivated; not sent.');
    return;
  }
  await attemptDelivery(endpoint, msg.seq, msg.attempt);
}
