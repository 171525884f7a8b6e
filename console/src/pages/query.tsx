import { useEffect, useRef, useState } from 'preact/hooks';
import { type ApiError, api, ok, okPage } from '../api/client';
import { ConnectionSelect, useConnections } from '../components/connection-select';
import { ErrorAlert } from '../components/load';
import { Pager, usePaged } from '../components/pager';
import { count, type Result } from '../components/result';
import { type Ran, ResultActions } from '../components/result-actions';
import { ResultTable } from '../components/result-table';
import { SchemaPanel } from '../components/schema-panel';
import { SqlEditor, type SqlEditorHandle } from '../components/sql-editor';
import { submitWith, useSubmit } from '../components/use-submit';
import { useMe } from '../me';
import { href } from '../router';

/** Query: one read-only statement on a connection, its result, and the connection's query history. */
export function QueryPage({ connectionId }: { connectionId?: string }) {
  const [conn, setConn] = useState(connectionId ?? '');
  // A new address (#/query/<id>, back/forward) selects its connection.
  useEffect(() => {
    if (connectionId !== undefined) setConn(connectionId);
  }, [connectionId]);
  const [sql, setSql] = useState('');
  const [result, setResult] = useState<{ result: Result; ran: Ran; n: number } | null>(null);
  const editor = useRef<SqlEditorHandle | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  /** The statement the API refused as a write, and where: what "Submit for approval" sends. */
  const [refusal, setRefusal] = useState<{ sql: string; conn: string } | null>(null);
  const [submitted, setSubmitted] = useState<string | null>(null);
  const [context, setContext] = useState('');
  const me = useMe();
  const connections = useConnections().data;
  const known = !!conn && !!connections?.some((c) => c.id === conn);
  /** Which entries the history shows (HISTORY_VIEWS): widget loads apart from the queries people ran. */
  const [view, setView] = useState(HISTORY_VIEWS[0].source);
  const history = usePaged(
    (query) =>
      known
        ? okPage(
            api.GET('/connections/{id}/queries', {
              params: { path: { id: conn }, query: { ...query, ...(view ? { source: view } : {}) } },
            }),
          )
        : Promise.resolve({ items: [], total: 0 }),
    [conn, known, view],
  );
  // One statement at a time: Run, Enter on the button and Ctrl/⌘+Enter while one runs do nothing.
  const running = useSubmit(async () => {
    if (!known) {
      setError({ code: 'VALIDATION_ERROR', message: 'Choose a connection first.' } as ApiError);
      return;
    }
    setError(null);
    setRefusal(null);
    setSubmitted(null);
    const ran = { sql, conn };
    try {
      const result = await ok(
        api.POST('/connections/{id}/query', { params: { path: { id: conn } }, body: { sql } }),
      );
      setResult((r) => ({ result, ran: { sql, connectionId: conn }, n: (r?.n ?? 0) + 1 }));
    } catch (err) {
      setResult(null);
      setError(err as ApiError);
      if ((err as ApiError).code === 'READ_ONLY_VIOLATION') setRefusal(ran);
    } finally {
      history.reload();
    }
  });
  const submitting = useSubmit(async () => {
    if (!refusal) return;
    try {
      const r = await ok(
        api.POST('/queries/submit', {
          body: {
            connectionId: refusal.conn,
            query: refusal.sql,
            ...(context.trim() ? { context: context.trim() } : {}),
          },
        }),
      );
      setSubmitted((r as { id: string }).id);
      setContext('');
      setRefusal(null);
      setError(null);
    } catch (err) {
      setError(err as ApiError);
    }
  });
  // The refusal stands for the statement and connection it was about: editing either withdraws the offer.
  const refused = refusal !== null && refusal.sql === sql && refusal.conn === conn;
  const refusedOn = connections?.find((c) => c.id === refusal?.conn);
  const dialect = connections?.find((c) => c.id === conn)?.type;
  return (
    <>
      <h1>Query</h1>
      <div class="query-layout">
        <div class="query-main">
          <form onSubmit={submitWith(running.run)} class="stack">
            <ConnectionSelect value={conn} onChange={setConn} connections={connections} />
            <SqlEditor
              value={sql}
              onChange={setSql}
              onRun={() => void running.run()}
              connectionId={known ? conn : undefined}
              dialect={dialect}
              editorRef={editor}
            />
            <button type="submit" disabled={running.busy} aria-busy={running.busy || undefined}>
              Run
            </button>
          </form>
          <ErrorAlert error={error}>
            {refused && refusedOn?.readOnly === false && (
              <div class="stack">
                <p>
                  This statement changes data. It runs only after review:{' '}
                  {me?.role === 'admin'
                    ? 'another admin, or an approver an approval rule names, must approve it (nobody approves their own submission).'
                    : 'an admin, or an approver an approval rule names, must approve it.'}
                </p>
                <div class="field">
                  <label for="approval-context">Why (shown to the reviewer, optional)</label>
                  <input
                    id="approval-context"
                    value={context}
                    maxLength={2000}
                    onInput={(e) => setContext(e.currentTarget.value)}
                  />
                </div>
                <button type="button" onClick={() => submitting.run()} disabled={submitting.busy}>
                  Submit for approval
                </button>
              </div>
            )}
            {refused && refusedOn?.readOnly !== false && (
              <p>
                {refusedOn?.name ?? 'This connection'} is read-only: statements that change data are never run
                or submitted for approval on it.
              </p>
            )}
          </ErrorAlert>
          {submitted && (
            <p role="status">
              Submitted for approval ({submitted}). See <a href={href('approvals')}>Approvals</a>.
            </p>
          )}
          {result && (
            <>
              <ResultTable result={result.result} csvName="result.csv" caption="Query result" />
              <ResultActions key={result.n} result={result.result} ran={result.ran} />
            </>
          )}
          {conn && (
            <section aria-labelledby="history-title">
              <h2 id="history-title">History</h2>
              <div class="inline">
                <div class="field">
                  <label for="history-source">Show</label>
                  <select id="history-source" value={view} onChange={(e) => setView(e.currentTarget.value)}>
                    {HISTORY_VIEWS.map((v) => (
                      <option key={v.label} value={v.source}>
                        {v.label}
                      </option>
                    ))}
                  </select>
                </div>
              </div>
              {me && me.role !== 'admin' && (
                <p class="muted">You see the queries you ran; admins see everyone's.</p>
              )}
              <ErrorAlert error={history.error} />
              {history.data && history.data.length === 0 ? (
                <p class="muted">
                  {view === 'widget'
                    ? 'No widget loads on this connection yet.'
                    : 'No queries yet: run one above, and it appears here.'}
                </p>
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
                      <span class={`badge ${h.status.toLowerCase()}`}>{STATUS[h.status] ?? h.status}</span>{' '}
                      <span class="muted">
                        {SOURCE[h.source] ?? h.source} · {authorName(h.author, me?.userId)} ·{' '}
                        {h.rowCount !== null && h.rowCount !== undefined
                          ? `${count(h.rowCount, 'row')} · ${h.executionTime ?? 0} ms · `
                          : ''}
                        {new Date(h.createdAt).toLocaleString()}
                        {h.error ? ` · ${h.error}` : ''}
                      </span>
                    </li>
                  ))}
                </ul>
              )}
              <Pager label="History" list={history} />
            </section>
          )}
        </div>
        {known && <SchemaPanel connectionId={conn} onInsert={(text) => editor.current?.insert(text)} />}
      </div>
    </>
  );
}

