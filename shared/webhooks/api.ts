import * as z from 'zod/mini';
import { endpoint, once } from '../http/endpoint';
import { Deleted, describe, IdParams, PageQuery } from '../http/schemas';
import { EVENT_TYPES } from '../platform/events/port';

const Url = describe(
  z.string().check(z.trim(), z.minLength(1), z.maxLength(2048)),
  'https://host/path on port 443 (public address)',
);
const Events = describe(
  z.array(z.string().check(z.maxLength(100))).check(z.minLength(1), z.maxLength(EVENT_TYPES.length + 1)),
  `Event types (${EVENT_TYPES.join(', ')}), or the single entry "*" for all`,
);

export const WebhookEndpointCreate = z.object({
  url: Url,
  events: Events,
  isActive: z._default(z.boolean(), true),
});
export const WebhookEndpointUpdate = z.object({
  url: z.optional(Url),
  events: z.optional(Events),
  isActive: z.optional(z.boolean()),
  rotateSecret: describe(
    z.optional(z.literal(true)),
    'Extension: issue a new secret (shown once in this answer); the old one keeps signing beside it for 24 hours',
  ),
});

export const WebhookEndpoint = once(() =>
  z.object({
    id: z.string(),
    orgId: z.string(),
    url: z.string(),
    secret: describe(
      z.string(),
      'The full secret only when created or rotated; later reads show whsec_… + last 4',
    ),
    events: z.array(z.string()),
    isActive: z.boolean(),
    previousSecretExpiresAt: describe(
      z.nullable(z.string()),
      'Extension: while set, deliveries carry a second signature made with the previous secret',
    ),
    createdAt: z.string(),
    updatedAt: z.string(),
  }),
);

export const WebhookDelivery = once(() =>
  z.object({
    id: z.string(),
    endpointId: z.string(),
    event: describe(z.string(), 'Event type'),
    eventId: describe(z.string(), 'Extension: the event id (= webhook-id header)'),
    payload: describe(z.string(), 'The JSON body sent: { id, type, createdAt, orgId, data }'),
    status: describe(z.enum(['PENDING', 'SUCCESS', 'FAILED']), 'Extension'),
    statusCode: z.nullable(z.number().check(z.int())),
    attempts: z.number().check(z.int()),
    deliveredAt: z.nullable(z.string()),
    nextAttemptAt: describe(z.nullable(z.string()), 'Extension: when the next retry is due'),
    error: describe(z.nullable(z.string()), 'Extension: why the last attempt failed'),
    createdAt: z.string(),
  }),
);

export const WebhookTestResult = once(() =>
  z.object({
    delivery: WebhookDelivery(),
    success: z.boolean(),
    error: z.nullable(z.string()),
  }),
);

const tag = 'Event webhooks';
const scope = 'webhooks' as const;
// Event webhook endpoints and their delivery logs are organization settings: every route is admin only (a
// delivery's payload describes events on any connection of the organization).

export const listWebhooks = endpoint({
  method: 'GET',
  path: '/webhooks',
  tag,
  scope,
  admin: true,
  summary: 'List event webhook endpoints',
  query: PageQuery,
  response: () => z.array(WebhookEndpoint()),
  paginated: true,
});
export const createWebhook = endpoint({
  method: 'POST',
  path: '/webhooks',
  tag,
  scope,
  admin: true,
  summary: 'Create an event webhook endpoint (the full secret is shown once)',
  body: WebhookEndpointCreate,
  status: 201,
  response: WebhookEndpoint,
  errors: [403, 409],
});
export const getWebhook = endpoint({
  method: 'GET',
  path: '/webhooks/{id}',
  tag,
  scope,
  admin: true,
  summary: 'Get an event webhook endpoint (secret masked)',
  params: IdParams,
  response: WebhookEndpoint,
});
export const updateWebhook = endpoint({
  method: 'PATCH',
  path: '/webhooks/{id}',
  tag,
  scope,
  admin: true,
  summary: 'Change an event webhook endpoint, or rotate its secret',
  params: IdParams,
  body: WebhookEndpointUpdate,
  response: WebhookEndpoint,
  errors: [403, 409],
});
export const deleteWebhook = endpoint({
  method: 'DELETE',
  path: '/webhooks/{id}',
  tag,
  scope,
  admin: true,
  summary: 'Delete an event webhook endpoint and its delivery log',
  params: IdParams,
  response: Deleted,
  errors: [403],
});
export const listWebhookDeliveries = endpoint({
  method: 'GET',
  path: '/webhooks/{id}/deliveries',
  tag,
  scope,
  admin: true,
  summary: "An endpoint's delivery log, newest first",
  params: IdParams,
  query: PageQuery,
  response: () => z.array(WebhookDelivery()),
  paginated: true,
});
export const testWebhook = endpoint({
  method: 'POST',
  path: '/webhooks/{id}/test',
  tag,
  scope,
  admin: true,
  summary: 'Send a signed webhook.test event to the endpoint now (one attempt, no retries)',
  params: IdParams,
  response: WebhookTestResult,
  errors: [403],
});

export const webhookEndpoints = [
  listWebhooks,
  createWebhook,
  getWebhook,
  updateWebhook,
  deleteWebhook,
  listWebhookDeliveries,
  testWebhook,
];
