import { useState } from 'preact/hooks';
import { type ApiError, api, ok } from '../api/client';
import { ErrorAlert, Loading, useLoad } from '../components/load';
import type { Result } from '../components/result';
import { ResultTable } from '../components/result-table';

interface Decision {
  id: string;
  query: string;
  status: string;
  note: string | null;
  at: string;
}

/**
 * Approvals: the pending list with SQL, context, submitter and expiry; Approve runs it, Reject asks for a
 * reason. The history lists the decisions made in this tab (the API lists pending queries only).
 */
export function ApprovalsPage() {
  const pending = useLoad(() => ok(api.GET('/queries/pending', { params: { query: { pageSize: 100 } } })));
  const [history, setHistory] = useState<
    (Decision & { result?: (Result & { rowsAffected?: number }) | null })[]
  >([]);
  const [error, setError] = useState<ApiError | null>(null);
  const [rejecting, setRejecting] = useState<string | null>(null);
  const [reason, setReason] = useState('');

  const decide = async (id: string, query: string, approve: boolean) => {
    setError(null);
    try {
      const r = approve
        ? await ok(api.POST('/queries/{id}/approve', { params: { path: { id } }, body: {} }))
        : await ok(api.POST('/queries/{id}/reject', { params: { path: { id } }, body: { note: reason } }));
      setHistory((h) => [
        { id, query, status: r.status, note: r.reviewNote, at: new Date().toISOString(), result: r.result },
        ...h,
      ]);
      setRejecting(null);
      setReason('');
    } catch (err) {
      setError(err as ApiError);
    } finally {
      pending.reload();
    }
  };

  return (
    <>
      <h1>Approvals</h1>
      <ErrorAlert error={pending.error} />
      <ErrorAlert error={error} />
      <h2>Pending</h2>
      {pending.loading && !pending.data && <Loading what="pending queries" />}
      {pending.data?.length === 0 && <p class="muted">Nothing is waiting for approval.</p>}
      <ul class="cards">
        {(pending.data ?? []).map((p) => (
          <li key={p.id}>
            <article aria-label={`Pending query ${p.id}`}>
              <pre>
                <code>{p.query}</code>
              </pre>
              <dl class="facts">
                <dt>Connection</dt>
                <dd>{p.connectionName ?? p.connectionId}</dd>
                <dt>Kind</dt>
                <dd>
                  {p.statementKind} ({p.statementType})
                </dd>
                <dt>Submitted by</dt>
                <dd>{p.submittedBy}</dd>
                <dt>Expires</dt>
                <dd>{new Date(p.expiresAt).toLocaleString()}</dd>
                {p.context && (
                  <>
                    <dt>Context</dt>
                    <dd>{p.context}</dd>
                  </>
                )}
              </dl>
              {rejecting === p.id ? (
                <form
                  onSubmit={(e) => {
                    e.preventDefault();
                    decide(p.id, p.query, false);
                  }}
                  class="inline"
                >
                  <div class="field">
                    <label for={`reason-${p.id}`}>Reason</label>
                    <input
                      id={`reason-${p.id}`}
                      value={reason}
                      required
                      onInput={(e) => setReason(e.currentTarget.value)}
                    />
                  </div>
                  <button type="submit">Reject</button>{' '}
                  <button type="button" class="secondary" onClick={() => setRejecting(null)}>
                    Cancel
                  </button>
                </form>
              ) : (
                <p>
                  <button type="button" onClick={() => decide(p.id, p.query, true)}>
                    Approve
                  </button>{' '}
                  <button type="button" class="secondary" onClick={() => setRejecting(p.id)}>
                    Reject
                  </button>
                </p>
              )}
            </article>
          </li>
        ))}
      </ul>
      <h2>History</h2>
      {history.length === 0 && <p class="muted">No decisions in this session yet.</p>}
      <ul class="cards">
        {history.map((h) => (
          <li key={h.id}>
            <p>
              <span class={`badge ${h.status.toLowerCase()}`}>{h.status}</span> <code>{h.query}</code>
              {h.note && <span class="muted"> · {h.note}</span>}
            </p>
            {h.result && h.result.columns.length > 0 && <ResultTable result={h.result} />}
            {h.result?.rowsAffected !== undefined && <p>{h.result.rowsAffected} rows affected</p>}
          </li>
        ))}
      </ul>
    </>
  );
}
