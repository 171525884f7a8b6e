import { useState } from 'preact/hooks';
import { type ApiError, api, ok } from '../api/client';
import { mayChange, useMe } from '../me';
import { href } from '../router';
import { axes, type ChartKind } from './chart';
import { fieldErrors } from './field-errors';
import { ErrorAlert, Loading, useLoad } from './load';
import type { Result } from './result';
import { TextField } from './text-field';
import { submitWith, useSubmit } from './use-submit';
import { WidgetBody, type WidgetRecord } from './widget';

const CHART_KINDS: ChartKind[] = ['BAR', 'LINE', 'AREA', 'PIE', 'SCATTER'];
const WIDGET_TYPES: WidgetRecord['type'][] = ['TABLE', 'METRIC', 'BAR', 'LINE', 'AREA', 'PIE', 'SCATTER'];

/** What was run: the statement and its connection (the editor may have changed since). */
export interface Ran {
  sql: string;
  connectionId: string;
}

type Panel = 'chart' | 'save' | 'dashboard';

/**
 * Under a query result: "Chart" (chart type and columns, drawn by the widgets' chart code), "Save as
 * query" and "Add to dashboard" (as a widget with the chart's columns). Each acts on the statement that
 * produced the result, not on whatever the editor holds now.
 */
export function ResultActions({ result, ran }: { result: Result; ran: Ran }) {
  const [panel, setPanel] = useState<Panel | null>(null);
  const first = axes(result, {});
  const [chart, setChart] = useState<{ kind: ChartKind; x: string; ys: string[] }>({
    kind: 'BAR',
    x: first.x,
    ys: first.ys,
  });
  const toggle = (p: Panel) => (
    <button
      type="button"
      class="secondary"
      aria-expanded={panel === p}
      aria-controls={`result-${p}`}
      onClick={() => setPanel(panel === p ? null : p)}
    >
      {p === 'chart' ? 'Chart' : p === 'save' ? 'Save as query' : 'Add to dashboard'}
    </button>
  );
  return (
    <div class="result-actions">
      <p class="result-buttons">
        {toggle('chart')} {toggle('save')} {toggle('dashboard')}
      </p>
      {panel === 'chart' && (
        <section id="result-chart" aria-label="Chart of the result">
          <ChartPicker result={result} chart={chart} onChange={setChart} />
        </section>
      )}
      {panel === 'save' && (
        <section id="result-save" aria-label="Save as query">
          <SaveAsQuery ran={ran} />
        </section>
      )}
      {panel === 'dashboard' && (
        <section id="result-dashboard" aria-label="Add to dashboard">
          <AddToDashboard ran={ran} chart={chart} />
        </section>
      )}
    </div>
  );
}

