import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { type ApiError, api, ok, okPage } from '../api/client';
import { Confirm } from '../components/confirm';
import { ConnectionSelect } from '../components/connection-select';
import { DashboardGrid, type LayoutChange } from '../components/dashboard-grid';
import { fieldErrors } from '../components/field-errors';
import { FormActions } from '../components/form-actions';
import { ErrorAlert, Loading, useLoad } from '../components/load';
import { Markdown } from '../components/markdown';
import { Pager, usePaged } from '../components/pager';
import type { Result } from '../components/result';
import { SqlEditor, type SqlEditorHandle } from '../components/sql-editor';
import { TextField } from '../components/text-field';
import { submitWith, useSubmit } from '../components/use-submit';
import { parseConfig, Widget, WidgetBody, type WidgetRecord } from '../components/widget';
import { mayChange, useMe } from '../me';
import { href } from '../router';

export function DashboardsPage({ id }: { id?: string }) {
  return id ? <DashboardView id={id} /> : <DashboardList />;
}

function DashboardList() {
  const list = usePaged((query) => okPage(api.GET('/dashboards', { params: { query } })));
  const [title, setTitle] = useState('');
  const [isPublic, setIsPublic] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const create = useSubmit(async () => {
    setError(null);
    try {
      const d = await ok(api.POST('/dashboards', { body: { title, isPublic } }));
      location.hash = href('dashboards', d.id);
    } catch (err) {
      setError(err as ApiError);
    }
  });
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
      <Pager label="Dashboards" list={list} />
      <form onSubmit={submitWith(create.run)} class="inline">
        <div class="field">
          <label for="new-dashboard">New dashboard title</label>
          <input id="new-dashboard" value={title} onInput={(e) => setTitle(e.currentTarget.value)} required />
        </div>
        <label class="check">
          <input type="checkbox" checked={isPublic} onChange={(e) => setIsPublic(e.currentTarget.checked)} />{' '}
          Public
        </label>
        <button type="submit" disabled={create.busy}>
          Create dashboard
        </button>
      </form>
      <ErrorAlert error={error} />
    </>
  );
}

/**
 * One dashboard. Keyed by its id: when the address goes from one dashboard straight to another, the page
 * starts afresh (its forms, the widget being edited or deleted), never showing or saving the first one's.
 */
function DashboardView({ id }: { id: string }) {
  return <Dashboard key={id} id={id} />;
}

