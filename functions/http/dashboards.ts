import * as api from '../../shared/dashboards/api';
import {
  createDashboard,
  deleteDashboard,
  getDashboard,
  listDashboards,
  updateDashboard,
} from '../../shared/dashboards/dashboards';
import {
  createWidget,
  deleteWidget,
  listWidgets,
  updateWidget,
  widgetData,
} from '../../shared/dashboards/widgets';
import { httpHandler } from '../../shared/http/handler';
import { on } from '../../shared/http/route';

export const handler = httpHandler([
  on(api.listDashboards, async ({ ctx, query }) => listDashboards(ctx, query)),
  on(api.createDashboard, async ({ ctx, body }) => ({ status: 201, data: await createDashboard(ctx, body) })),
  on(api.getDashboard, async ({ ctx, params }) => ({ data: await getDashboard(ctx, params.id) })),
  on(api.updateDashboard, async ({ ctx, params, body }) => ({
    data: await updateDashboard(ctx, params.id, body),
  })),
  on(api.deleteDashboard, async ({ ctx, params }) => ({ data: await deleteDashboard(ctx, params.id) })),
  on(api.listWidgets, async ({ ctx, params }) => ({ data: await listWidgets(ctx, params.id) })),
  on(api.createWidget, async ({ ctx, params, body }) => ({
    status: 201,
    data: await createWidget(ctx, params.id, body),
  })),
  on(api.updateWidget, async ({ ctx, params, body }) => ({
    data: await updateWidget(ctx, params.id, params.widgetId, body),
  })),
  on(api.deleteWidget, async ({ ctx, params }) => ({
    data: await deleteWidget(ctx, params.id, params.widgetId),
  })),
  on(api.getWidgetData, async ({ ctx, params, query }) => ({
    data: await widgetData(ctx, params.id, params.widgetId, { refresh: query.refresh === 'true' }),
  })),
]);
