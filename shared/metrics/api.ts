import * as z from 'zod/mini';
import { endpoint, once } from '../http/endpoint';
import { Deleted, describe, IdParams, PageQuery } from '../http/schemas';

const Name = z.string().check(z.trim(), z.minLength(1), z.maxLength(120));
const Text = z.nullable(z.string().check(z.maxLength(2000)));

export const MetricCreate = z.object({
  name: Name,
  formula: describe(
    z.string().check(z.minLength(1), z.maxLength(100_000)),
    'SQL; the first column of the first row is the value',
  ),
  description: z.optional(Text),
  connectionId: z.optional(z.nullable(z.string().check(z.minLength(1), z.maxLength(200)))),
  unit: z.optional(z.nullable(z.string().check(z.maxLength(40)))),
  dimensions: z.optional(Text),
});
export const MetricUpdate = z.object({
  name: z.optional(Name),
  formula: z.optional(z.string().check(z.minLength(1), z.maxLength(100_000))),
  description: z.optional(Text),
  connectionId: z.optional(z.nullable(z.string().check(z.minLength(1), z.maxLength(200)))),
  unit: z.optional(z.nullable(z.string().check(z.maxLength(40)))),
  dimensions: z.optional(Text),
});
export const MetricValueQuery = z.object({
  connectionId: describe(
    z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
    "Evaluate on this connection instead of the metric's",
  ),
});

export const MetricDefinition = once(() =>
  z.object({
    id: z.string(),
    orgId: z.string(),
    name: z.string(),
    description: z.nullable(z.string()),
    formula: z.string(),
    connectionId: z.nullable(z.string()),
    unit: z.nullable(z.string()),
    dimensions: z.nullable(z.string()),
    createdBy: describe(z.string(), 'The user who defined it: that user and admins may change or delete it'),
    createdAt: z.string(),
    updatedAt: z.string(),
  }),
);
export const MetricValue = once(() =>
  z.object({
    value: describe(z.unknown(), 'First column of the first row; null when the formula returns no rows'),
    unit: z.nullable(z.string()),
    asOf: z.string(),
    executionTime: z.number(),
  }),
);

const tag = 'Metrics';
const scope = 'query' as const;

export const listMetrics = endpoint({
  method: 'GET',
  path: '/metrics',
  tag,
  scope,
  summary: 'List metric definitions',
  query: PageQuery,
  response: () => z.array(MetricDefinition()),
  paginated: true,
});
export const createMetric = endpoint({
  method: 'POST',
  path: '/metrics',
  tag,
  scope,
  summary: 'Define a metric',
  body: MetricCreate,
  status: 201,
  response: MetricDefinition,
  errors: [404, 409],
});
export const getMetric = endpoint({
  method: 'GET',
  path: '/metrics/{id}',
  tag,
  scope,
  summary: 'Get a metric definition',
  params: IdParams,
  response: MetricDefinition,
});
export const updateMetric = endpoint({
  method: 'PATCH',
  path: '/metrics/{id}',
  tag,
  scope,
  summary: 'Change a metric definition',
  params: IdParams,
  body: MetricUpdate,
  response: MetricDefinition,
  errors: [403, 404, 409],
});
export const deleteMetric = endpoint({
  method: 'DELETE',
  path: '/metrics/{id}',
  tag,
  scope,
  summary: 'Delete a metric definition',
  params: IdParams,
  response: Deleted,
  errors: [403],
});
export const getMetricValue = endpoint({
  method: 'GET',
  path: '/metrics/{id}/value',
  tag,
  scope,
  summary: 'Evaluate a metric now (read-only)',
  params: IdParams,
  query: MetricValueQuery,
  response: MetricValue,
  errors: [422, 504],
});

export const metricEndpoints = [
  listMetrics,
  createMetric,
  getMetric,
  updateMetric,
  deleteMetric,
  getMetricValue,
];