function ChartPicker({
  result,
  chart,
  onChange,
}: {
  result: Result;
  chart: { kind: ChartKind; x: string; ys: string[] };
  onChange: (c: { kind: ChartKind; x: string; ys: string[] }) => void;
}) {
  const others = result.columns.filter((c) => c !== chart.x);
  return (
    <>
      <div class="inline">
        <div class="field">
          <label for="chart-kind">Chart type</label>
          <select
            id="chart-kind"
            value={chart.kind}
            onChange={(e) => onChange({ ...chart, kind: e.currentTarget.value as ChartKind })}
          >
            {CHART_KINDS.map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="chart-x">X axis (labels)</label>
          <select
            id="chart-x"
            value={chart.x}
            onChange={(e) => {
              const x = e.currentTarget.value;
              onChange({ ...chart, x, ys: chart.ys.filter((y) => y !== x) });
            }}
          >
            {result.columns.map((c) => (
              <option key={c} value={c}>
                {c}
              </option>
            ))}
          </select>
        </div>
        <fieldset class="chart-series">
          <legend>Values</legend>
          {others.map((c) => (
            <label class="check" key={c}>
              <input
                type="checkbox"
                checked={chart.ys.includes(c)}
                onChange={(e) =>
                  onChange({
                    ...chart,
                    ys: e.currentTarget.checked ? [...chart.ys, c] : chart.ys.filter((y) => y !== c),
                  })
                }
              />{' '}
              {c}
            </label>
          ))}
        </fieldset>
      </div>
      {chart.ys.length === 0 ? (
        <p class="muted">Choose at least one column of values to draw.</p>
      ) : (
        <section class="widget preview" aria-label="Chart preview">
          <WidgetBody
            type={chart.kind}
            result={result}
            config={{ x: chart.x, y: chart.ys }}
            title="Query result"
          />
        </section>
      )}
    </>
  );
}

function SaveAsQuery({ ran }: { ran: Ran }) {
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const [saved, setSaved] = useState<{ id: string; name: string } | null>(null);
  const errors = fieldErrors(error);
  const save = useSubmit(async () => {
    setError(null);
    setSaved(null);
    try {
      const q = await ok(
        api.POST('/saved-queries', {
          body: {
            name,
            query: ran.sql,
            connectionId: ran.connectionId,
            ...(description.trim() ? { description: description.trim() } : {}),
          },
        }),
      );
      setSaved({ id: q.id, name: q.name });
      setName('');
      setDescription('');
    } catch (e) {
      setError(e as ApiError);
    }
  });
  return (
    <form class="stack" onSubmit={submitWith(save.run)}>
      <TextField id="save-name" label="Name" value={name} onInput={setName} error={errors.name} required />
      <TextField
        id="save-description"
        label="Description (optional)"
        value={description}
        onInput={setDescription}
        error={errors.description}
      />
      <ErrorAlert error={error && !errors.name && !errors.description ? error : null} />
      <button type="submit" disabled={save.busy}>
        Save
      </button>
      {saved && (
        <p role="status">
          Saved as query “{saved.name}”. <a href={href('saved-queries', saved.id)}>Open it</a>
        </p>
      )}
    </form>
  );
}

type DashboardItem = { id: string; title: string; widgets: { position: number }[]; createdBy?: string };

function AddToDashboard({ ran, chart }: { ran: Ran; chart: { kind: ChartKind; x: string; ys: string[] } }) {
  const me = useMe();
  const boards = useLoad(() => ok(api.GET('/dashboards', { params: { query: { pageSize: 100 } } })));
  // Admins add to any dashboard; a member only to one it created (`createdBy`; without it, none).
  const mine = ((boards.data ?? []) as DashboardItem[]).filter((d) => mayChange(me, d));
  const [dashboardId, setDashboardId] = useState('');
  const [title, setTitle] = useState('');
  const [type, setType] = useState<WidgetRecord['type']>('TABLE');
  const [error, setError] = useState<ApiError | null>(null);
  const [added, setAdded] = useState<{ dashboardId: string; dashboard: string; title: string } | null>(null);
  const errors = fieldErrors(error);
  const chosen = mine.find((d) => d.id === dashboardId) ?? mine[0];
  const add = useSubmit(async () => {
    setError(null);
    setAdded(null);
    if (!chosen) return;
    // The chart's columns when it draws them; a table or number takes the first column's default.
    const config =
      type === 'TABLE' ? {} : type === 'METRIC' ? { y: chart.ys[0] } : { x: chart.x, y: chart.ys };
    try {
      // After the dashboard's last widget (read again: someone may have added one meanwhile).
      const board = await ok(api.GET('/dashboards/{id}', { params: { path: { id: chosen.id } } }));
      const position = board.widgets.reduce((max, w) => Math.max(max, w.position + 1), 0);
      await ok(
        api.POST('/dashboards/{id}/widgets', {
          params: { path: { id: chosen.id } },
          body: {
            type,
            title,
            query: ran.sql,
            connectionId: ran.connectionId,
            config: JSON.stringify(config),
            width: 6,
            height: 2,
            position,
          },
        }),
      );
      setAdded({ dashboardId: chosen.id, dashboard: chosen.title, title });
      setTitle('');
    } catch (e) {
      setError(e as ApiError);
    }
  });
  if (boards.loading && !boards.data) return <Loading what="dashboards" />;
  if (boards.error) return <ErrorAlert error={boards.error} />;
  if (!mine.length)
    return (
      <p class="muted">
        There is no dashboard you may add to. Create one under <a href={href('dashboards')}>Dashboards</a>.
      </p>
    );
  return (
    <form class="stack" onSubmit={submitWith(add.run)}>
      <div class="field">
        <label for="add-dashboard">Dashboard</label>
        <select id="add-dashboard" value={chosen?.id} onChange={(e) => setDashboardId(e.currentTarget.value)}>
          {mine.map((d) => (
            <option key={d.id} value={d.id}>
              {d.title}
            </option>
          ))}
        </select>
      </div>
      <TextField
        id="add-title"
        label="Title"
        value={title}
        onInput={setTitle}
        error={errors.title}
        required
      />
      <div class="field">
        <label for="add-type">Chart type</label>
        <select
          id="add-type"
          value={type}
          onChange={(e) => setType(e.currentTarget.value as WidgetRecord['type'])}
          aria-describedby="add-type-hint"
        >
          {WIDGET_TYPES.map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </select>
        <span id="add-type-hint" class="muted">
          A chart draws {chart.ys.length ? chart.ys.join(', ') : 'the numeric columns'} by {chart.x} (set
          under “Chart”).
        </span>
      </div>
      <ErrorAlert error={error && !errors.title ? error : null} />
      <button type="submit" disabled={add.busy}>
        Add
      </button>
      {added && (
        <p role="status">
          Added “{added.title}” to <a href={href('dashboards', added.dashboardId)}>{added.dashboard}</a>.
        </p>
      )}
    </form>
  );
}