/**
 * How query history names an outcome. REJECTED there is the guard's refusal of a statement that is not
 * one read ("Refused"), not a reviewer's rejection of a submitted write (Approvals says "Rejected").
 */
const STATUS: Record<string, string> = {
  SUCCESS: 'Succeeded',
  FAILED: 'Failed',
  REJECTED: 'Refused',
  TIMEOUT: 'Timed out',
};

/** The history's "Show" choices: `source` values for GET /connections/{id}/queries ('' = every entry). */
const HISTORY_VIEWS = [
  { label: 'Queries (no widget loads)', source: 'query,saved_query,metric,chat,approval,workflow,mcp' },
  { label: 'Ad-hoc queries only', source: 'query' },
  { label: 'Widget loads', source: 'widget' },
  { label: 'Everything', source: '' },
];

/** How query history names what ran an entry (its `source`). */
const SOURCE: Record<string, string> = {
  query: 'Ad hoc',
  widget: 'Widget load',
  saved_query: 'Saved query',
  metric: 'Metric',
  chat: 'Chat',
  approval: 'Approved submission',
  workflow: 'Workflow',
  mcp: 'MCP',
};

/** Who ran an entry: "you", the user's name (or email), "(removed)" for a former member, or unknown. */
function authorName(
  author: { id: string; name: string | null; email: string | null; removed: boolean } | null | undefined,
  me: string | undefined,
): string {
  if (!author) return 'unknown user';
  if (author.id === me) return 'you';
  const name = author.name || author.email || 'unknown user';
  return author.removed ? `${name} (removed)` : name;
}
