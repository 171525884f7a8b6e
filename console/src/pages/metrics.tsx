import { useState } from 'preact/hooks';
import { type ApiError, api, ok, okPage } from '../api/client';
import type { components } from '../api/schema.gen';
import { CardActions, useEditing } from '../components/card-actions';
import { type Connection, ConnectionSelect, useConnections } from '../components/connection-select';
import { fieldErrors } from '../components/field-errors';
import { useFocusFirst } from '../components/focus-first';
import { FormActions } from '../components/form-actions';
import { ErrorAlert, Loading } from '../components/load';
import { NewItem } from '../components/new-item';
import { NotShown, Pager, usePaged, useSelected } from '../components/pager';
import { cell } from '../components/result';
import { SqlEditor } from '../components/sql-editor';
import { TextField } from '../components/text-field';
import { submitWith, useSubmit } from '../components/use-submit';
import { mayChange, useMe } from '../me';
import { href } from '../router';

type Metric = components['schemas']['Metric'];
type MetricValue = components['schemas']['MetricValue'];

/** A value as the reader's locale writes numbers; anything else as text. */
function formatValue(v: unknown): string {
  if (typeof v === 'number') return v.toLocaleString(undefined, { maximumFractionDigits: 6 });
  // A database decimal arrives as text ("35.0000000000000000"): written like a number when that loses
  // nothing (trailing zeros go), else as it came.
  const m = typeof v === 'string' ? /^(-?\d+)(?:\.(\d*?)0*)?$/.exec(v) : null;
  if (m && m[1].replace('-', '').length <= 15 && (m[2] ?? '').length <= 6)
    return Number(`${m[1]}.${m[2] || '0'}`).toLocaleString(undefined, { maximumFractionDigits: 6 });
  return cell(v);
}

/**
 * Metrics: named SQL formulas whose value is the first column of the first row. The list with each
 * formula, "Evaluate" (on the metric's connection or another one the key may use), "New metric", and
 * edit and delete for the creator and admins. `#/metrics/<id>` opens one.
 */
export function MetricsPage({ id }: { id?: string }) {
  const list = usePaged((query) => okPage(api.GET('/metrics', { params: { query } })));
  const {
    selected,
    error: notShown,
    reload,
  } = useSelected(list, id, (one) => ok(api.GET('/metrics/{id}', { params: { path: { id: one } } })));
  const connections = useConnections();
  const me = useMe();
  const canCreate = (connections.data?.length ?? 0) > 0;
  const shown = id ? (selected ? [selected] : []) : (list.data ?? []);
  return (
    <>
      <h1>Metrics</h1>
      {id && (
        <p>
          <a href={href('metrics')}>All metrics</a>
        </p>
      )}
      <NewItem id="new-metric" title="New metric" listed={!id} canCreate={canCreate}>
        {({ saved, cancel }) => (
          <MetricForm
            connections={connections.data}
            onSaved={(m) => {
              saved(`Metric “${m.name}” saved.`);
              list.reload();
            }}
            onCancel={cancel}
          />
        )}
      </NewItem>
      <ErrorAlert error={list.error} />
      {list.loading && !list.data && <Loading what="metrics" />}
      {!id && list.data?.length === 0 && <p class="muted">No metrics yet.</p>}
      <NotShown error={notShown} id={id} what="metric" route="metrics" />
      <ul class="cards">
        {shown.map((m) => (
          <li key={m.id}>
            <MetricCard
              metric={m}
              connections={connections.data}
              mayChange={mayChange(me, m)}
              onChanged={() => (id ? reload() : list.reload())}
            />
          </li>
        ))}
      </ul>
      {!id && <Pager label="Metrics" list={list} />}
    </>
  );
}

