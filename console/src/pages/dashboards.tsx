import { useState } from 'preact/hooks';
import { type ApiError, api, ok } from '../api/client';
import { ConnectionSelect } from '../components/connection-select';
import { fieldErrors } from '../components/field-errors';
import { ErrorAlert, Loading, useLoad } from '../components/load';
import type { Result } from '../components/result-table';
import { parseConfig, Widget, WidgetBody, type WidgetRecord } from '../components/widget';
import { href } from '../router';

export function DashboardsPage({ id }: { id?: string }) {
  return id ? <DashboardView id={id} /> : <DashboardList />;
}

function DashboardList() {
  const list = useLoad(() => ok(api.GET('/dashboards', { params: { query: { pageSize: 100 } } })));
  const [title, setTitle] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const create = async (e: Event) => {
    e.preventDefault();
    try {
      const d = await ok(api.POST('/dashboards', { body: { title } }));
      location.hash = href('dashboards', d.id);
    } catch (err) {
      setError(err as ApiError);
    }
  };
  return (
    <>
      <h1>Dashboards</h1>
      <ErrorAlert error={list.error} />
      {list.loading && !list.data && <Loading what="dashboards" />}
      <ul class="cards">
        {(list.data ?? []).map((d) => (
          <li key={d.id}>
            <a href={href('dashboards', d.id)}>{d.title}</a>
            {d.description && <p class="muted">{d.description}</p>}
          </li>
        ))}
      </ul>
      {list.data?.length === 0 && <p class="muted">No dashboards yet.</p>}
      <form onSubmit={create} class="inline">
        <div class="field">
          <label for="new-dashboard">New dashboard title</label>
          <input id="new-dashboard" value={title} onInput={(e) => setTitle(e.currentTarget.value)} required />
        </div>
        <button type="submit">Create dashboard</button>
      </form>
      <ErrorAlert error={error} />
    </>
  );
}

function DashboardView({ id }: { id: string }) {
  const d = useLoad(() => ok(api.GET('/dashboards/{id}', { params: { path: { id } } })), [id]);
  const widgets = [...((d.data?.widgets ?? []) as WidgetRecord[])].sort((a, b) => a.position - b.position);
  return (
    <>
      <p>
        <a href={href('dashboards')}>All dashboards</a>
      </p>
      <ErrorAlert error={d.error} />
      {d.loading && !d.data && <Loading what="dashboard" />}
      {d.data && (
        <>
          <h1>{d.data.title}</h1>
          {d.data.description && <p class="muted">{d.data.description}</p>}
          <div class="grid">
            {widgets.map((w) => (
              <Widget key={w.id} widget={w} />
            ))}
          </div>
          {widgets.length === 0 && <p class="muted">No widgets yet.</p>}
          <NewWidget dashboardId={id} position={widgets.length} onCreated={() => d.reload()} />
        </>
      )}
    </>
  );
}

const TYPES = ['TABLE', 'METRIC', 'LINE', 'BAR', 'AREA', 'PIE', 'SCATTER', 'TEXT'] as const;

/** Adds a widget; "Preview" runs its query read-only and draws it before it is saved. */
function NewWidget({
  dashboardId,
  position,
  onCreated,
}: {
  dashboardId: string;
  position: number;
  onCreated: () => void;
}) {
  const [f, setF] = useState({
    title: '',
    type: 'BAR' as WidgetRecord['type'],
    query: '',
    connectionId: '',
    width: '6',
    height: '2',
    config: '{}',
  });
  const [error, setError] = useState<ApiError | null>(null);
  const [preview, setPreview] = useState<Result | null>(null);
  // The form (and its connection list) is made when opened, so a dashboard's first render asks for its widgets only.
  const [open, setOpen] = useState(false);
  const errors = fieldErrors(error);
  const set = (k: keyof typeof f) => (e: Event) =>
    setF({ ...f, [k]: (e.currentTarget as HTMLInputElement).value });
  const runPreview = async () => {
    setError(null);
    try {
      setPreview(
        await ok(
          api.POST('/connections/{id}/query', {
            params: { path: { id: f.connectionId } },
            body: { sql: f.query, maxRows: 200 },
          }),
        ),
      );
    } catch (err) {
      setError(err as ApiError);
    }
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      await ok(
        api.POST('/dashboards/{id}/widgets', {
          params: { path: { id: dashboardId } },
          body: {
            title: f.title,
            type: f.type,
            query: f.type === 'TEXT' ? null : f.query,
            connectionId: f.type === 'TEXT' ? null : f.connectionId || null,
            config: f.config,
            width: Number(f.width),
            height: Number(f.height),
            position,
          },
        }),
      );
      setPreview(null);
      onCreated();
    } catch (err) {
      setError(err as ApiError);
    }
  };
  const text = (k: keyof typeof f, label: string) => (
    <div class="field">
      <label for={`w-${k}`}>{label}</label>
      <input id={`w-${k}`} value={f[k]} onInput={set(k)} aria-invalid={errors[k] ? true : undefined} />
      {errors[k] && <span class="field-error">{errors[k]}</span>}
    </div>
  );
  return (
    <details class="new" onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>Add widget</summary>
      {open && (
        <form onSubmit={submit} class="stack">
          {text('title', 'Widget title')}
          <div class="field">
            <label for="w-type">Widget type</label>
            <select id="w-type" value={f.type} onChange={set('type')}>
              {TYPES.map((t) => (
                <option key={t}>{t}</option>
              ))}
            </select>
          </div>
          {f.type !== 'TEXT' && (
            <ConnectionSelect
              id="w-connection"
              value={f.connectionId}
              onChange={(v) => setF({ ...f, connectionId: v })}
            />
          )}
          {f.type !== 'TEXT' && (
            <div class="field">
              <label for="w-query">Widget SQL</label>
              <textarea id="w-query" class="code" rows={4} value={f.query} onInput={set('query')} />
            </div>
          )}
          {text('config', 'Options (JSON: x, y, markdown, cacheSeconds)')}
          {text('width', 'Width (1–12 columns)')}
          {text('height', 'Height (rows)')}
          <ErrorAlert error={error} />
          <p>
            {f.type !== 'TEXT' && (
              <button type="button" class="secondary" onClick={runPreview}>
                Preview
              </button>
            )}{' '}
            <button type="submit">Add widget</button>
          </p>
        </form>
      )}
      {preview && (
        <section aria-label="Preview" class="widget preview">
          <WidgetBody
            type={f.type}
            result={preview}
            config={parseConfig(f.config)}
            title={f.title || 'Preview'}
          />
        </section>
      )}
    </details>
  );
}