function Dashboard({ id }: { id: string }) {
  const d = useLoad(() => ok(api.GET('/dashboards/{id}', { params: { path: { id } } })), [id]);
  // Who the key is decides the controls and whether the drag layout loads (it is asked once per sign-in);
  // the widgets do not wait for it: the drag layout takes over the same grid when it is known.
  const me = useMe();
  // useLoad keeps the last data while it loads again: only ever this dashboard's.
  const board = d.data?.id === id ? d.data : undefined;
  const widgets = [...((board?.widgets ?? []) as WidgetRecord[])].sort((a, b) => a.position - b.position);
  // The API's rule (shared/dashboards/access.ts): the creator and admins change a dashboard; other members
  // only see it. Nothing that changes it is shown until the key's role is known.
  const canChange = !!board && mayChange(me, board);
  const [editing, setEditing] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [layoutStatus, setLayoutStatus] = useState('');
  const editedWidget = widgets.find((w) => w.id === editing);
  const title = board?.title;
  // The dashboard's title names the browser tab while it is shown. It arrives after the shell set the
  // page's title ("Dashboards · Loupe"), so it wins; leaving the dashboard puts the page's title back.
  useEffect(() => {
    if (title === undefined) return;
    document.title = `${title} · Loupe`;
    return () => {
      document.title = 'Dashboards · Loupe';
    };
  }, [title]);
  const removeWidget = useSubmit(async (widgetId: string) => {
    setError(null);
    try {
      await ok(api.DELETE('/dashboards/{id}/widgets/{widgetId}', { params: { path: { id, widgetId } } }));
      setDeleting(null);
      if (editing === widgetId) setEditing(null);
      d.reload();
      // The widget and its buttons are gone: the focus goes back to the page, as after a navigation.
      focusById('main');
    } catch (err) {
      setError(err as ApiError);
    }
  });
  // Layout changes are saved one after another, in the order they were made; the dashboard is read
  // again once none is waiting (an answer read between two saves would show an older layout).
  const saving = useRef(Promise.resolve());
  const waiting = useRef(0);
  const saveLayout = (changes: LayoutChange[]) => {
    waiting.current++;
    setLayoutStatus('Saving the layout…');
    saving.current = saving.current.then(async () => {
      try {
        for (const c of changes)
          await ok(
            api.PATCH('/dashboards/{id}/widgets/{widgetId}', {
              params: { path: { id, widgetId: c.id } },
              body: { position: c.position, width: c.width, height: c.height },
            }),
          );
        if (waiting.current === 1) setLayoutStatus('Layout saved.');
      } catch (err) {
        setLayoutStatus('');
        setError(err as ApiError);
      } finally {
        if (--waiting.current === 0) d.reload();
      }
    });
  };
  // After the last one in reading order: its cell and the next free place after it (layout.ts).
  const nextPosition = widgets.reduce((max, w) => Math.max(max, w.position + 1), 0);
  return (
    <>
      <p>
        <a href={href('dashboards')}>All dashboards</a>
      </p>
      <ErrorAlert error={d.error} />
      {d.loading && !board && <Loading what="dashboard" />}
      {board && (
        <>
          <h1>{board.title}</h1>
          {board.description && <p class="muted">{board.description}</p>}
          {me && !canChange && (
            <p class="muted">You can look at this dashboard; its creator and admins change it.</p>
          )}
          <ErrorAlert error={error} />
          <p role="status" class="muted layout-status">
            {layoutStatus}
          </p>
          <DashboardGrid
            widgets={widgets}
            editable={canChange}
            onLayout={saveLayout}
            render={(w, handle) => (
              <Widget
                widget={w}
                handle={handle}
                actions={
                  canChange && (
                    <>
                      <button
                        type="button"
                        class="link"
                        id={`edit-widget-${w.id}`}
                        onClick={() => setEditing(w.id)}
                        aria-label={`Edit widget ${w.title}`}
                        aria-expanded={editing === w.id}
                      >
                        Edit
                      </button>
                      <button
                        type="button"
                        class="link"
                        id={`delete-widget-${w.id}`}
                        onClick={() => setDeleting(w.id)}
                        aria-label={`Delete widget ${w.title}`}
                        aria-expanded={deleting === w.id}
                      >
                        Delete
                      </button>
                    </>
                  )
                }
                notice={
                  // Asked inside the widget itself (in place of its content), where Delete was clicked, with the focus on Cancel.
                  deleting === w.id && (
                    <Revealed focus="button.secondary">
                      <Confirm
                        question={`Delete widget “${w.title}”?`}
                        action="Yes, delete widget"
                        onConfirm={() => removeWidget.run(w.id)}
                        onCancel={() => {
                          setDeleting(null);
                          focusById(`delete-widget-${w.id}`);
                        }}
                      />
                    </Revealed>
                  )
                }
              />
            )}
          />
          {widgets.length === 0 && <p class="muted">No widgets yet.</p>}
          {canChange && editedWidget && (
            // Right after the grid, scrolled to with the focus on its first field.
            <Revealed
              key={editedWidget.id}
              focus="input, select, textarea"
              block="start"
              label={`Edit widget ${editedWidget.title}`}
            >
              <h2>Edit widget</h2>
              <WidgetForm
                dashboardId={id}
                position={editedWidget.position}
                existing={editedWidget}
                onSaved={() => {
                  setEditing(null);
                  d.reload();
                  focusById(`edit-widget-${editedWidget.id}`);
                }}
                onCancel={() => {
                  setEditing(null);
                  focusById(`edit-widget-${editedWidget.id}`);
                }}
              />
            </Revealed>
          )}
          {canChange && (
            <>
              <NewWidget key={id} dashboardId={id} position={nextPosition} onCreated={() => d.reload()} />
              <EditDashboard
                key={id}
                id={id}
                title={board.title}
                description={board.description ?? ''}
                isPublic={board.isPublic}
                onSaved={() => d.reload()}
              />
            </>
          )}
        </>
      )}
    </>
  );
}

