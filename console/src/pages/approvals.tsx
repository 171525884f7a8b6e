import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, ok, okPage } from '../api/client';
import { ErrorAlert, Loading, useLoad } from '../components/load';
import { Pager, usePaged } from '../components/pager';
import { count, type Result } from '../components/result';
import { ResultTable } from '../components/result-table';
import { useSubmit } from '../components/use-submit';
import { isAdmin, useMe } from '../me';
import { ApprovalRules } from './approval-rules';

type Outcome = (Result & { rowsAffected?: number }) | null | undefined;

const FILTERS = [
  { label: 'Decided', status: 'APPROVED,REJECTED,EXPIRED' },
  { label: 'Approved', status: 'APPROVED' },
  { label: 'Rejected', status: 'REJECTED' },
  { label: 'Expired', status: 'EXPIRED' },
  { label: 'Everything', status: '' },
] as const;
const PAGE_SIZE = 10;

/**
 * Approvals: the pending list with SQL, context, submitter and expiry; Approve runs it, Reject asks for a
 * reason. The history is the API's list of submitted queries (GET /queries), newest first, filtered by
 * status and paged; an approved query's result is read on demand (GET /queries/{id}/status).
 */
export function ApprovalsPage() {
  const pending = usePaged((query) => okPage(api.GET('/queries/pending', { params: { query } })));
  // Names of submitters and reviewers: admins may list members; anyone else sees user ids.
  const members = useLoad(() => ok(api.GET('/members', { params: { query: { pageSize: 100 } } })));
  const me = useMe();
  const names = new Map((members.data ?? []).map((m) => [m.id, m.name]));
  const who = (id: string | null) =>
    id === 'auto'
      ? 'automatic (approval rule)'
      : id && id === me?.userId
        ? 'you'
        : (names.get(id ?? '') ?? (me?.role === 'admin' ? id : 'another user'));
  const [filter, setFilter] = useState<string>(FILTERS[0].status);
  const [page, setPage] = useState(1);
  const history = useLoad(
    () =>
      okPage(
        api.GET('/queries', {
          params: { query: { page, pageSize: PAGE_SIZE, ...(filter ? { status: filter } : {}) } },
        }),
      ),
    [filter, page],
  );
  /** Results of decisions made in this tab (from the approve answer), by query id. */
  const [outcomes, setOutcomes] = useState<Record<string, Outcome>>({});
  const [error, setError] = useState<ApiError | null>(null);
  const [rejecting, setRejecting] = useState<string | null>(null);
  const [reason, setReason] = useState('');

  /** What the last decision did, announced and focused (keyboard users land on it, not on the page body). */
  const [decided, setDecided] = useState<string | null>(null);
  const announce = useRef<HTMLParagraphElement>(null);
  useEffect(() => {
    if (decided) announce.current?.focus();
  }, [decided]);
  // One decision at a time: a double click sends one approve call.
  const deciding = useSubmit(async (id: string, approve: boolean) => {
    setError(null);
    setDecided(null);
    if (!approve && !reason.trim()) {
      setError(
        new ApiError(400, 'VALIDATION_ERROR', 'Give a reason for the rejection: the submitter sees it.'),
      );
      return;
    }
    try {
      const r = approve
        ? await ok(api.POST('/queries/{id}/approve', { params: { path: { id } }, body: {} }))
        : await ok(
            api.POST('/queries/{id}/reject', { params: { path: { id } }, body: { note: reason.trim() } }),
          );
      setOutcomes((o) => ({ ...o, [id]: r.result as Outcome }));
      setDecided(
        r.status === 'APPROVED'
          ? `Approved and run${r.result && 'rowsAffected' in r.result ? ` (${count(Number(r.result.rowsAffected), 'row')} affected)` : ''}. It is in the history below.`
          : 'Rejected. It is in the history below.',
      );
      setRejecting(null);
      setReason('');
    } catch (err) {
      setError(err as ApiError);
    } finally {
      pending.reload();
      history.reload();
    }
  });
  const decide = (id: string, approve: boolean) => deciding.run(id, approve);
  const pages = Math.max(1, Math.ceil((history.data?.total ?? 0) / PAGE_SIZE));

  return (
    <>
      <h1>Approvals</h1>
      <ErrorAlert error={error} focus />
      {decided && (
        <p role="status" tabIndex={-1} ref={announce} class="ok">
          {decided}
        </p>
      )}
      {/* Members may not list members (names then stay user ids); an admin is told when the list fails. */}
      {me?.role === 'admin' && <ErrorAlert error={members.error} />}
      <h2>Pending</h2>
      {pending.error instanceof ApiError && pending.error.status === 403 ? (
        <p class="muted">
          Reviewing is for admins and the approvers an approval rule names; your own submissions are in the
          history below.
        </p>
      ) : (
        <ErrorAlert error={pending.error} />
      )}
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
                <dd>{who(p.submittedBy)}</dd>
                <dt>Expires</dt>
                <dd>{new Date(p.expiresAt).toLocaleString()}</dd>
                {p.context && (
                  <>
                    <dt>Context</dt>
                    <dd>{p.context}</dd>
                  </>
                )}
              </dl>
              {me && p.submittedBy === me.userId ? (
                <p class="muted">
                  Your submission: it waits for another reviewer (nobody approves or rejects their own).
                </p>
              ) : rejecting === p.id ? (
                <form
                  onSubmit={(e) => {
                    e.preventDefault();
                    decide(p.id, false);
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
                  <button type="submit" disabled={deciding.busy}>
                    Reject
                  </button>{' '}
                  <button type="button" class="secondary" onClick={() => setRejecting(null)}>
                    Cancel
                  </button>
                </form>
              ) : (
                <p>
                  <button type="button" onClick={() => decide(p.id, true)} disabled={deciding.busy}>
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
      <Pager label="Pending" list={pending} />
      <section aria-labelledby="approval-history-title">
        <h2 id="approval-history-title">History</h2>
        <div class="inline">
          <div class="field">
            <label for="history-filter">Show</label>
            <select
              id="history-filter"
              value={filter}
              onChange={(e) => {
                setFilter(e.currentTarget.value);
                setPage(1);
              }}
            >
              {FILTERS.map((f) => (
                <option key={f.label} value={f.status}>
                  {f.label}
                </option>
              ))}
            </select>
          </div>
        </div>
        <ErrorAlert error={history.error} />
        {history.loading && !history.data && <Loading what="the history" />}
        {history.data?.items.length === 0 && <p class="muted">No queries to show.</p>}
        <ul class="cards">
          {(history.data?.items ?? []).map((h) => (
            <li key={h.id}>
              <article aria-label={`Query ${h.id}`}>
                <p>
                  <span class={`badge ${h.status.toLowerCase()}`}>{h.status}</span> <code>{h.query}</code>
                </p>
                <dl class="facts">
                  <dt>Connection</dt>
                  <dd>{h.connectionName ?? h.connectionId}</dd>
                  <dt>Submitted</dt>
                  <dd>
                    {who(h.submittedBy)}, {new Date(h.createdAt).toLocaleString()}
                  </dd>
                  {h.reviewedBy && (
                    <>
                      <dt>Decided</dt>
                      <dd>
                        {who(h.reviewedBy)}
                        {h.reviewedAt ? `, ${new Date(h.reviewedAt).toLocaleString()}` : ''}
                      </dd>
                    </>
                  )}
                  {h.reviewNote && (
                    <>
                      <dt>Note</dt>
                      <dd>{h.reviewNote}</dd>
                    </>
                  )}
                  {h.error && (
                    <>
                      <dt>Error</dt>
                      <dd>
                        {h.error.code}: {h.error.message}
                      </dd>
                    </>
                  )}
                </dl>
                {h.status === 'APPROVED' && !h.error && <ApprovedResult id={h.id} known={outcomes[h.id]} />}
              </article>
            </li>
          ))}
        </ul>
        {pages > 1 && (
          <nav aria-label="History pages" class="inline">
            <button type="button" class="secondary" disabled={page <= 1} onClick={() => setPage(page - 1)}>
              Newer
            </button>
            <span>
              Page {page} of {pages}
            </span>
            <button
              type="button"
              class="secondary"
              disabled={page >= pages}
              onClick={() => setPage(page + 1)}
            >
              Older
            </button>
          </nav>
        )}
      </section>
      {/* Admin-only in the API (role and the `admin` scope): nobody is shown a form that can only answer 403. */}
      {isAdmin(me) && (me?.scopes.includes('*') || me?.scopes.includes('admin')) && <ApprovalRules />}
    </>
  );
}

/** An approved query's result: known from this tab's approval, or read when asked for. */
function ApprovedResult({ id, known }: { id: string; known: Outcome }) {
  const [loaded, setLoaded] = useState<Outcome>(known);
  const [error, setError] = useState<ApiError | null>(null);
  const show = async () => {
    setError(null);
    try {
      const s = await ok(api.GET('/queries/{id}/status', { params: { path: { id } } }));
      setLoaded((s.result ?? null) as Outcome);
    } catch (err) {
      setError(err as ApiError);
    }
  };
  if (loaded === undefined)
    return (
      <>
        <button type="button" class="link" onClick={show} aria-label={`Show the result of query ${id}`}>
          Show result
        </button>
        <ErrorAlert error={error} />
      </>
    );
  if (!loaded) return <p class="muted">No result was stored.</p>;
  return (
    <>
      {loaded.columns?.length > 0 && <ResultTable result={loaded} />}
      {loaded.rowsAffected !== undefined && <p>{count(loaded.rowsAffected, 'row')} affected</p>}
    </>
  );
}