function MetricCard({
  metric: m,
  connections,
  mayChange,
  onChanged,
}: {
  metric: Metric;
  connections?: Connection[];
  mayChange: boolean;
  onChanged: () => void;
}) {
  const own = connections?.find((c) => c.id === m.connectionId);
  const [on, setOn] = useState(m.connectionId ?? '');
  const [value, setValue] = useState<{ value: MetricValue; on?: Connection } | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const edit = useEditing();
  const evaluate = useSubmit(async () => {
    setError(null);
    try {
      const override = on && on !== m.connectionId ? { connectionId: on } : {};
      const v = await ok(api.GET('/metrics/{id}/value', { params: { path: { id: m.id }, query: override } }));
      setValue({ value: v, on: connections?.find((c) => c.id === (on || m.connectionId)) });
    } catch (e) {
      setValue(null);
      setError(e as ApiError);
    }
  });
  const remove = useSubmit(async () => {
    setError(null);
    try {
      await ok(api.DELETE('/metrics/{id}', { params: { path: { id: m.id } } }));
      onChanged();
    } catch (e) {
      setError(e as ApiError);
    }
  });
  const titleId = `metric-${m.id}`;
  const evalId = `metric-${m.id}-on`;
  return (
    <article aria-labelledby={titleId}>
      <h2 id={titleId}>
        <a href={href('metrics', m.id)}>{m.name}</a>
      </h2>
      <p class="muted">
        {m.connectionId
          ? own
            ? `${own.name} (${own.type})`
            : 'Connection not listed'
          : 'No connection of its own'}
        {m.unit ? ` · unit ${m.unit}` : ''}
        {m.dimensions ? ` · dimensions ${m.dimensions}` : ''}
      </p>
      {m.description && <p class="muted">{m.description}</p>}
      {edit.editing ? (
        <MetricForm
          existing={m}
          connections={connections}
          onSaved={() => {
            edit.setEditing(false);
            onChanged();
          }}
          onCancel={() => edit.setEditing(false)}
        />
      ) : (
        <>
          <pre>
            <code>{m.formula}</code>
          </pre>
          <form class="inline" onSubmit={submitWith(evaluate.run)}>
            <div class="field">
              <label for={evalId}>Evaluate on</label>
              <select id={evalId} value={on} onChange={(e) => setOn(e.currentTarget.value)}>
                {!m.connectionId && <option value="">Choose a connection</option>}
                {own && (
                  <option value={own.id}>
                    {own.name} ({own.type}, its own)
                  </option>
                )}
                {(connections ?? [])
                  .filter((c) => c.id !== m.connectionId)
                  .map((c) => (
                    <option key={c.id} value={c.id}>
                      {c.name} ({c.type})
                    </option>
                  ))}
              </select>
            </div>
            <button type="submit" aria-label={`Evaluate ${m.name}`} disabled={evaluate.busy}>
              Evaluate
            </button>
          </form>
          {value && (
            <p class="metric-result" role="status">
              <span class="metric-now">
                {formatValue(value.value.value)}
                {value.value.unit ? ` ${value.value.unit}` : ''}
              </span>{' '}
              <span class="muted">
                {value.value.value === null ? 'no rows · ' : ''}
                {value.on ? `on ${value.on.name} · ` : ''}
                as of {new Date(value.value.asOf).toLocaleString()} · {value.value.executionTime} ms
              </span>
            </p>
          )}
        </>
      )}
      <CardActions
        name={m.name}
        what="metric"
        mayChange={mayChange}
        edit={edit}
        onDelete={() => void remove.run()}
      />
      <ErrorAlert error={error} />
    </article>
  );
}

/** A metric's form (new or edit): Name, Connection, Formula in the SQL editor, Unit, Description, Save. */
function MetricForm({
  existing,
  connections,
  onSaved,
  onCancel,
}: {
  existing?: Metric;
  connections?: Connection[];
  onSaved: (m: Metric) => void;
  onCancel: () => void;
}) {
  const prefix = existing ? `edit-metric-${existing.id}` : 'new-metric';
  const [f, setF] = useState({
    name: existing?.name ?? '',
    connectionId: existing?.connectionId ?? '',
    formula: existing?.formula ?? '',
    unit: existing?.unit ?? '',
    description: existing?.description ?? '',
  });
  const [error, setError] = useState<ApiError | null>(null);
  const errors = fieldErrors(error);
  const set = (k: keyof typeof f) => (v: string) => setF((old) => ({ ...old, [k]: v }));
  const save = useSubmit(async () => {
    setError(null);
    const body = {
      name: f.name,
      formula: f.formula,
      connectionId: f.connectionId || null,
      unit: f.unit.trim() || null,
      description: f.description.trim() || null,
    };
    try {
      const m = existing
        ? await ok(api.PATCH('/metrics/{id}', { params: { path: { id: existing.id } }, body }))
        : await ok(api.POST('/metrics', { body }));
      onSaved(m);
    } catch (e) {
      setError(e as ApiError);
    }
  });
  const form = useFocusFirst();
  return (
    <form ref={form} class="stack" onSubmit={submitWith(save.run)}>
      <TextField
        id={`${prefix}-name`}
        label="Name"
        value={f.name}
        onInput={set('name')}
        error={errors.name}
        required
      />
      <ConnectionSelect
        id={`${prefix}-connection`}
        value={f.connectionId}
        onChange={set('connectionId')}
        connections={connections}
      />
      {errors.connectionId && <span class="field-error">{errors.connectionId}</span>}
      <SqlEditor
        id={`${prefix}-formula`}
        label="Formula"
        rows={4}
        value={f.formula}
        onChange={set('formula')}
        onRun={() => void save.run()}
        connectionId={f.connectionId || undefined}
        dialect={connections?.find((c) => c.id === f.connectionId)?.type}
        invalid={!!errors.formula}
        describedBy={errors.formula ? `${prefix}-formula-error` : undefined}
      />
      {errors.formula && (
        <span id={`${prefix}-formula-error`} class="field-error">
          {errors.formula}
        </span>
      )}
      <p class="muted">One read; the value is the first column of the first row.</p>
      <TextField
        id={`${prefix}-unit`}
        label="Unit (optional)"
        value={f.unit}
        onInput={set('unit')}
        error={errors.unit}
      />
      <TextField
        id={`${prefix}-description`}
        label="Description (optional)"
        value={f.description}
        onInput={set('description')}
        error={errors.description}
      />
      <ErrorAlert error={error} />
      <FormActions label="Save" busy={save.busy} onCancel={onCancel} />
    </form>
  );
}
