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
import type { Result } from '../components/result';
import { ResultTable } from '../components/result-table';
import { SqlEditor } from '../components/sql-editor';
import { placeholders } from '../components/sql-text';
import { TextField } from '../components/text-field';
import { submitWith, useSubmit } from '../components/use-submit';
import { mayChange, useMe } from '../me';
import { href } from '../router';

type SavedQueryRecord = components['schemas']['SavedQuery'];
type ParamType = 'string' | 'number' | 'integer' | 'boolean' | 'date' | 'datetime';

interface ParamDef {
  name: string;
  type: ParamType;
  required?: boolean;
  default?: string | number | boolean | null;
}

const TYPES: ParamType[] = ['string', 'number', 'integer', 'boolean', 'date', 'datetime'];

const INPUT: Record<ParamType, 'text' | 'number' | 'checkbox' | 'date' | 'datetime-local'> = {
  string: 'text',
  number: 'number',
  integer: 'number',
  boolean: 'checkbox',
  date: 'date',
  datetime: 'datetime-local',
};

function defsOf(json: string): ParamDef[] {
  try {
    const v = JSON.parse(json || '[]');
    return Array.isArray(v) ? v : [];
  } catch {
    return [];
  }
}

/**
 * Saved queries: each runs with a form generated from its parameter definitions; "New saved query"
 * writes one in the SQL editor, its `{{name}}` placeholders becoming parameter definitions; its creator
 * and admins edit and delete it. `#/saved-queries/<id>` opens one.
 */
export function SavedQueriesPage({ id }: { id?: string }) {
  const list = usePaged((query) => okPage(api.GET('/saved-queries', { params: { query } })));
  const {
    selected,
    error: notShown,
    reload,
  } = useSelected(list, id, (one) => ok(api.GET('/saved-queries/{id}', { params: { path: { id: one } } })));
  const connections = useConnections();
  const me = useMe();
  // Members save queries on the connections assigned to them: with none, there is nothing to save on.
  const canCreate = (connections.data?.length ?? 0) > 0;
  const shown = id ? (selected ? [selected] : []) : (list.data ?? []);
  return (
    <>
      <h1>Saved queries</h1>
      {id && (
        <p>
          <a href={href('saved-queries')}>All saved queries</a>
        </p>
      )}
      <NewItem id="new-saved-query" title="New saved query" listed={!id} canCreate={canCreate}>
        {({ saved, cancel }) => (
          <SavedQueryForm
            connections={connections.data}
            onSaved={(q) => {
              saved(`Saved query “${q.name}” saved.`);
              list.reload();
            }}
            onCancel={cancel}
          />
        )}
      </NewItem>
      <ErrorAlert error={list.error} />
      {list.loading && !list.data && <Loading what="saved queries" />}
      {!id && list.data?.length === 0 && <p class="muted">No saved queries yet.</p>}
      <NotShown error={notShown} id={id} what="saved query" route="saved-queries" />
      <ul class="cards">
        {shown.map((q) => (
          <li key={q.id}>
            <SavedQuery
              query={q}
              connection={connections.data?.find((c) => c.id === q.connectionId)}
              connections={connections.data}
              mayChange={mayChange(me, q)}
              onChanged={() => (id ? reload() : list.reload())}
            />
          </li>
        ))}
      </ul>
      {!id && <Pager label="Saved queries" list={list} />}
    </>
  );
}

