import { useState } from 'preact/hooks';
import { type ApiError, api, ok } from '../api/client';
import { Confirm } from '../components/confirm';
import { fieldErrors } from '../components/field-errors';
import { ErrorAlert } from '../components/load';
import { submitWith, useSubmit } from '../components/use-submit';

export interface AnnotationRecord {
  id: string;
  tableName: string;
  columnName: string | null;
  annotation: string;
  examples: string | null;
  source?: 'user' | 'auto';
}

/**
 * Annotating one table of a connection's schema view: pick the table itself or one of its columns, write
 * what it means (and example values); an existing note is prefilled and saved with PATCH, a new one with
 * POST (which upserts on table + column); "Delete annotation" after a confirmation. The chat's schema
 * linking reads these notes.
 */
export function AnnotationEditor({
  connectionId,
  table,
  columns,
  notes,
  onChanged,
}: {
  connectionId: string;
  table: string;
  columns: string[];
  notes: AnnotationRecord[];
  onChanged: () => void;
}) {
  const [column, setColumn] = useState('');
  const [status, setStatus] = useState('');
  // The form is made when opened: a schema of many tables carries no hidden forms.
  const [open, setOpen] = useState(false);
  const current = notes.find((n) => n.tableName === table && (n.columnName ?? '') === column);
  return (
    <details class="annotate" onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>Annotate {table}</summary>
      {open && (
        <>
          <div class="field">
            <label for={`annotate-${table}-target`}>Annotate</label>
            <select
              id={`annotate-${table}-target`}
              value={column}
              onChange={(e) => setColumn(e.currentTarget.value)}
            >
              <option value="">The table {table}</option>
              {columns.map((c) => (
                <option key={c} value={c}>
                  Column {c}
                </option>
              ))}
            </select>
          </div>
          {/* Keyed by its target: choosing another column starts from that column's note. */}
          <NoteForm
            key={`${column}:${current?.id ?? ''}`}
            connectionId={connectionId}
            table={table}
            column={column || null}
            existing={current}
            onChanged={(what) => {
              setStatus(what);
              onChanged();
            }}
          />
          <p role="status">{status}</p>
        </>
      )}
    </details>
  );
}

function NoteForm({
  connectionId,
  table,
  column,
  existing,
  onChanged,
}: {
  connectionId: string;
  table: string;
  column: string | null;
  existing?: AnnotationRecord;
  onChanged: (what: string) => void;
}) {
  const [text, setText] = useState(existing?.annotation ?? '');
  const [examples, setExamples] = useState(existing?.examples ?? '');
  const [error, setError] = useState<ApiError | null>(null);
  const [confirming, setConfirming] = useState(false);
  const errors = fieldErrors(error);
  const id = `note-${table}-${column ?? ''}`.replace(/[^\w-]/g, '_');
  const target = column ? `${table}.${column}` : table;
  const save = useSubmit(async () => {
    setError(null);
    const body = { annotation: text, examples: examples.trim() ? examples : null };
    try {
      if (existing)
        await ok(
          api.PATCH('/connections/{id}/annotations/{annotationId}', {
            params: { path: { id: connectionId, annotationId: existing.id } },
            body,
          }),
        );
      else
        await ok(
          api.POST('/connections/{id}/annotations', {
            params: { path: { id: connectionId } },
            body: { tableName: table, columnName: column, ...body },
          }),
        );
      onChanged(`Annotation on ${target} saved.`);
    } catch (err) {
      setError(err as ApiError);
    }
  });
  const remove = useSubmit(async () => {
    if (!existing) return;
    setError(null);
    try {
      await ok(
        api.DELETE('/connections/{id}/annotations/{annotationId}', {
          params: { path: { id: connectionId, annotationId: existing.id } },
        }),
      );
      setConfirming(false);
      onChanged(`Annotation on ${target} deleted.`);
    } catch (err) {
      setConfirming(false);
      setError(err as ApiError);
    }
  });
  const described = (k: string) =>
    errors[k] ? { 'aria-invalid': true as const, 'aria-describedby': `${id}-${k}-error` } : {};
  return (
    <form class="stack" onSubmit={submitWith(save.run)}>
      <div class="field">
        <label for={`${id}-text`}>Annotation for {target}</label>
        <textarea
          id={`${id}-text`}
          rows={3}
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
          {...described('annotation')}
        />
        {errors.annotation && (
          <span id={`${id}-annotation-error`} class="field-error">
            {errors.annotation}
          </span>
        )}
      </div>
      <div class="field">
        <label for={`${id}-examples`}>Example values (optional)</label>
        <input
          id={`${id}-examples`}
          value={examples}
          onInput={(e) => setExamples(e.currentTarget.value)}
          {...described('examples')}
        />
        {errors.examples && (
          <span id={`${id}-examples-error`} class="field-error">
            {errors.examples}
          </span>
        )}
      </div>
      {existing?.source === 'auto' && (
        <p class="muted">Written by automatic annotation; saving it makes it yours (never overwritten).</p>
      )}
      <ErrorAlert error={error} />
      <p>
        <button type="submit" disabled={save.busy}>
          Save annotation
        </button>{' '}
        {existing && (
          <button type="button" class="secondary" onClick={() => setConfirming(true)} disabled={remove.busy}>
            Delete annotation
          </button>
        )}
      </p>
      {confirming && (
        <Confirm
          question={`Delete the annotation on ${target}?`}
          action="Yes, delete annotation"
          onConfirm={() => remove.run()}
          onCancel={() => setConfirming(false)}
        />
      )}
    </form>
  );
}
