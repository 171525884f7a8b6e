import { httpHandler } from '../../shared/http/handler';
import { on } from '../../shared/http/route';
import * as api from '../../shared/webhooks/api';
import {
  createWebhook,
  deleteWebhook,
  getWebhook,
  listDeliveries,
  listWebhooks,
  testWebhook,
  updateWebhook,
} from '../../shared/webhooks/webhooks';

export const handler = httpHandler([
  on(api.listWebhooks, async ({ ctx, query }) => listWebhooks(ctx, query)),
  on(api.createWebhook, async ({ ctx, body }) => ({ status: 201, data: await createWebhook(ctx, body) })),
  on(api.getWebhook, async ({ ctx, params }) => ({ data: await getWebhook(ctx, params.id) })),
  on(api.updateWebhook, async ({ ctx, params, body }) => ({
    data: await updateWebhook(ctx, params.id, body),
  })),
  on(api.deleteWebhook, async ({ ctx, params }) => ({ data: await deleteWebhook(ctx, params.id) })),
  on(api.listWebhookDeliveries, async ({ ctx, params, query }) => listDeliveries(ctx, params.id, query)),
  on(api.testWebhook, async ({ ctx, params, remainingMs }) => ({
    data: await testWebhook(ctx, params.id, remainingMs),
  })),
]);
