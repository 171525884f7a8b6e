import { httpHandler } from '../../shared/http/handler';
import { on } from '../../shared/http/route';
import * as api from '../../shared/metrics/api';
import {
  createMetric,
  deleteMetric,
  getMetric,
  listMetrics,
  metricValue,
  updateMetric,
} from '../../shared/metrics/metrics';

export const handler = httpHandler([
  on(api.listMetrics, async ({ ctx, query }) => listMetrics(ctx, query)),
  on(api.createMetric, async ({ ctx, body }) => ({ status: 201, data: await createMetric(ctx, body) })),
  on(api.getMetric, async ({ ctx, params }) => ({ data: await getMetric(ctx, params.id) })),
  on(api.updateMetric, async ({ ctx, params, body }) => ({ data: await updateMetric(ctx, params.id, body) })),
  on(api.deleteMetric, async ({ ctx, params }) => ({ data: await deleteMetric(ctx, params.id) })),
  on(api.getMetricValue, async ({ ctx, params, query }) => ({
    data: await metricValue(ctx, params.id, query.connectionId),
  })),
]);
