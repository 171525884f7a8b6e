import type * as z from 'zod/mini';
import type { AuthContext } from '../auth/context';
import { connectionForUse, executeReadOnly } from '../connections/execute';
import { AppError, notFound, validationError } from '../platform/errors';
import { newId, nowIso } from '../platform/ids';
import { assertCanChange, onAssignedConnection } from './access';
import { MAX_WIDGETS_PER_DASHBOARD, type WidgetCreate, type WidgetUpdate } from './api';
import { cacheSecondsOf, widgetCache } from './cache';
import { assertReadOnlyAt, connectionForSave } from './connection';
import { visibleDashboard, widgetView } from './dashboards';
import { dashboardStore, type WidgetRecord } from './store';

const emptyToNull = (s: string | null | undefined) => (s === undefined ? undefined : s?.trim() ? s : null);

/** Save-time checks of a widget's connection and query: the connection is visible, the query a single read. */
async function checkSource(ctx: AuthContext, connectionId: string | null, query: string | null) {
  if (!connectionId) return;
  const conn = await connectionForSave(ctx, connectionId, 'body.connectionId');
  if (query) await assertReadOnlyAt(conn.type, query, 'body.query', conn.allowedFunctions);
}

async function widgetOf(ctx: AuthContext, dashboardId: string, widgetId: string) {
  const dashboard = await visibleDashboard(ctx, dashboardId);
  const widget = await dashboardStore.getWidget(ctx.orgId, dashboardId, widgetId);
  if (!widget || !onAssignedConnection(ctx, widget)) throw notFound('Widget');
  return { dashboard, widget };
}

export async function listWidgets(ctx: AuthContext, dashboardId: string) {
  await visibleDashboard(ctx, dashboardId);
  return (await dashboardStore.listWidgets(ctx.orgId, dashboardId))
    .filter((w) => onAssignedConnection(ctx, w))
    .map(widgetView);
}

export async function createWidget(
  ctx: AuthContext,
  dashboardId: string,
  input: z.output<typeof WidgetCreate>,
) {
  const dashboard = await visibleDashboard(ctx, dashboardId);
  assertCanChange(ctx, dashboard, 'dashboard');
  const existing = await dashboardStore.listWidgets(ctx.orgId, dashboardId);
  if (existing.length >= MAX_WIDGETS_PER_DASHBOARD)
    throw validationError(`A dashboard holds at most ${MAX_WIDGETS_PER_DASHBOARD} widgets.`, {
      issues: [{ path: 'params.id', message: 'dashboard is full', code: 'too_many_widgets' }],
    });
  const query = emptyToNull(input.query) ?? null;
  const connectionId = input.connectionId ?? null;
  await checkSource(ctx, connectionId, query);
  const now = nowIso();
  const w: WidgetRecord = {
    id: newId(),
    orgId: ctx.orgId,
    dashboardId,
    connectionId,
    type: input.type,
    title: input.title,
    query,
    config: input.config,
    width: input.width,
    height: input.height,
    position: input.position,
    createdBy: ctx.userId,
    createdAt: now,
    updatedAt: now,
  };
  await dashboardStore.createWidget(w);
  // A concurrent dashboard delete may have swept before this write: re-check and undo.
  if (!(await dashboardStore.getDashboard(ctx.orgId, dashboardId))) {
    await dashboardStore.deleteWidget(ctx.orgId, dashboardId, w.id);
    throw notFound('Dashboard');
  }
  return widgetView(w);
}

export async function updateWidget(
  ctx: AuthContext,
  dashboardId: string,
  widgetId: string,
  input: z.output<typeof WidgetUpdate>,
) {
  const { dashboard, widget } = await widgetOf(ctx, dashboardId, widgetId);
  assertCanChange(ctx, dashboard, 'dashboard');
  const query = input.query === undefined ? widget.query : (emptyToNull(input.query) ?? null);
  const connectionId = input.connectionId === undefined ? widget.connectionId : input.connectionId;
  const sourceChanged = query !== widget.query || connectionId !== widget.connectionId;
  if (sourceChanged) await checkSource(ctx, connectionId, query);
  const updated = await dashboardStore.updateWidget(ctx.orgId, dashboardId, widgetId, {
    type: input.type,
    title: input.title,
    query: input.query === undefined ? undefined : query,
    connectionId: input.connectionId === undefined ? undefined : connectionId,
    config: input.config,
    width: input.width,
    height: input.height,
    position: input.position,
    updatedAt: nowIso(),
  });
  if (!updated) throw notFound('Widget');
  if (sourceChanged) await widgetCache.drop(ctx.orgId, widgetId);
  return widgetView(updated);
}

export async function deleteWidget(ctx: AuthContext, dashboardId: string, widgetId: string) {
  const { dashboard } = await widgetOf(ctx, dashboardId, widgetId);
  assertCanChange(ctx, dashboard, 'dashboard');
  if (!(await dashboardStore.deleteWidget(ctx.orgId, dashboardId, widgetId))) throw notFound('Widget');
  await widgetCache.drop(ctx.orgId, widgetId);
  return { deleted: true as const };
}

/**
 * Runs the widget's query read-only on its connection (source `widget`), or answers from the widget
 * cache while it is fresh; `refresh` skips the cache read (the fresh result still replaces the cached
 * one). Visibility of the connection is checked on every call, cached or not.
 */
export async function widgetData(
  ctx: AuthContext,
  dashboardId: string,
  widgetId: string,
  { refresh = false }: { refresh?: boolean } = {},
) {
  const { widget } = await widgetOf(ctx, dashboardId, widgetId);
  const missing = [
    ...(widget.query
      ? []
      : [{ path: 'widget.query', message: 'The widget has no query.', code: 'required' }]),
    ...(widget.connectionId
      ? []
      : [{ path: 'widget.connectionId', message: 'The widget has no connection.', code: 'required' }]),
  ];
  if (missing.length)
    throw new AppError(
      400,
      'VALIDATION_ERROR',
      'This widget has no data to run: it needs a query and a connection.',
      {
        issues: missing,
      },
    );
  await connectionForUse(ctx, widget.connectionId!);
  const seconds = cacheSecondsOf(widget);
  const hit = refresh ? undefined : await widgetCache.read(widget, seconds);
  if (hit) return { ...hit.result, cached: true, cachedAt: hit.cachedAt };
  const result = await executeReadOnly(ctx, widget.connectionId!, { sql: widget.query!, source: 'widget' });
  if (seconds <= 0) return { ...result, cached: false, cachedAt: null, cacheSkipped: 'DISABLED' as const };
  const stored = await widgetCache.write(widget, result, seconds);
  return {
    ...result,
    cached: false,
    cachedAt: null,
    ...(stored ? {} : { cacheSkipped: 'TOO_LARGE' as const }),
  };
}