function SavedQuery({
  query: q,
  connection,
  connections,
  mayChange,
  onChanged,
}: {
  query: SavedQueryRecord;
  connection?: Connection;
  connections?: Connection[];
  mayChange: boolean;
  onChanged: () => void;
}) {
  const defs = defsOf(q.parameters);
  // A checkbox has no "empty": a boolean starts at its default (or false) and is always sent.
  const [values, setValues] = useState<Record<string, string | boolean>>(() =>
    Object.fromEntries(defs.filter((d) => d.type === 'boolean').map((d) => [d.name, d.default === true])),
  );
  const [result, setResult] = useState<Result | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const edit = useEditing();
  const [deleteError, setDeleteError] = useState<ApiError | null>(null);
  // The API names a parameter's problem as `body.params.<name>` (or `params.<name>`).
  const errors = Object.fromEntries(
    Object.entries(fieldErrors(error)).map(([path, message]) => [path.replace(/^params\./, ''), message]),
  );
  const running = useSubmit(async () => {
    setError(null);
    const params: Record<string, unknown> = {};
    for (const d of defs) {
      const v = values[d.name];
      if (v === undefined || v === '') continue;
      params[d.name] = d.type === 'number' || d.type === 'integer' ? Number(v) : v;
    }
    try {
      setResult(
        await ok(api.POST('/saved-queries/{id}/run', { params: { path: { id: q.id } }, body: { params } })),
      );
    } catch (err) {
      setResult(null);
      setError(err as ApiError);
    }
  });
  const remove = useSubmit(async () => {
    setDeleteError(null);
    try {
      await ok(api.DELETE('/saved-queries/{id}', { params: { path: { id: q.id } } }));
      onChanged();
    } catch (err) {
      setDeleteError(err as ApiError);
    }
  });
  const titleId = `sq-${q.id}`;
  return (
    <article aria-labelledby={titleId}>
      <h2 id={titleId}>
        <a href={href('saved-queries', q.id)}>{q.name}</a>
      </h2>
      <p class="muted">
        {connection ? `${connection.name} (${connection.type})` : 'Connection not listed'}
        {q.isPublic ? ' · shared with the organization' : ' · private'}
      </p>
      {q.description && <p class="muted">{q.description}</p>}
      {edit.editing ? (
        <SavedQueryForm
          existing={q}
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
            <code>{q.query}</code>
          </pre>
          <form onSubmit={submitWith(running.run)} class="inline">
            {defs.map((d) => (
              <div class="field" key={d.name}>
                <label for={`sq-${q.id}-${d.name}`}>
                  {d.name}
                  {d.required ? ' (required)' : ''}
                </label>
                <input
                  id={`sq-${q.id}-${d.name}`}
                  {...({ type: INPUT[d.type] ?? 'text' } as { type: 'text' })}
                  step={d.type === 'number' ? 'any' : undefined}
                  required={d.required && d.type !== 'boolean'}
                  placeholder={
                    d.default !== undefined && d.default !== null && d.type !== 'boolean'
                      ? `default ${d.default}`
                      : undefined
                  }
                  checked={d.type === 'boolean' ? values[d.name] === true : undefined}
                  aria-invalid={errors[d.name] ? true : undefined}
                  aria-describedby={errors[d.name] ? `sq-${q.id}-${d.name}-error` : undefined}
                  onInput={(e) =>
                    setValues({
                      ...values,
                      [d.name]: d.type === 'boolean' ? e.currentTarget.checked : e.currentTarget.value,
                    })
                  }
                />
                {errors[d.name] && (
                  <span id={`sq-${q.id}-${d.name}-error`} class="field-error">
                    {errors[d.name]}
                  </span>
                )}
              </div>
            ))}
            <button type="submit" aria-label={`Run ${q.name}`} disabled={running.busy}>
              Run
            </button>
          </form>
        </>
      )}
      <CardActions
        name={q.name}
        what="saved query"
        mayChange={mayChange}
        edit={edit}
        onDelete={() => void remove.run()}
      />
      <ErrorAlert error={deleteError} />
      <ErrorAlert error={error} />
      {result && <ResultTable result={result} csvName={`${q.name}.csv`} />}
    </article>
  );
}

/**
 * A saved query's form: name, connection, description, the SQL in the editor and one definition per
 * `{{name}}` placeholder (type, required, default), kept as placeholders come and go. Saves with POST
 * (new) or PATCH (edit); the API's field errors appear beside their fields.
 */
