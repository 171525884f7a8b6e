import { OutboundFailed, OutboundRefused, sendOutbound } from '../outbound';
import { config } from '../platform/config';
import { DecryptionFailed, encryption } from '../platform/encryption';
import { logger } from '../platform/logger';
import { count } from '../platform/measures';
import {
  type DeliveryMessage,
  enqueueAttempt,
  isRetryableStatus,
  MAX_ATTEMPTS,
  retryDelayMs,
} from './schedule';
import { SECRET_PREFIX, secretContext, signedHeaders } from './signing';
import { type DeliveryRecord, type EndpointRecord, webhookStore } from './store';

/** Bytes of the receiver's answer that are read (the rest is discarded; only the status matters). */
const MAX_RESPONSE_BYTES = 4096;

/** The error of a delivery that cannot be signed (it names no part of the secret or its ciphertext). */
export const UNSIGNABLE_ERROR =
  "Not sent: the endpoint's signing secret cannot be decrypted, so the event cannot be signed (not retried). " +
  'Rotate the secret (PATCH the endpoint with rotateSecret: true) to deliver later events.';

/**
 * Decrypts a stored signing secret. Undefined, with a warning that carries neither the secret nor its
 * ciphertext, when it will never decrypt (DecryptionFailed) or is not a `whsec_` secret; any other
 * failure (the key service unreachable or throttling) is thrown, for the queue to try again.
 */
export async function openSecret(
  endpoint: EndpointRecord,
  ciphertext: string,
  which: 'current' | 'previous',
): Promise<string | undefined> {
  let reason: string;
  try {
    const secret = await encryption().decrypt(ciphertext, secretContext(endpoint.orgId, endpoint.id));
    if (secret.startsWith(SECRET_PREFIX)) return secret;
    reason = 'not a webhook secret';
  } catch (e) {
    if (!(e instanceof DecryptionFailed)) throw e;
    reason = e.message;
  }
  logger().warn('webhook signing secret cannot be used', {
    orgId: endpoint.orgId,
    endpointId: endpoint.id,
    secret: which,
    reason,
  });
  return undefined;
}

/**
 * The secrets that sign now: the current one, and the previous one during the 24 h after a rotation
 * (left out when it cannot be used). Undefined when the current one cannot be used.
 */
export async function signingSecrets(
  endpoint: EndpointRecord,
  now = Date.now(),
): Promise<string[] | undefined> {
  const current = await openSecret(endpoint, endpoint.secretEnc, 'current');
  if (current === undefined) return undefined;
  if (
    endpoint.previousSecretEnc &&
    endpoint.previousSecretUntil &&
    Date.parse(endpoint.previousSecretUntil) > now
  ) {
    const previous = await openSecret(endpoint, endpoint.previousSecretEnc, 'previous');
    if (previous !== undefined) return [current, previous];
  }
  return [current];
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
  opts: { maxAttempts?: number; timeoutMs?: number } = {},
): Promise<AttemptResult | undefined> {
  const cfg = config();
  // A caller waiting on the attempt (the endpoint test) may give it less time than the setting.
  const timeoutMs = Math.min(cfg.LOUPE_WEBHOOK_TIMEOUT_MS, opts.timeoutMs ?? Number.POSITIVE_INFINITY);
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
  let updated: DeliveryRecord | undefined;
  let success: boolean;
  let error: string | null;
  let nextAt: number | null;
  try {
    const sent = await send(endpoint, claimed, start, timeoutMs);
    ({ error } = sent);
    success = error === null;
    const last = n >= (opts.maxAttempts ?? MAX_ATTEMPTS);
    nextAt = !success && sent.retryable && !last ? Date.now() + retryDelayMs(n) : null;
    updated = await webhookStore.completeAttempt(endpoint.orgId, endpoint.id, seq, n, {
      status: success ? 'SUCCESS' : nextAt ? 'PENDING' : 'FAILED',
      statusCode: sent.statusCode,
      deliveredAt: success ? new Date().toISOString() : null,
      nextAttemptAt: nextAt ? new Date(nextAt).toISOString() : null,
      error: error ? error.slice(0, 500) : null,
      durationMs: sent.durationMs,
    });
  } catch (e) {
    // Not a delivery outcome (the key service or the store failing): free the claim so that the queue's
    // redelivery of this message can make the attempt again at once, then let the queue retry it.
    await webhookStore.releaseAttempt(endpoint.orgId, endpoint.id, seq, n).catch(() => undefined);
    throw e;
  }
  if (!updated) return undefined; // the lease ran out and another worker took the attempt over
  count('webhookDeliveries', { outcome: success ? 'delivered' : nextAt ? 'retrying' : 'failed' });
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
      statusCode: updated.statusCode,
      willRetry: nextAt !== null,
    });
  return { delivery: updated, success, error };
}

/**
 * Signs and sends one attempt; the outcome, or a throw for anything that is not a delivery outcome. A
 * secret that can never be used is an outcome: nothing is sent and it is not retried.
 */
async function send(endpoint: EndpointRecord, d: DeliveryRecord, start: number, timeoutMs: number) {
  const secrets = await signingSecrets(endpoint, start);
  if (!secrets)
    return { statusCode: null, durationMs: Date.now() - start, retryable: false, error: UNSIGNABLE_ERROR };
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'Loupe-Webhooks/1.0',
    ...signedHeaders(secrets, d.eventId, Math.floor(start / 1000), d.payload),
  };
  try {
    const res = await sendOutbound({
      url: endpoint.url,
      method: 'POST',
      headers,
      body: d.payload,
      timeoutMs,
      maxResponseBytes: MAX_RESPONSE_BYTES,
    });
    const ok = res.status >= 200 && res.status <= 299;
    const retryable = !ok && isRetryableStatus(res.status);
    return {
      statusCode: res.status as number | null,
      durationMs: Math.round(res.durationMs),
      retryable,
      error: ok ? null : `The endpoint answered HTTP ${res.status}${retryable ? '' : ' (not retried)'}.`,
    };
  } catch (e) {
    let error: string;
    if (e instanceof OutboundRefused) error = `Refused before connecting: ${e.reason}`;
    else if (e instanceof OutboundFailed) error = `${e.kind}: ${e.message}`;
    else throw e;
    // Network errors are retried; so is a refusal (it may be a transient DNS answer; nothing was sent).
    return { statusCode: null, durationMs: Date.now() - start, retryable: true, error };
  }
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
