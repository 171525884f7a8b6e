import * as z from 'zod/mini';
import { QueryResult } from '../connections/schemas';
import { endpoint, once } from '../http/endpoint';
import { Deleted, describe, IdParams, PageQuery } from '../http/schemas';

export const WIDGET_TYPES = ['TABLE', 'METRIC', 'LINE', 'BAR', 'AREA', 'PIE', 'SCATTER', 'TEXT'] as const;
export const MAX_WIDGETS_PER_DASHBOARD = 100;
export const MAX_CACHE_SECONDS = 86_400;
export const DEFAULT_CACHE_SECONDS = 60;

const Title = z.string().check(z.trim(), z.minLength(1), z.maxLength(200));
const Description = z.nullable(z.string().check(z.maxLength(2000)));
const Sql = z.nullable(z.string().check(z.maxLength(100_000)));
const ConnectionId = z.nullable(z.string().check(z.minLength(1), z.maxLength(200)));

/** Why a widget `config` string is not acceptable, or undefined when it is. */
export function configProblem(s: string): string | undefined {
  let v: unknown;
  try {
    v = JSON.parse(s);
  } catch {
    return 'config must be a string holding a JSON object (it is not valid JSON)';
  }
  if (!v || typeof v !== 'object' || Array.isArray(v))
    return 'config must hold a JSON object, not an array or a scalar';
  const cache = (v as Record<string, unknown>).cacheSeconds;
  if (
    cache !== undefined &&
    (!Number.isInteger(cache) || (cache as number) < 0 || (cache as number) > MAX_CACHE_SECONDS)
  )
    return `config.cacheSeconds must be an integer from 0 (no cache) to ${MAX_CACHE_SECONDS}`;
  return undefined;
}

