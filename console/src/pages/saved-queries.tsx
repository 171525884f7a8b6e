import { useState } from 'preact/hooks';
import { type ApiError, api, ok, okPage } from '../api/client';
import { fieldErrors } from '../components/field-errors';
import { ErrorAlert, Loading } from '../components/load';
import { Pager, usePaged } from '../components/pager';
import type { Result } from '../components/result';
import { ResultTable } from '../components/result-table';
import { useSubmit } from '../components/use-submit';

interface ParamDef {
  name: string;
  type: 'string' | 'number' | 'integer' | 'boolean' | 'date' | 'datetime';
  required?: boolean;
}

const INPUT: Record<ParamDef['type'], 'text' | 'number' | 'checkbox' | 'date' | 'datetime-local'> = {
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

/** Saved queries: each runs with a form generated from its parameter definitions. */
export function SavedQueriesPage() {
  const list = usePaged((query) => okPage(api.GET('/saved-queries', { params: { query } })));
  return (
    <>
      <h1>Saved queries</h1>
      <ErrorAlert error={list.error} />
      {list.loading && !list.data && <Loading what="saved queries" />}
      {list.data?.length === 0 && <p class="muted">No saved queries yet.</p>}
      <ul class="cards">
        {(list.data ?? []).map((q) => (
          <li key={q.id}>
            <SavedQuery query={q} />
          </li>
        ))}
      </ul>
      <Pager label="Saved queries" list={list} />
    </>
  );
}

function SavedQuery({
  query: q,
}: {
  query: { id: string; name: string; description: string | null; query: string; parameters: string };
}) {
  const defs = defsOf(q.parameters);
  // A checkbox has no "empty": a boolean starts false and is always sent, checked or not.
  const [values, setValues] = useState<Record<string, string | boolean>>(() =>
    Object.fromEntries(defs.filter((d) => d.type === 'boolean').map((d) => [d.name, false])),
  );
  const [result, setResult] = useState<Result | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
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
  const run = (e: Event) => {
    e.preventDefault();
    void running.run();
  };
  return (
    <article aria-labelledby={`sq-${q.id}`}>
      <h2 id={`sq-${q.id}`}>{q.name}</h2>
      {q.description && <p class="muted">{q.description}</p>}
      <pre>
        <code>{q.query}</code>
      </pre>
      <form onSubmit={run} class="inline">
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
      <ErrorAlert error={error} />
      {result && <ResultTable result={result} csvName={`${q.name}.csv`} />}
    </article>
  );
}
