import {
  createAnnotation,
  deleteAnnotation,
  getAnnotation,
  listAnnotations,
  updateAnnotation,
} from '../../shared/connections/annotations';
import * as api from '../../shared/connections/api';
import {
  connectionView,
  createConnection,
  deleteConnection,
  listConnections,
  loadConnection,
  updateConnection,
} from '../../shared/connections/connections';
import { httpHandler } from '../../shared/http/handler';
import { on } from '../../shared/http/route';
import { lazy } from '../../shared/platform/lazy';

// What reaches a database (queries, schema reads, connection tests, history, auto-annotation) loads with
// its route's first call, a lazy chunk: a cold start compiles the handler stack and the connections'
// records only.
const execute = lazy(() => import('../../shared/connections/execute'));
const schema = lazy(() => import('../../shared/connections/schema'));
const testing = lazy(() => import('../../shared/connections/test-connection'));
const history = lazy(() => import('../../shared/connections/history'));
const autoAnnotate = lazy(() => import('../../shared/connections/auto-annotate'));
const safety = lazy(() => import('../../shared/connections/read-safety'));

export const handler = httpHandler([
  on(api.listConnections, async ({ ctx, query }) => listConnections(ctx, query)),
  on(api.createConnection, async ({ ctx, body }) => ({
    status: 201,
    data: await createConnection(ctx, body),
  })),
  on(api.getConnection, async ({ ctx, params }) => ({
    data: connectionView(await loadConnection(ctx, params.id)),
  })),
  on(api.updateConnection, async ({ ctx, params, body }) => ({
    data: await updateConnection(ctx, params.id, body),
  })),
  on(api.deleteConnection, async ({ ctx, params }) => ({ data: await deleteConnection(ctx, params.id) })),
  on(api.testConnection, async ({ ctx, params }) => ({
    data: await (await testing()).testConnection(ctx, params.id),
  })),
  on(api.getReadSafety, async ({ ctx, params }) => ({
    data: await (await safety()).getReadSafety(ctx, params.id),
  })),
  on(api.getSchema, async ({ ctx, params }) => ({ data: await (await schema()).getSchema(ctx, params.id) })),
  on(api.refreshSchema, async ({ ctx, params }) => ({
    data: await (await schema()).refreshSchema(ctx, params.id),
  })),
  on(api.runQuery, async ({ ctx, params, body }) => ({
    data: await (await execute()).executeReadOnly(ctx, params.id, { ...body, source: 'query' }),
  })),
  on(api.listQueries, async ({ ctx, params, query }) =>
    (await history()).listQueryHistory(ctx, params.id, query),
  ),
  on(api.listAnnotations, async ({ ctx, params, query }) => listAnnotations(ctx, params.id, query)),
  on(api.createAnnotation, async ({ ctx, params, body }) => ({
    status: 201,
    data: await createAnnotation(ctx, params.id, body),
  })),
  on(api.autoAnnotate, async ({ ctx, params, body }) => ({
    status: 202,
    data: await (await autoAnnotate()).requestAutoAnnotation(ctx, params.id, body?.tables),
  })),
  on(api.getAnnotation, async ({ ctx, params }) => ({
    data: await getAnnotation(ctx, params.id, params.annotationId),
  })),
  on(api.updateAnnotation, async ({ ctx, params, body }) => ({
    data: await updateAnnotation(ctx, params.id, params.annotationId, body),
  })),
  on(api.deleteAnnotation, async ({ ctx, params }) => ({
    data: await deleteAnnotation(ctx, params.id, params.annotationId),
  })),
]);