function SavedQueryForm({
  existing,
  connections,
  onSaved,
  onCancel,
}: {
  existing?: SavedQueryRecord;
  connections?: Connection[];
  onSaved: (q: SavedQueryRecord) => void;
  onCancel: () => void;
}) {
  const prefix = existing ? `edit-${existing.id}` : 'new-sq';
  const [name, setName] = useState(existing?.name ?? '');
  const [connectionId, setConnectionId] = useState(existing?.connectionId ?? '');
  const [description, setDescription] = useState(existing?.description ?? '');
  const [sql, setSql] = useState(existing?.query ?? '');
  const [isPublic, setIsPublic] = useState(existing?.isPublic ?? true);
  /** Definitions by name, kept when a placeholder is removed so that putting it back restores them. */
  const [defs, setDefs] = useState<Record<string, ParamDef>>(() =>
    Object.fromEntries(defsOf(existing?.parameters ?? '[]').map((d) => [d.name, d])),
  );
  const [error, setError] = useState<ApiError | null>(null);
  const type = connections?.find((c) => c.id === connectionId)?.type;
  const names = placeholders(sql, type);
  const params = names.map((n) => defs[n] ?? { name: n, type: 'string' as ParamType, required: true });
  const errors = fieldErrors(error);
  const setDef = (n: string, change: Partial<ParamDef>) => {
    const current = defs[n] ?? { name: n, type: 'string' as ParamType, required: true };
    const next = { ...current, ...change };
    // A default of another type no longer fits: it goes.
    if (change.type && change.type !== current.type) delete next.default;
    setDefs({ ...defs, [n]: next });
  };
  const save = useSubmit(async () => {
    setError(null);
    const parameters = params.map((d) => ({
      name: d.name,
      type: d.type,
      required: !!d.required,
      ...(d.default !== undefined && d.default !== '' ? { default: d.default } : {}),
    }));
    const body = {
      name,
      connectionId,
      query: sql,
      description: description.trim() ? description.trim() : null,
      parameters,
      isPublic,
    };
    try {
      const q = existing
        ? await ok(api.PATCH('/saved-queries/{id}', { params: { path: { id: existing.id } }, body }))
        : await ok(api.POST('/saved-queries', { body }));
      onSaved(q);
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
        value={name}
        onInput={setName}
        error={errors.name}
        required
      />
      <ConnectionSelect
        id={`${prefix}-connection`}
        value={connectionId}
        onChange={setConnectionId}
        connections={connections}
      />
      {errors.connectionId && (
        <span id={`${prefix}-connection-error`} class="field-error">
          {errors.connectionId}
        </span>
      )}
      <TextField
        id={`${prefix}-description`}
        label="Description (optional)"
        value={description}
        onInput={setDescription}
        error={errors.description}
      />
      <SqlEditor
        id={`${prefix}-sql`}
        value={sql}
        onChange={setSql}
        onRun={() => void save.run()}
        connectionId={connectionId || undefined}
        dialect={type}
        invalid={!!errors.query}
        describedBy={errors.query ? `${prefix}-sql-error` : undefined}
      />
      {errors.query && (
        <span id={`${prefix}-sql-error`} class="field-error">
          {errors.query}
        </span>
      )}
      <p class="muted">
        Write <code>{'{{name}}'}</code> where a value goes: each placeholder becomes a parameter, bound by the
        database as a value (never pasted into the SQL).
      </p>
      {params.map((d, i) => (
        <fieldset key={d.name} class="param-def">
          <legend>
            Parameter <code>{`{{${d.name}}}`}</code>
          </legend>
          <div class="inline">
            <div class="field">
              <label for={`${prefix}-p${i}-type`}>Type</label>
              <select
                id={`${prefix}-p${i}-type`}
                value={d.type}
                onChange={(e) => setDef(d.name, { type: e.currentTarget.value as ParamType })}
              >
                {TYPES.map((t) => (
                  <option key={t} value={t}>
                    {t}
                  </option>
                ))}
              </select>
            </div>
            <label class="check">
              <input
                type="checkbox"
                checked={!!d.required}
                onChange={(e) => setDef(d.name, { required: e.currentTarget.checked })}
              />{' '}
              Required
            </label>
            <div class="field">
              <label for={`${prefix}-p${i}-default`}>Default</label>
              {d.type === 'boolean' ? (
                <select
                  id={`${prefix}-p${i}-default`}
                  value={d.default === undefined || d.default === null ? '' : String(d.default)}
                  onChange={(e) => {
                    const v = e.currentTarget.value;
                    setDef(d.name, { default: v === '' ? undefined : v === 'true' });
                  }}
                >
                  <option value="">none</option>
                  <option value="true">true</option>
                  <option value="false">false</option>
                </select>
              ) : (
                <input
                  id={`${prefix}-p${i}-default`}
                  {...({ type: INPUT[d.type] } as { type: 'text' })}
                  step={d.type === 'number' ? 'any' : undefined}
                  value={d.default === undefined || d.default === null ? '' : String(d.default)}
                  onInput={(e) => {
                    const v = e.currentTarget.value;
                    setDef(d.name, {
                      default:
                        v === '' ? undefined : d.type === 'number' || d.type === 'integer' ? Number(v) : v,
                    });
                  }}
                />
              )}
            </div>
          </div>
          {Object.entries(errors)
            .filter(([path]) => path.startsWith(`parameters.${i}`))
            .map(([path, message]) => (
              <span key={path} class="field-error">
                {message}
              </span>
            ))}
        </fieldset>
      ))}
      <label class="check">
        <input type="checkbox" checked={isPublic} onChange={(e) => setIsPublic(e.currentTarget.checked)} />{' '}
        Shared with the organization (members see it on the databases assigned to them)
      </label>
      <ErrorAlert error={error} />
      <FormActions label="Save" busy={save.busy} onCancel={onCancel} />
    </form>
  );
}
