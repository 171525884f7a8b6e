import type { ComponentChildren } from 'preact';
import { useRef, useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import { Chart, type ChartConfig, type ChartKind, loadChartJs } from './chart';
import { formatMetric } from './format';
import { ErrorAlert, Loading, useLoad } from './load';
import { Markdown } from './markdown';
import { cell, type Result } from './result';
import { ResultTable } from './result-table';

export interface WidgetRecord {
  id: string;
  dashboardId: string;
  type: 'TABLE' | 'METRIC' | 'LINE' | 'BAR' | 'AREA' | 'PIE' | 'SCATTER' | 'TEXT';
  title: string;
  query: string | null;
  connectionId?: string | null;
  config: string;
  width: number;
  height: number;
  position: number;
}

export function parseConfig(config: string): ChartConfig & { text?: string; markdown?: string } {
  try {
    const v = JSON.parse(config || '{}');
    return v && typeof v === 'object' && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

/** One widget: a region named by its title (DashboardGrid places it on the dashboard's 12-column grid). */
export function Widget({
  widget: w,
  handle,
  actions,
  notice,
}: {
  widget: WidgetRecord;
  /** The "Move …" handle before the title, for those who may change the layout. */
  handle?: ComponentChildren;
  /** Buttons beside the title (Edit, Delete). */
  actions?: ComponentChildren;
  /** Shown under the title instead of the content while set (a confirmation asked about this widget). */
  notice?: ComponentChildren;
}) {
  const [round, setRound] = useState(0);
  // Set by "Refresh": the next load skips the widget cache (refresh=true) and replaces the cached result.
  const skipCache = useRef(false);
  const config = parseConfig(w.config);
  // The chart library starts loading with the widget, beside its data, not after it.
  if (w.type !== 'TEXT' && w.type !== 'TABLE' && w.type !== 'METRIC') loadChartJs();
  const data = useLoad(
    () => {
      if (w.type === 'TEXT') return Promise.resolve(null);
      const refresh = skipCache.current;
      skipCache.current = false;
      return ok(
        api.GET('/dashboards/{id}/widgets/{widgetId}/data', {
          params: { path: { id: w.dashboardId, widgetId: w.id }, query: refresh ? { refresh: 'true' } : {} },
        }),
      );
    },
    // A changed query or connection (an edit) asks for the data again.
    [w.id, w.query, w.connectionId, round],
  );
  const titleId = `widget-${w.id}`;
  return (
    <section class="widget grid-stack-item-content" aria-labelledby={titleId} data-widget-type={w.type}>
      <header>
        {handle}
        <h2 id={titleId}>{w.title}</h2>
        <span class="widget-tools">
          {w.type !== 'TEXT' && (
            <>
              {data.data?.cached && (
                <span class="badge muted" title={data.data.cachedAt ?? ''}>
                  Cached {data.data.cachedAt ? new Date(data.data.cachedAt).toLocaleTimeString() : ''}
                </span>
              )}
              <button
                type="button"
                class="link"
                disabled={data.loading}
                onClick={() => {
                  skipCache.current = true;
                  setRound(round + 1);
                }}
                aria-label={`Refresh ${w.title}`}
              >
                Refresh
              </button>
            </>
          )}
          {actions}
        </span>
      </header>
      {notice ||
        (w.type === 'TEXT' ? (
          <Markdown source={config.markdown ?? config.text ?? w.query ?? ''} />
        ) : (
          <>
            <ErrorAlert error={data.error} />
            {data.loading && !data.data && <Loading what="data" />}
            {data.data && <WidgetBody type={w.type} result={data.data} config={config} title={w.title} />}
          </>
        ))}
    </section>
  );
}

export function WidgetBody({
  type,
  result,
  config,
  title,
}: {
  type: WidgetRecord['type'];
  result: Result;
  config: ChartConfig;
  title: string;
}) {
  if (type === 'TABLE') return <ResultTable result={result} summary={false} />;
  if (!result.rows.length) return <p class="muted widget-empty">No rows</p>;
  if (type === 'METRIC') {
    const col = (typeof config.y === 'string' && config.y) || result.columns[0];
    const raw = result.rows[0]?.[col];
    return (
      <p class="metric">
        <span class="metric-value" title={cell(raw)}>
          {formatMetric(raw)}
        </span>
        <span class="metric-label">{col}</span>
      </p>
    );
  }
  return <Chart kind={type as ChartKind} result={result} config={config} title={title} />;
}
