import { db, strip } from '../platform/db/store';
import type { WIDGET_TYPES } from './api';

export type WidgetType = (typeof WIDGET_TYPES)[number];

export interface DashboardRecord {
  id: string;
  orgId: string;
  title: string;
  description: string | null;
  isPublic: boolean;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

export interface WidgetRecord {
  id: string;
  orgId: string;
  dashboardId: string;
  connectionId: string | null;
  type: WidgetType;
  title: string;
  query: string | null;
  config: string;
  width: number;
  height: number;
  position: number;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

/**
 * Keys: a dashboard is `ORG#o / DASH#d`, its widgets `ORG#o / DASH#d#W#w`, so a dashboard with its
 * widgets is one Query on the prefix `DASH#d` (ids are fixed-length UUIDs, so no prefix overlaps
 * another id). Widget result caches live apart, under `ORG#o / WCACHE#w`, so that reading a
 * dashboard never reads cached results.
 */
const pk = (orgId: string) => `ORG#${orgId}`;
const dashSk = (id: string) => `DASH#${id}`;
const widgetSk = (dashboardId: string, id: string) => `DASH#${dashboardId}#W#${id}`;

const isWidget = (item: Record<string, unknown>) => (item.sk as string).includes('#W#');

/** Widgets in display order: position, then creation time, then id (stable). */
export const byPosition = (a: WidgetRecord, b: WidgetRecord) =>
  a.position - b.position || a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id);

export const dashboardStore = {
  async createDashboard(d: DashboardRecord): Promise<void> {
    await db.put({ pk: pk(d.orgId), sk: dashSk(d.id), type: 'dashboard', ...d }, { ifAbsent: true });
  },

  async getDashboard(orgId: string, id: string): Promise<DashboardRecord | undefined> {
    const item = await db.get(pk(orgId), dashSk(id));
    return item ? (strip(item) as unknown as DashboardRecord) : undefined;
  },

  /** The dashboard and its widgets (ordered by position), in one Query. */
  async getWithWidgets(
    orgId: string,
    id: string,
  ): Promise<{ dashboard: DashboardRecord; widgets: WidgetRecord[] } | undefined> {
    const items = await db.query({ pk: pk(orgId), prefix: dashSk(id) });
    const dash = items.find((i) => !isWidget(i));
    if (!dash) return undefined;
    const widgets = items.filter(isWidget).map((i) => strip(i) as unknown as WidgetRecord);
    return { dashboard: strip(dash) as unknown as DashboardRecord, widgets: widgets.sort(byPosition) };
  },

  /** Every dashboard of the organization with its widgets, in one Query on `DASH#`. */
  async listWithWidgets(
    orgId: string,
  ): Promise<Array<{ dashboard: DashboardRecord; widgets: WidgetRecord[] }>> {
    const items = await db.query({ pk: pk(orgId), prefix: 'DASH#' });
    const byId = new Map<string, { dashboard: DashboardRecord; widgets: WidgetRecord[] }>();
    for (const i of items)
      if (!isWidget(i))
        byId.set(i.id as string, { dashboard: strip(i) as unknown as DashboardRecord, widgets: [] });
    for (const i of items)
      if (isWidget(i)) byId.get(i.dashboardId as string)?.widgets.push(strip(i) as unknown as WidgetRecord);
    for (const d of byId.values()) d.widgets.sort(byPosition);
    return [...byId.values()];
  },

  async updateDashboard(
    orgId: string,
    id: string,
    changes: Partial<Pick<DashboardRecord, 'title' | 'description' | 'isPublic' | 'updatedAt'>>,
  ): Promise<DashboardRecord | undefined> {
    const item = await db.patch(pk(orgId), dashSk(id), changes);
    return item ? (strip(item) as unknown as DashboardRecord) : undefined;
  },

  async deleteDashboardItem(orgId: string, id: string): Promise<void> {
    await db.delete(pk(orgId), dashSk(id));
  },

  async listWidgets(orgId: string, dashboardId: string): Promise<WidgetRecord[]> {
    const items = await db.query({ pk: pk(orgId), prefix: `${dashSk(dashboardId)}#W#` });
    return items.map((i) => strip(i) as unknown as WidgetRecord).sort(byPosition);
  },

  async createWidget(w: WidgetRecord): Promise<void> {
    await db.put({ pk: pk(w.orgId), sk: widgetSk(w.dashboardId, w.id), ...w }, { ifAbsent: true });
  },

  async getWidget(orgId: string, dashboardId: string, id: string): Promise<WidgetRecord | undefined> {
    const item = await db.get(pk(orgId), widgetSk(dashboardId, id));
    return item ? (strip(item) as unknown as WidgetRecord) : undefined;
  },

  /** Sets the given fields (null clears; undefined leaves alone). Undefined when the widget is gone. */
  async updateWidget(
    orgId: string,
    dashboardId: string,
    id: string,
    changes: Partial<Omit<WidgetRecord, 'id' | 'orgId' | 'dashboardId' | 'createdBy' | 'createdAt'>>,
  ): Promise<WidgetRecord | undefined> {
    const set = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined));
    const item = await db.patch(pk(orgId), widgetSk(dashboardId, id), set);
    return item ? (strip(item) as unknown as WidgetRecord) : undefined;
  },

  /** Deletes a widget; false when it did not exist. */
  async deleteWidget(orgId: string, dashboardId: string, id: string): Promise<boolean> {
    return db.delete(pk(orgId), widgetSk(dashboardId, id), { ifExists: true });
  },
};
