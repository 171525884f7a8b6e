import type * as z from 'zod/mini';
import type { AuthContext } from '../auth/context';
import { pageOf } from '../http/envelope';
import type { PageQuery } from '../http/schemas';
import { notFound } from '../platform/errors';
import { newId, nowIso } from '../platform/ids';
import { assertCanChange, canSee, onAssignedConnection } from './access';
import type { DashboardCreate, DashboardUpdate } from './api';
import { widgetCache } from './cache';
import { type DashboardRecord, dashboardStore, type WidgetRecord } from './store';

export function widgetView(w: WidgetRecord) {
  return {
    id: w.id,
    dashboardId: w.dashboardId,
    connectionId: w.connectionId ?? null,
    type: w.type,
    title: w.title,
    query: w.query ?? null,
    config: w.config,
    width: w.width,
    height: w.height,
    position: w.position,
    createdAt: w.createdAt,
    updatedAt: w.updatedAt,
  };
}

export function dashboardView(d: DashboardRecord, widgets: WidgetRecord[]) {
  return {
    id: d.id,
    orgId: d.orgId,
    title: d.title,
    description: d.description ?? null,
    isPublic: d.isPublic,
    createdBy: d.createdBy,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
    widgets: widgets.map(widgetView),
  };
}

/** The dashboard if the caller may see it; 404 otherwise (missing, another organization, or private). */
export async function visibleDashboard(ctx: AuthContext, id: string): Promise<DashboardRecord> {
  const d = await dashboardStore.getDashboard(ctx.orgId, id);
  if (!d || !canSee(ctx, d)) throw notFound('Dashboard');
  return d;
}

export async function listDashboards(ctx: AuthContext, q: PageQuery) {
  const all = (await dashboardStore.listWithWidgets(ctx.orgId))
    .filter((x) => canSee(ctx, x.dashboard))
    .sort(
      (a, b) =>
        b.dashboard.createdAt.localeCompare(a.dashboard.createdAt) ||
        a.dashboard.id.localeCompare(b.dashboard.id),
    );
  return pageOf(
    all.map((x) =>
      dashboardView(
        x.dashboard,
        x.widgets.filter((w) => onAssignedConnection(ctx, w)),
      ),
    ),
    q,
  );
}

export async function createDashboard(ctx: AuthContext, input: z.output<typeof DashboardCreate>) {
  const now = nowIso();
  const d: DashboardRecord = {
    id: newId(),
    orgId: ctx.orgId,
    title: input.title,
    description: input.description ?? null,
    isPublic: input.isPublic,
    createdBy: ctx.userId,
    createdAt: now,
    updatedAt: now,
  };
  await dashboardStore.createDashboard(d);
  return dashboardView(d, []);
}

export async function getDashboard(ctx: AuthContext, id: string) {
  const found = await dashboardStore.getWithWidgets(ctx.orgId, id);
  if (!found || !canSee(ctx, found.dashboard)) throw notFound('Dashboard');
  return dashboardView(
    found.dashboard,
    found.widgets.filter((w) => onAssignedConnection(ctx, w)),
  );
}

export async function updateDashboard(ctx: AuthContext, id: string, input: z.output<typeof DashboardUpdate>) {
  const d = await visibleDashboard(ctx, id);
  assertCanChange(ctx, d, 'dashboard');
  const updated = await dashboardStore.updateDashboard(ctx.orgId, id, {
    ...(input.title !== undefined ? { title: input.title } : {}),
    ...(input.description !== undefined ? { description: input.description } : {}),
    ...(input.isPublic !== undefined ? { isPublic: input.isPublic } : {}),
    updatedAt: nowIso(),
  });
  if (!updated) throw notFound('Dashboard');
  return getDashboard(ctx, id);
}

/** Deletes every widget (and its cached data) of a dashboard; safe to repeat. */
async function sweepWidgets(orgId: string, dashboardId: string) {
  for (const w of await dashboardStore.listWidgets(orgId, dashboardId)) {
    await widgetCache.drop(orgId, w.id);
    await dashboardStore.deleteWidget(orgId, dashboardId, w.id);
  }
}

/**
 * Cascade delete, idempotent: widgets first (so an interrupted delete leaves the dashboard in place
 * and a repeat finishes the job), then the dashboard, then one more sweep for a widget added by a
 * concurrent request in between (widget creation re-checks its dashboard after writing).
 */
export async function deleteDashboard(ctx: AuthContext, id: string) {
  const d = await visibleDashboard(ctx, id);
  assertCanChange(ctx, d, 'dashboard');
  await sweepWidgets(ctx.orgId, id);
  await dashboardStore.deleteDashboardItem(ctx.orgId, id);
  await sweepWidgets(ctx.orgId, id);
  return { deleted: true as const };
}