const Config = describe(
  z.string().check(
    z.maxLength(100_000),
    z.superRefine((s, ctx) => {
      const problem = configProblem(s);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
  ),
  'A string holding a JSON object (chart options). `cacheSeconds` (integer 0–86400, default 60; 0 disables) sets how long data results are cached.',
);

export const DashboardCreate = z.object({
  title: Title,
  description: z.optional(Description),
  isPublic: z._default(z.boolean(), false),
});
export const DashboardUpdate = z.object({
  title: z.optional(Title),
  description: z.optional(Description),
  isPublic: z.optional(z.boolean()),
});

export const WidgetCreate = z.object({
  type: z.enum(WIDGET_TYPES),
  title: Title,
  query: z.optional(Sql),
  connectionId: z.optional(ConnectionId),
  config: z._default(Config, '{}'),
  width: z._default(z.number().check(z.int(), z.gte(1), z.lte(12)), 6),
  height: z._default(z.number().check(z.int(), z.gte(1), z.lte(100)), 4),
  position: z._default(z.number().check(z.int(), z.gte(0), z.lte(10_000)), 0),
});
export const WidgetUpdate = z.object({
  type: z.optional(z.enum(WIDGET_TYPES)),
  title: z.optional(Title),
  query: z.optional(Sql),
  connectionId: z.optional(ConnectionId),
  config: z.optional(Config),
  width: z.optional(z.number().check(z.int(), z.gte(1), z.lte(12))),
  height: z.optional(z.number().check(z.int(), z.gte(1), z.lte(100))),
  position: z.optional(z.number().check(z.int(), z.gte(0), z.lte(10_000))),
});

export const Widget = once(() =>
  z.object({
    id: z.string(),
    dashboardId: z.string(),
    connectionId: z.nullable(z.string()),
    type: z.enum(WIDGET_TYPES),
    title: z.string(),
    query: z.nullable(z.string()),
    config: z.string(),
    width: z.number().check(z.int()),
    height: z.number().check(z.int()),
    position: z.number().check(z.int()),
    createdAt: z.string(),
    updatedAt: z.string(),
  }),
);
export const Dashboard = once(() =>
  z.object({
    id: z.string(),
    orgId: z.string(),
    title: z.string(),
    description: z.nullable(z.string()),
    isPublic: z.boolean(),
    createdBy: describe(
      z.string(),
      'Extension: the user id of the creator. The creator and admins may change the dashboard and its widgets; other members only see it (when it is public)',
    ),
    createdAt: z.string(),
    updatedAt: z.string(),
    widgets: z.array(Widget()),
  }),
);
/** The QueryResult of the widget's query, with where it came from (the widget result cache or fresh). */
export const WidgetData = once(() =>
  z.extend(QueryResult(), {
    cached: describe(z.boolean(), 'True when the result came from the widget cache'),
    cachedAt: describe(
      z.nullable(z.string()),
      'When the cached result was computed; null for a fresh result',
    ),
    cacheSkipped: describe(
      z.optional(z.enum(['DISABLED', 'TOO_LARGE'])),
      'Why a fresh result was not stored: caching is off for the widget, or its JSON exceeds 350 KB',
    ),
  }),
);

const WidgetParams = z.object({
  id: z.string().check(z.minLength(1), z.maxLength(200)),
  widgetId: z.string().check(z.minLength(1), z.maxLength(200)),
});
/** `refresh=true` (an extension) skips the widget cache: the query runs now and its result replaces the cached one. */
export const WidgetDataQuery = z.object({
  refresh: z.optional(
    describe(
      z.enum(['true', 'false']),
      'An extension: `true` skips the cached result, runs the query now and stores its result in the cache (the next plain read answers it); `false` (the default) answers from the cache while it is fresh.',
    ),
  ),
});

const tag = 'Dashboards';
const scope = 'dashboards' as const;

export const listDashboards = endpoint({
  method: 'GET',
  path: '/dashboards',
  tag,
  scope,
  summary: 'List dashboards (each with its widgets)',
  query: PageQuery,
  response: () => z.array(Dashboard()),
  paginated: true,
});
export const createDashboard = endpoint({
  method: 'POST',
  path: '/dashboards',
  tag,
  scope,
  summary: 'Create a dashboard',
  body: DashboardCreate,
  status: 201,
  response: Dashboard,
});
export const getDashboard = endpoint({
  method: 'GET',
  path: '/dashboards/{id}',
  tag,
  scope,
  summary: 'Get a dashboard with its widgets ordered by position',
  params: IdParams,
  response: Dashboard,
});
export const updateDashboard = endpoint({
  method: 'PATCH',
  path: '/dashboards/{id}',
  tag,
  scope,
  summary: 'Change a dashboard',
  params: IdParams,
  body: DashboardUpdate,
  response: Dashboard,
  errors: [403],
});
export const deleteDashboard = endpoint({
  method: 'DELETE',
  path: '/dashboards/{id}',
  tag,
  scope,
  summary: 'Delete a dashboard and all its widgets',
  params: IdParams,
  response: Deleted,
  errors: [403],
});
export const listWidgets = endpoint({
  method: 'GET',
  path: '/dashboards/{id}/widgets',
  tag,
  scope,
  summary: 'List the widgets of a dashboard ordered by position',
  params: IdParams,
  response: () => z.array(Widget()),
});
export const createWidget = endpoint({
  method: 'POST',
  path: '/dashboards/{id}/widgets',
  tag,
  scope,
  summary: 'Add a widget',
  params: IdParams,
  body: WidgetCreate,
  status: 201,
  response: Widget,
  errors: [403],
});
export const updateWidget = endpoint({
  method: 'PATCH',
  path: '/dashboards/{id}/widgets/{widgetId}',
  tag,
  scope,
  summary: 'Change a widget (a new query or connection drops its cached data)',
  params: WidgetParams,
  body: WidgetUpdate,
  response: Widget,
  errors: [403],
});
export const deleteWidget = endpoint({
  method: 'DELETE',
  path: '/dashboards/{id}/widgets/{widgetId}',
  tag,
  scope,
  summary: 'Delete a widget',
  params: WidgetParams,
  response: Deleted,
  errors: [403],
});
export const getWidgetData = endpoint({
  method: 'GET',
  path: '/dashboards/{id}/widgets/{widgetId}/data',
  tag,
  scope,
  summary:
    "Run the widget's query read-only on its connection (cached per widget; `refresh=true` skips the cache)",
  params: WidgetParams,
  query: WidgetDataQuery,
  response: WidgetData,
  errors: [422, 504],
});

export const dashboardEndpoints = [
  listDashboards,
  createDashboard,
  getDashboard,
  updateDashboard,
  deleteDashboard,
  listWidgets,
  createWidget,
  updateWidget,
  deleteWidget,
  getWidgetData,
];
