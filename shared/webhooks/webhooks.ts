import type * as z from 'zod/mini';
import type { AuthContext } from '../auth/context';
import { pageOf, pagination } from '../http/envelope';
import type { PageQuery } from '../http/schemas';
import { checkDestination, OutboundRefused } from '../outbound';
import { secretQueryParameters } from '../outbound/secret-query';
import { encryption } from '../platform/encryption';
import { AppError, conflict, notFound, validationError } from '../platform/errors';
import { EVENT_TYPES, type OutboxEvent } from '../platform/events';
import { newId, nowIso } from '../platform/ids';
import type { WebhookEndpointCreate, WebhookEndpointUpdate } from './api';
import { attemptDelivery, openSecret } from './delivery';
import { ensureDelivery } from './fanout';
import { ROTATION_OVERLAP_MS } from './schedule';
import { last4Of, maskSecret, newSecret, secretContext } from './signing';
import { type DeliveryRecord, type EndpointRecord, MAX_ENDPOINTS, webhookStore } from './store';

export function endpointView(r: EndpointRecord, fullSecret?: string) {
  const previousActive = r.previousSecretUntil && Date.parse(r.previousSecretUntil) > Date.now();
  return {
    id: r.id,
    orgId: r.orgId,
    url: r.url,
    secret: fullSecret ?? maskSecret(r.secretLast4),
    events: r.events,
    isActive: r.isActive,
    previousSecretExpiresAt: previousActive ? (r.previousSecretUntil ?? null) : null,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
}

export function deliveryView(d: DeliveryRecord) {
  return {
    id: d.id,
    endpointId: d.endpointId,
    event: d.event,
    eventId: d.eventId,
    payload: d.payload,
    status: d.status,
    statusCode: d.statusCode ?? null,
    attempts: d.attempts,
    deliveredAt: d.deliveredAt ?? null,
    nextAttemptAt: d.nextAttemptAt ?? null,
    error: d.error ?? null,
    createdAt: d.createdAt,
  };
}

const fieldError = (path: string, message: string, code: string) =>
  validationError(message, { issues: [{ path, message, code }] });

/**
 * The outbound guard's verdict on a destination (resolved now): 400 naming the field when refused. A
 * secret-looking query parameter is refused as in workflow webhook actions (the URL is shown to readers
 * of the endpoint; the signature authenticates deliveries).
 */
async function checkUrl(url: string, path: string): Promise<void> {
  let secrets: string[] = [];
  try {
    secrets = secretQueryParameters(new URL(url));
  } catch {
    // not a URL: the outbound guard names the problem below
  }
  if (secrets.length)
    throw fieldError(
      path,
      `The webhook URL carries a secret in its query string (${secrets.join(', ')}): remove it; deliveries are signed (webhook-signature) so the receiver can authenticate them.`,
      'url_refused',
    );
  try {
    await checkDestination(url);
  } catch (e) {
    if (e instanceof OutboundRefused)
      throw fieldError(path, `The webhook URL is not allowed: ${e.reason}`, 'url_refused');
    throw e;
  }
}

/** Known event types or the single entry `*`; duplicates collapse. */
function checkEvents(events: string[], path: string): string[] {
  if (events.includes('*')) {
    if (events.length !== 1)
      throw fieldError(path, '"*" must be the only entry when given.', 'invalid_events');
    return ['*'];
  }
  const known = EVENT_TYPES as readonly string[];
  const issues = events
    .map((e, i) => ({ e, i }))
    .filter(({ e }) => !known.includes(e))
    .map(({ e, i }) => ({
      path: `${path}.${i}`,
      message: `Unknown event type "${e.slice(0, 100)}"; known types: ${EVENT_TYPES.join(', ')}, or "*".`,
      code: 'unknown_event_type',
    }));
  if (issues.length) throw validationError('Unknown event type.', { issues });
  return [...new Set(events)];
}

async function found(ctx: AuthContext, id: string): Promise<EndpointRecord> {
  const r = await webhookStore.get(ctx.orgId, id);
  if (!r) throw notFound('Webhook endpoint');
  return r;
}

export async function listWebhooks(ctx: AuthContext, q: PageQuery) {
  const items = (await webhookStore.list(ctx.orgId)).sort(
    (a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id),
  );
  return pageOf(
    items.map((r) => endpointView(r)),
    q,
  );
}

export async function getWebhook(ctx: AuthContext, id: string) {
  return endpointView(await found(ctx, id));
}

export async function createWebhook(ctx: AuthContext, input: z.output<typeof WebhookEndpointCreate>) {
  const events = checkEvents(input.events, 'body.events');
  await checkUrl(input.url, 'body.url');
  if (!(await webhookStore.claimSlot(ctx.orgId)))
    throw new AppError(
      409,
      'LIMIT_EXCEEDED',
      `An organization can have at most ${MAX_ENDPOINTS} webhook endpoints; delete one first.`,
      { limit: MAX_ENDPOINTS },
    );
  try {
    const id = newId();
    const secret = newSecret();
    const now = nowIso();
    const r: EndpointRecord = {
      id,
      orgId: ctx.orgId,
      url: input.url,
      events,
      isActive: input.isActive,
      secretEnc: await encryption().encrypt(secret, secretContext(ctx.orgId, id)),
      secretLast4: last4Of(secret),
      previousSecretEnc: null,
      previousSecretUntil: null,
      deliveryCount: 0,
      createdBy: ctx.userId,
      createdAt: now,
      updatedAt: now,
    };
    if (!(await webhookStore.put(r))) throw new Error('webhook endpoint id collision');
    return endpointView(r, secret);
  } catch (e) {
    await webhookStore.releaseSlot(ctx.orgId);
    throw e;
  }
}

export async function updateWebhook(
  ctx: AuthContext,
  id: string,
  input: z.output<typeof WebhookEndpointUpdate>,
) {
  const r = await found(ctx, id);
  const changes: Partial<EndpointRecord> = {};
  if (input.events !== undefined) changes.events = checkEvents(input.events, 'body.events');
  if (input.url !== undefined && input.url !== r.url) {
    await checkUrl(input.url, 'body.url');
    changes.url = input.url;
  }
  if (input.isActive !== undefined) changes.isActive = input.isActive;
  let secret: string | undefined;
  if (input.rotateSecret) {
    secret = newSecret();
    changes.secretEnc = await encryption().encrypt(secret, secretContext(ctx.orgId, id));
    changes.secretLast4 = last4Of(secret);
    // The old secret keeps signing for 24 h, unless it cannot be used (then only the new one signs).
    const old = await openSecret(r, r.secretEnc, 'current');
    changes.previousSecretEnc = old === undefined ? null : r.secretEnc;
    changes.previousSecretUntil =
      old === undefined ? null : new Date(Date.now() + ROTATION_OVERLAP_MS).toISOString();
  }
  let updatedAt = nowIso();
  if (updatedAt <= r.updatedAt) updatedAt = new Date(Date.parse(r.updatedAt) + 1).toISOString();
  changes.updatedAt = updatedAt;
  const updated = await webhookStore.update(ctx.orgId, id, r.updatedAt, changes);
  if (!updated) {
    if (!(await webhookStore.get(ctx.orgId, id))) throw notFound('Webhook endpoint');
    throw conflict(
      'CONFLICT',
      'The endpoint was changed by another request meanwhile; read it again and retry.',
    );
  }
  return endpointView(updated, secret);
}

/** Deletes the endpoint (gone at once), frees its slot, then removes its delivery log (safe to repeat). */
export async function deleteWebhook(ctx: AuthContext, id: string) {
  await found(ctx, id);
  if (!(await webhookStore.delete(ctx.orgId, id))) throw notFound('Webhook endpoint');
  await webhookStore.releaseSlot(ctx.orgId);
  await webhookStore.purgeLog(ctx.orgId, id);
  return { deleted: true as const };
}

/** One page of the delivery log, newest first: one range Query; `total` is the endpoint's counter. */
export async function listDeliveries(ctx: AuthContext, id: string, q: PageQuery) {
  const r = await found(ctx, id);
  const total = Number(r.deliveryCount ?? 0);
  const hi = total - (q.page - 1) * q.pageSize;
  const items =
    hi >= 1 ? await webhookStore.deliveriesBetween(ctx.orgId, id, Math.max(1, hi - q.pageSize + 1), hi) : [];
  return { data: items.map(deliveryView), pagination: pagination(total, q.page, q.pageSize) };
}

/** Time kept for recording the test's outcome and answering once its attempt has ended. */
const TEST_ANSWER_MARGIN_MS = 3000;

/**
 * POST /webhooks/{id}/test: a signed `webhook.test` event to this endpoint only (active or not), sent
 * now in one attempt; the delivery is logged like any other.
 */
export async function testWebhook(ctx: AuthContext, id: string, remainingMs: () => number = () => Infinity) {
  const r = await found(ctx, id);
  const event: OutboxEvent = {
    id: newId(),
    orgId: ctx.orgId,
    type: 'webhook.test',
    createdAt: nowIso(),
    data: { endpointId: r.id, url: r.url, message: 'A test event sent from Loupe.' },
  };
  const delivery = await ensureDelivery(r, event, { queue: false });
  if (!delivery) throw notFound('Webhook endpoint');
  // The attempt ends in time for the answer: its timeout is at most the request's remaining time less
  // TEST_ANSWER_MARGIN_MS (and never under 1 s).
  const timeoutMs = Math.max(1000, remainingMs() - TEST_ANSWER_MARGIN_MS);
  const result = await attemptDelivery(r, delivery.seq, 1, { maxAttempts: 1, timeoutMs }).catch(async (e) => {
    // Failed inside Loupe: the test is not tried again later (the caller gets the error now).
    await webhookStore
      .abandon(r.orgId, r.id, delivery.seq, 'The test could not be sent: it failed inside Loupe; try again.')
      .catch(() => undefined);
    throw e;
  });
  if (!result) throw new Error('the test delivery could not be claimed');
  return { delivery: deliveryView(result.delivery), success: result.success, error: result.error };
}
