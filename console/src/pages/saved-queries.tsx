import { useState } from 'preact/hooks';
import { type ApiError, api, ok } from '../api/client';
import { ErrorAlert, Loading, useLoad } from '../components/load';
import type { Result } from '../components/result';
import { ResultTable } from '../components/result-table';

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
  const list = useLoad(() => ok(api.GET('/saved-queries', { params: { query: { pageSize: 100 } } })));
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
    </>
  );
}

function SavedQuery({
  query: q,
}: {
  query: { id: string; name: string; description: string | null; query: string; parameters: string };
}) {
  const defs = defsOf(q.parameters);
  const [values, setValues] = useState<Record<string, string | boolean>>({});
  const [result, setResult] = useState<Result | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const run = async (e: Event) => {
    e.preventDefault();
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
              onInput={(e) =>
                setValues({
                  ...values,
                  [d.name]: d.type === 'boolean' ? e.currentTarget.checked : e.currentTarget.value,
                })
              }
            />
          </div>
        ))}
        <button type="submit" aria-label={`Run ${q.name}`}>
          Run
        </button>
      </form>
      <ErrorAlert error={error} />
      {result && <ResultTable result={result} csvName={`${q.name}.csv`} />}
    </article>
  );
}