/** Puts the focus on the element with this id (a button that opened what just closed), if it is there. */
function focusById(id: string): void {
  document.getElementById(id)?.focus();
}

/**
 * What a button just opened (a form, a confirmation): scrolled into view with the focus on its first
 * element matching `focus`, so that it is where the eye and the keyboard are. With a `label`, a region.
 */
function Revealed({
  focus,
  block = 'nearest',
  label,
  children,
}: {
  focus: string;
  block?: ScrollLogicalPosition;
  label?: string;
  children: ComponentChildren;
}) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    el.scrollIntoView({ block });
    el.querySelector<HTMLElement>(focus)?.focus({ preventScroll: true });
  }, []);
  return label ? (
    <section ref={ref} aria-label={label} class="stack">
      {children}
    </section>
  ) : (
    <div ref={ref}>{children}</div>
  );
}

/** Renames or re-describes the dashboard (PATCH), or deletes it with its widgets after a confirmation. */
function EditDashboard({
  id,
  title,
  description,
  isPublic,
  onSaved,
}: {
  id: string;
  title: string;
  description: string;
  isPublic: boolean;
  onSaved: () => void;
}) {
  const [f, setF] = useState({ title, description });
  const [shared, setShared] = useState(isPublic);
  const [error, setError] = useState<ApiError | null>(null);
  const [confirming, setConfirming] = useState(false);
  const errors = fieldErrors(error);
  const save = useSubmit(async () => {
    setError(null);
    try {
      await ok(
        api.PATCH('/dashboards/{id}', {
          params: { path: { id } },
          body: { title: f.title, description: f.description || null, isPublic: shared },
        }),
      );
      onSaved();
    } catch (err) {
      setError(err as ApiError);
    }
  });
  const remove = useSubmit(async () => {
    setError(null);
    try {
      await ok(api.DELETE('/dashboards/{id}', { params: { path: { id } } }));
      location.hash = href('dashboards');
    } catch (err) {
      setError(err as ApiError);
    }
  });
  const field = (k: keyof typeof f, label: string) => (
    <TextField
      id={`d-${k}`}
      label={label}
      value={f[k]}
      onInput={(v) => setF({ ...f, [k]: v })}
      error={errors[k]}
    />
  );
  return (
    <details class="new">
      <summary>Edit dashboard</summary>
      <form onSubmit={submitWith(save.run)} class="stack">
        {field('title', 'Dashboard title')}
        {field('description', 'Dashboard description')}
        <label class="check">
          <input type="checkbox" checked={shared} onChange={(e) => setShared(e.currentTarget.checked)} />{' '}
          Public: everyone in the organization sees it (only you and admins change it)
        </label>
        <ErrorAlert error={error} />
        <p>
          <button type="submit" disabled={save.busy}>
            Save dashboard
          </button>{' '}
          <button type="button" class="secondary" onClick={() => setConfirming(true)}>
            Delete dashboard
          </button>
        </p>
      </form>
      {confirming && (
        <Confirm
          question={`Delete dashboard “${title}” and all its widgets?`}
          action="Yes, delete dashboard"
          onConfirm={() => remove.run()}
          onCancel={() => setConfirming(false)}
        />
      )}
    </details>
  );
}

const TYPES = ['TABLE', 'METRIC', 'LINE', 'BAR', 'AREA', 'PIE', 'SCATTER', 'TEXT'] as const;

