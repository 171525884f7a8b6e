import * as z from 'zod';
import { endpoint, once } from '../http/endpoint';
import { Deleted, IdParams, PageQuery } from '../http/schemas';

const Name = z.string().trim().min(1).max(120);
const Text = z.string().max(2000).nullable();

export const MetricCreate = z.object({
  name: Name,
  formula: z.string().min(1).max(100_000).describe('SQL; the first column of the first row is the value'),
  description: Text.optional(),
  connectionId: z.string().min(1).max(200).nullable().optional(),
  unit: z.string().max(40).nullable().optional(),
  dimensions: Text.optional(),
});
export const MetricUpdate = z.object({
  name: Name.optional(),
  formula: z.string().min(1).max(100_000).optional(),
  description: Text.optional(),
  connectionId: z.string().min(1).max(200).nullable().optional(),
  unit: z.string().max(40).nullable().optional(),
  dimensions: Text.optional(),
});
export const MetricValueQuery = z.object({
  connectionId: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe("Evaluate on this connection instead of the metric's"),
});

export const MetricDefinition = once(() =>
  z.object({
    id: z.string(),
    orgId: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    formula: z.string(),
    connectionId: z.string().nullable(),
    unit: z.string().nullable(),
    dimensions: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  }),
);
export const MetricValue = once(() =>
  z.object({
    value: z.unknown().describe('First column of the first row; null when the formula returns no rows'),
    unit: z.string().nullable(),
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
