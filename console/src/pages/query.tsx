import { useState } from 'preact/hooks';
import { type ApiError, api, ok } from '../api/client';
import { ConnectionSelect, useConnections } from '../components/connection-select';
import { ErrorAlert, useLoad } from '../components/load';
import type { Result } from '../components/result';
import { ResultTable } from '../components/result-table';
import { href } from '../router';

/** Query: one read-only statement on a connection, its result, and the connection's query history. */
export function QueryPage({ connectionId }: { connectionId?: string }) {
  const [conn, setConn] = useState(connectionId ?? '');
  const [sql, setSql] = useState('');
  const [result, setResult] = useState<Result | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const [submitted, setSubmitted] = useState<string | null>(null);
  const connections = useConnections().data;
  const writable = connections?.find((c) => c.id === conn)?.readOnly === false;
  const history = useLoad(
    () =>
      conn
        ? ok(
            api.GET('/connections/{id}/queries', { params: { path: { id: conn }, query: { pageSize: 20 } } }),
          )
        : Promise.resolve([]),
    [conn],
  );
  const run = async (e: Event) => {
    e.preventDefault();
    if (!conn)
      return setError({ code: 'VALIDATION_ERROR', message: 'Choose a connection first.' } as ApiError);
    setBusy(true);
    setError(null);
    setSubmitted(null);
    try {
      setResult(
        await ok(api.POST('/connections/{id}/query', { params: { path: { id: conn } }, body: { sql } })),
      );
    } catch (err) {
      setResult(null);
      setError(err as ApiError);
    } finally {
      setBusy(false);
      history.reload();
    }
  };
  const submitForApproval = async () => {
    try {
      const r = await ok(api.POST('/queries/submit', { body: { connectionId: conn, query: sql } }));
      setSubmitted((r as { id: string }).id);
      setError(null);
    } catch (err) {
      setError(err as ApiError);
    }
  };
  const refused = error?.code === 'READ_ONLY_VIOLATION' && writable;
  return (
    <>
      <h1>Query</h1>
      <form onSubmit={run} class="stack">
        <ConnectionSelect value={conn} onChange={setConn} connections={connections} />
        <div class="field">
          <label for="sql">SQL</label>
          <textarea
            id="sql"
            rows={8}
            spellcheck={false}
            class="code"
            value={sql}
            onInput={(e) => setSql(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) run(e);
            }}
          />
        </div>
        <button type="submit" disabled={busy}>
          Run
        </button>
      </form>
      <ErrorAlert error={error}>
        {refused && conn && (
          <p>
            This statement changes data. An admin can run it after review:{' '}
            <button type="button" class="link" onClick={submitForApproval}>
              Submit for approval
            </button>
          </p>
        )}
      </ErrorAlert>
      {submitted && (
        <p role="status">
          Submitted for approval ({submitted}). See <a href={href('approvals')}>Approvals</a>.
        </p>
      )}
      {result && <ResultTable result={result} csvName="result.csv" caption="Query result" />}
      {conn && (
        <section aria-labelledby="history-title">
          <h2 id="history-title">History</h2>
          {(history.data ?? []).length === 0 ? (
            <p class="muted">No queries yet.</p>
          ) : (
            <ul class="history">
              {(history.data ?? []).map((h) => (
                <li key={h.id}>
                  <button
                    type="button"
                    class="link"
                    onClick={() => setSql(h.sql)}
                    title="Put this SQL in the editor"
                  >
                    <code>{h.sql}</code>
                  </button>{' '}
                  <span class={`badge ${h.status.toLowerCase()}`}>{h.status}</span>{' '}
                  <span class="muted">
                    {h.rowCount ?? 0} rows · {h.executionTime ?? 0} ms ·{' '}
                    {new Date(h.createdAt).toLocaleString()}
                    {h.error ? ` · ${h.error}` : ''}
                  </span>
                </li>
              ))}
            </ul>
          )}
        </section>
      )}
    </>
  );
}