/** Adds a widget, in a disclosure made when opened (so a dashboard's first render asks for its widgets only). */
function NewWidget({
  dashboardId,
  position,
  onCreated,
}: {
  dashboardId: string;
  position: number;
  onCreated: () => void;
}) {
  const [open, setOpen] = useState(false);
  // A new form (empty fields) after each widget added, and a status saying it was.
  const [round, setRound] = useState(0);
  const [status, setStatus] = useState('');
  return (
    <details class="new" onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>Add widget</summary>
      <p role="status" class="muted">
        {status}
      </p>
      {open && (
        <WidgetForm
          key={round}
          dashboardId={dashboardId}
          position={position}
          onSaved={(title) => {
            setRound(round + 1);
            setStatus(`Widget added: ${title}.`);
            onCreated();
          }}
        />
      )}
    </details>
  );
}

/**
 * Adds a widget (POST) or, given `existing`, changes it (PATCH), prefilled; "Preview" runs its query
 * read-only and draws it before it is saved.
 */
function WidgetForm({
  dashboardId,
  position,
  existing,
  onSaved,
  onCancel,
}: {
  dashboardId: string;
  position: number;
  existing?: WidgetRecord;
  onSaved: (title: string) => void;
  onCancel?: () => void;
}) {
  const initial = parseConfig(existing?.config ?? '{}');
  const [f, setF] = useState({
    title: existing?.title ?? '',
    type: existing?.type ?? ('BAR' as WidgetRecord['type']),
    query: existing?.query ?? '',
    connectionId: existing?.connectionId ?? '',
    width: String(existing?.width ?? 6),
    height: String(existing?.height ?? 2),
    config: existing?.config ?? '{}',
    markdown: initial.markdown ?? initial.text ?? '',
  });
  const [error, setError] = useState<ApiError | null>(null);
  const [preview, setPreview] = useState<Result | null>(null);
  const sqlEditor = useRef<SqlEditorHandle | null>(null);
  // Checked here before Preview asks the API (which needs a connection and a statement).
  const [previewProblem, setPreviewProblem] = useState<{
    field: 'connectionId' | 'query';
    message: string;
  } | null>(null);
  const errors = fieldErrors(error);
  if (previewProblem) errors[previewProblem.field] ??= previewProblem.message;
  // Ids differ between the add form and the edit form, which can be open together.
  const prefix = existing ? 'e' : 'w';
  const set = (k: keyof typeof f) => (e: Event) =>
    setF({ ...f, [k]: (e.currentTarget as HTMLInputElement).value });
  const runPreview = async () => {
    setError(null);
    setPreview(null);
    const problem = !f.connectionId
      ? ({ field: 'connectionId', message: 'Choose a connection to preview the widget.' } as const)
      : !f.query.trim()
        ? ({ field: 'query', message: 'Write the widget’s SQL to preview it.' } as const)
        : null;
    setPreviewProblem(problem);
    if (problem) {
      if (problem.field === 'query') sqlEditor.current?.focus();
      else document.getElementById(`${prefix}-connection`)?.focus();
      return;
    }
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
  const submit = useSubmit(async () => {
    setError(null);
    setPreviewProblem(null);
    // A TEXT widget keeps its Markdown in config.markdown (the stored shape), typed in its own field.
    const config =
      f.type === 'TEXT'
        ? JSON.stringify({ ...withoutText(parseConfig(f.config)), markdown: f.markdown })
        : f.config;
    const body = {
      title: f.title,
      type: f.type,
      query: f.type === 'TEXT' ? null : f.query,
      connectionId: f.type === 'TEXT' ? null : f.connectionId || null,
      config,
      width: Number(f.width),
      height: Number(f.height),
      // A new widget goes after the last one; a widget moves by dragging (or its keyboard handle).
      ...(existing ? {} : { position }),
    };
    try {
      if (existing)
        await ok(
          api.PATCH('/dashboards/{id}/widgets/{widgetId}', {
            params: { path: { id: dashboardId, widgetId: existing.id } },
            body,
          }),
        );
      else await ok(api.POST('/dashboards/{id}/widgets', { params: { path: { id: dashboardId } }, body }));
      setPreview(null);
      onSaved(f.title);
    } catch (err) {
      setError(err as ApiError);
    }
  });
  const problem = (k: string) =>
    errors[k] && (
      <span id={`${prefix}-${k}-error`} class="field-error">
        {errors[k]}
      </span>
    );
  const invalid = (k: string) => ({
    'aria-invalid': errors[k] ? true : undefined,
    'aria-describedby': errors[k] ? `${prefix}-${k}-error` : undefined,
  });
  const text = (k: keyof typeof f, label: string, numeric = false) => (
    <div class="field">
      <label for={`${prefix}-${k}`}>{label}</label>
      <input
        id={`${prefix}-${k}`}
        inputMode={numeric ? 'numeric' : undefined}
        value={f[k]}
        onInput={set(k)}
        {...invalid(k)}
      />
      {problem(k)}
    </div>
  );
  return (
    <>
      <form onSubmit={submitWith(submit.run)} class="stack">
        {text('title', 'Widget title')}
        <div class="field">
          <label for={`${prefix}-type`}>Widget type</label>
          <select id={`${prefix}-type`} value={f.type} onChange={set('type')}>
            {TYPES.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </div>
        {f.type !== 'TEXT' && (
          <>
            <ConnectionSelect
              id={`${prefix}-connection`}
              value={f.connectionId}
              onChange={(v) => {
                setF((cur) => ({ ...cur, connectionId: v }));
                if (v && previewProblem?.field === 'connectionId') setPreviewProblem(null);
              }}
            />
            {problem('connectionId')}
          </>
        )}
        {f.type !== 'TEXT' && (
          <>
            <SqlEditor
              id={`${prefix}-query`}
              label="Widget SQL"
              rows={4}
              value={f.query}
              onChange={(query) => setF((old) => ({ ...old, query }))}
              onRun={runPreview}
              connectionId={f.connectionId || undefined}
              invalid={!!errors.query}
              describedBy={errors.query ? `${prefix}-query-error` : undefined}
              editorRef={sqlEditor}
            />
            {problem('query')}
          </>
        )}
        {f.type === 'TEXT' ? (
          <div class="field">
            <label for={`${prefix}-markdown`}>Markdown</label>
            <textarea
              id={`${prefix}-markdown`}
              rows={8}
              value={f.markdown}
              onInput={set('markdown')}
              {...invalid('config')}
            />
            {problem('config')}
          </div>
        ) : (
          text('config', 'Options (JSON: x, y, cacheSeconds)')
        )}
        {text('width', 'Width (1–12 columns)', true)}
        {text('height', 'Height (rows)', true)}
        <ErrorAlert error={error} />
        <FormActions label={existing ? 'Save widget' : 'Add widget'} busy={submit.busy} onCancel={onCancel}>
          {f.type !== 'TEXT' && (
            <button type="button" class="secondary" onClick={runPreview}>
              Preview
            </button>
          )}{' '}
        </FormActions>
      </form>
      {preview && f.type !== 'TEXT' && (
        <section aria-label="Preview" class="widget preview">
          <WidgetBody
            type={f.type}
            result={preview}
            config={parseConfig(f.config)}
            title={f.title || 'Preview'}
          />
        </section>
      )}
      {f.type === 'TEXT' && f.markdown.trim() && (
        // Drawn as it is typed, as the widget will show it.
        <section aria-label="Preview" class="widget preview text-preview">
          <Markdown source={f.markdown} />
        </section>
      )}
    </>
  );
}

/** A config without the older `text` key, which `markdown` replaces when the Markdown field is saved. */
function withoutText<T extends { text?: unknown }>(config: T): Omit<T, 'text'> {
  const { text: _text, ...rest } = config;
  return rest;
}
