import * as z from 'zod/mini';
import type { AuthContext } from '../auth/context';
import { DashboardCreate, WidgetCreate } from '../dashboards/api';
import { createDashboard } from '../dashboards/dashboards';
import { createWidget } from '../dashboards/widgets';

export const DEMO_DASHBOARD_TITLE = 'Demo SaaS metrics';

type Kind = 'TABLE' | 'METRIC' | 'LINE' | 'BAR' | 'AREA' | 'PIE' | 'SCATTER' | 'TEXT';

/** The demo dashboard's widgets, in grid order (12 columns; height in rows). */
export const DEMO_WIDGETS: {
  type: Kind;
  title: string;
  query?: string;
  config: object;
  width: number;
  height: number;
}[] = [
  {
    type: 'METRIC',
    title: 'MRR (USD)',
    query: "SELECT ROUND(SUM(mrr_cents) / 100.0) AS mrr_usd FROM subscriptions WHERE status = 'active'",
    config: { y: 'mrr_usd' },
    width: 3,
    height: 1,
  },
  {
    type: 'METRIC',
    title: 'Active accounts',
    query: "SELECT COUNT(*) AS active_accounts FROM accounts WHERE status = 'active'",
    config: { y: 'active_accounts' },
    width: 3,
    height: 1,
  },
  {
    type: 'TEXT',
    title: 'About this dashboard',
    config: {
      markdown:
        'Made from the **demo SQLite database** (`Demo SaaS (SQLite)`). Open *Query* to run your own SQL on it, or *Chat* to ask in plain language.',
    },
    width: 6,
    height: 1,
  },
  {
    type: 'BAR',
    title: 'MRR by plan',
    query:
      "SELECT p.name AS plan, ROUND(SUM(s.mrr_cents) / 100.0) AS mrr_usd FROM subscriptions s JOIN plans p ON p.id = s.plan_id WHERE s.status = 'active' GROUP BY p.name ORDER BY mrr_usd DESC",
    config: { x: 'plan', y: 'mrr_usd' },
    width: 6,
    height: 2,
  },
  {
    type: 'LINE',
    title: 'Signups by month',
    query:
      'SELECT substr(created_at, 1, 7) AS month, COUNT(*) AS signups FROM accounts GROUP BY month ORDER BY month',
    config: { x: 'month', y: 'signups' },
    width: 6,
    height: 2,
  },
  {
    type: 'AREA',
    title: 'Revenue by month (USD)',
    query: 'SELECT month, revenue_usd FROM monthly_revenue ORDER BY month',
    config: { x: 'month', y: 'revenue_usd' },
    width: 8,
    height: 2,
  },
  {
    type: 'PIE',
    title: 'Accounts by status (churn)',
    query: 'SELECT status, COUNT(*) AS accounts FROM accounts GROUP BY status ORDER BY status',
    config: { x: 'status', y: 'accounts' },
    width: 4,
    height: 2,
  },
];

/** Creates the demo dashboard over the demo connection; answers its id. */
export async function createDemoDashboard(ctx: AuthContext, connectionId: string): Promise<string> {
  const d = await createDashboard(
    ctx,
    z.parse(DashboardCreate, {
      title: DEMO_DASHBOARD_TITLE,
      description: 'MRR by plan, signups by month and churn, from the demo database.',
      isPublic: true,
    }),
  );
  let position = 0;
  for (const w of DEMO_WIDGETS)
    await createWidget(
      ctx,
      d.id,
      z.parse(WidgetCreate, {
        type: w.type,
        title: w.title,
        query: w.query ?? null,
        connectionId: w.query ? connectionId : null,
        config: JSON.stringify(w.config),
        width: w.width,
        height: w.height,
        position: position++,
      }),
    );
  return d.id;
}
