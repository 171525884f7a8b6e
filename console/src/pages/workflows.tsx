import { useState } from 'preact/hooks';
import { type ApiError, api, ok, okPage } from '../api/client';
import { Confirm } from '../components/confirm';
import { useConnections } from '../components/connection-select';
import { ErrorAlert, Loading } from '../components/load';
import { NotShown, Pager, usePaged, useSelected } from '../components/pager';
import { count } from '../components/result';
import { ResultTable } from '../components/result-table';
import { useSubmit } from '../components/use-submit';
import { mayChange, useMe } from '../me';
import { href } from '../router';
import { WorkflowForm, type WorkflowRecord } from './workflow-form';
import { RunNote } from './workflow-run-note';
import { scheduleText } from './workflow-schedule';

/**
 * Workflows: the list, "New workflow" (the builder), one workflow's definition with Edit, Run now,
 * publishing and deletion, and its runs with step and action results.
 */
export function WorkflowsPage({ id }: { id?: string }) {
  const list = usePaged((query) => okPage(api.GET('/workflows', { params: { query } })));
  // A deep link to a workflow on another page of the list (or to none) reads it by its id.
  const {
    selected,
    error: notShown,
    reload,
  } = useSelected(list, id, (one) => ok(api.GET('/workflows/{id}', { params: { path: { id: one } } })));
  const [creating, setCreating] = useState(false);
  return (
    <>
      <h1>Workflows</h1>
      <ErrorAlert error={list.error} />
      {list.loading && !list.data && <Loading what="workflows" />}
      {list.data?.length === 0 && <p class="muted">No workflows yet.</p>}
      <table hidden={list.data?.length === 0} class="phone-cards">
        <caption class="sr-only">Workflows</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Trigger</th>
            <th scope="col">State</th>
            <th scope="col">Published</th>
          </tr>
        </thead>
        <tbody>
          {(list.data ?? []).map((w) => (
            <tr key={w.id}>
              <td>
                <a href={href('workflows', w.id)}>{w.name}</a>
              </td>
              <td data-label="Trigger">{w.triggerType}</td>
              <td data-label="State">{w.isActive ? 'active' : 'inactive'}</td>
              <td data-label="Published">
                {w.publishedVersion ? `version ${w.publishedVersion}` : 'never'}
                {w.publishedVersion && w.hasUnpublishedChanges ? ' (unpublished changes)' : ''}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager label="Workflows" list={list} />
      {creating ? (
        <section aria-labelledby="wf-new-title" class="detail">
          <h2 id="wf-new-title">New workflow</h2>
          <WorkflowForm
            onSaved={(w) => {
              setCreating(false);
              list.reload();
              location.hash = href('workflows', w.id);
            }}
            onCancel={() => setCreating(false)}
          />
        </section>
      ) : (
        <p>
          <button type="button" onClick={() => setCreating(true)}>
            New workflow
          </button>
        </p>
      )}
      <NotShown error={notShown} id={id} what="workflow" route="workflows" />
      {selected && !creating && (
        <WorkflowDetail
          key={selected.id}
          workflow={selected as WorkflowRecord}
          onChanged={() => {
            reload();
          }}
        />
      )}
    </>
  );
}

function WorkflowDetail({ workflow, onChanged }: { workflow: WorkflowRecord; onChanged: () => void }) {
  // The API's answer to a change made here (publish, deactivate, save) shows at once, with the buttons it
  // implies; a later read of the workflow replaces it.
  const [own, setOwn] = useState<WorkflowRecord | null>(null);
  const w = own && own.updatedAt >= workflow.updatedAt ? own : workflow;
  // Its creator and admins change, publish, deactivate and delete it (the API answers 403 to other
  // members, who may still read and run it). Nothing that changes it is shown until the key's role is known.
  const me = useMe();
  const canChange = mayChange(me, w);
  const runs = usePaged(
    (query) => okPage(api.GET('/workflows/{id}/runs', { params: { path: { id: w.id }, query } })),
    [w.id],
  );
  const connections = useConnections();
  const connectionName = (cid: string | null) =>
    connections.data?.find((c) => c.id === (cid ?? w.connectionId))?.name ?? cid ?? w.connectionId ?? '';
  const [error, setError] = useState<ApiError | null>(null);
  const [warnings, setWarnings] = useState<string[] | null>(null);
  const [editing, setEditing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [status, setStatus] = useState<string | null>(null);
  const running = useSubmit(async () => {
    setError(null);
    try {
      await ok(api.POST('/workflows/{id}/run', { params: { path: { id: w.id } } }));
    } catch (err) {
      setError(err as ApiError);
    } finally {
      runs.reload();
    }
  });
  const publishing = useSubmit(async (acknowledge: boolean) => {
    setError(null);
    setStatus(null);
    try {
      const r = await ok(
        api.PATCH('/workflows/{id}', {
          params: { path: { id: w.id } },
          body: {
            isActive: true,
            ...(acknowledge && warnings ? { acknowledgedWarnings: warnings } : {}),
          },
        }),
      );
      setWarnings(null);
      setOwn(r as WorkflowRecord);
      setStatus(`Published version ${r.publishedVersion}.`);
      onChanged();
    } catch (err) {
      const e = err as ApiError;
      const found = (e.details as { warnings?: string[] } | undefined)?.warnings;
      if (found?.length) setWarnings(found);
      else setError(e);
    }
  });
  const deactivating = useSubmit(async () => {
    setError(null);
    setStatus(null);
    try {
      setOwn(
        (await ok(
          api.PATCH('/workflows/{id}', { params: { path: { id: w.id } }, body: { isActive: false } }),
        )) as WorkflowRecord,
      );
      onChanged();
    } catch (err) {
      setError(err as ApiError);
    }
  });
  const removing = useSubmit(async () => {
    setError(null);
    try {
      await ok(api.DELETE('/workflows/{id}', { params: { path: { id: w.id } } }));
      location.hash = href('workflows');
      onChanged();
    } catch (err) {
      setDeleting(false);
      setError(err as ApiError);
    }
  });
  const busy = running.busy || publishing.busy || deactivating.busy || removing.busy;
  return (
    <section aria-labelledby="wf-title" class="detail">
      <h2 id="wf-title">{w.name}</h2>
      {w.description && <p class="muted">{w.description}</p>}
      <p class="muted">
        {w.isActive ? `Active: version ${w.publishedVersion} runs` : 'Inactive draft'}
        {w.hasUnpublishedChanges && w.publishedVersion ? '; the draft has unpublished changes' : ''}
        {` · draft revision ${w.draftRevision}`}
      </p>
      {editing && canChange ? (
        <section aria-label={`Edit workflow ${w.name}`}>
          <h3>Edit workflow</h3>
          <WorkflowForm
            existing={w}
            onSaved={(saved) => {
              setOwn(saved);
              setEditing(false);
              setWarnings(null);
              setStatus(
                saved.isActive
                  ? `Saved as draft revision ${saved.draftRevision}: “Publish changes” makes it version ${(saved.publishedVersion ?? 0) + 1}.`
                  : `Saved as draft revision ${saved.draftRevision}.`,
              );
              onChanged();
            }}
            onCancel={() => setEditing(false)}
          />
        </section>
      ) : (
        <Definition workflow={w} connectionName={connectionName} />
      )}
      <p class="actions">
        <button type="button" onClick={() => running.run()} disabled={busy} aria-describedby="wf-run-note">
          Run now
        </button>{' '}
        {canChange && (!w.isActive || w.hasUnpublishedChanges) && (
          <button type="button" class="secondary" onClick={() => publishing.run(false)} disabled={busy}>
            {w.isActive ? 'Publish changes' : 'Publish'}
          </button>
        )}{' '}
        {canChange && !editing && (
          <button type="button" class="secondary" onClick={() => setEditing(true)} disabled={busy}>
            Edit
          </button>
        )}{' '}
        {canChange && w.isActive && (
          <button type="button" class="secondary" onClick={() => deactivating.run()} disabled={busy}>
            Deactivate
          </button>
        )}{' '}
        {canChange && (
          <button type="button" class="secondary" onClick={() => setDeleting(true)} disabled={busy}>
            Delete workflow
          </button>
        )}
      </p>
      {me && !canChange && (
        <p class="muted">You can look at and run this workflow; its creator and admins change it.</p>
      )}
      <RunNote workflow={w} id="wf-run-note" />
      {deleting && canChange && (
        <Confirm
          question={`Delete the workflow “${w.name}” with its runs? This cannot be undone.`}
          action="Yes, delete workflow"
          onConfirm={() => removing.run()}
          onCancel={() => setDeleting(false)}
        />
      )}
      <ErrorAlert error={error} />
      {status && <p role="status">{status}</p>}
      {warnings && canChange && (
        <section aria-label="Publish warnings" class="alert">
          <p>Publishing needs these warnings acknowledged:</p>
          <ul>
            {warnings.map((x) => (
              <li key={x}>{x}</li>
            ))}
          </ul>
          <button type="button" onClick={() => publishing.run(true)} disabled={busy}>
            Publish anyway
          </button>
        </section>
      )}
      <h3 id="wf-runs">Runs</h3>
      <ErrorAlert error={runs.error} />
      {runs.data?.length === 0 && <p class="muted">No runs yet.</p>}
      <ul class="cards" aria-labelledby="wf-runs">
        {(runs.data ?? []).map((r) => (
          <li key={r.id}>
            <p>
              <span class={`badge ${r.status.toLowerCase()}`}>{r.status}</span> {r.trigger} ·{' '}
              {new Date(r.startedAt).toLocaleString()}
              {r.durationMs !== null ? ` · ${r.durationMs} ms` : ''}
            </p>
            {r.error && <p class="alert">{r.error}</p>}
            {r.stepResults && (
              <details>
                <summary>Step results</summary>
                <StepResults json={r.stepResults} />
              </details>
            )}
            {r.actionResults && (
              <details>
                <summary>Action results</summary>
                <ActionResults json={r.actionResults} />
              </details>
            )}
          </li>
        ))}
      </ul>
      <Pager label="Runs" list={runs} />
    </section>
  );
}

type StepResult = {
  name?: string;
  order: number;
  status: string;
  rowCount?: number;
  executionTimeMs?: number;
  truncated?: boolean;
  error?: string | null;
  columns?: string[];
  rows?: Record<string, unknown>[];
};
type ActionResult = {
  order: number;
  type: string;
  success: boolean;
  attempts?: number;
  error?: string | null;
  summary?: { url?: string; statusCode?: number; recipients?: number };
};

/** A run's JSON text, parsed; anything unreadable is shown as it came. */
function parse<T>(json: string): T[] | null {
  try {
    const v = JSON.parse(json);
    return Array.isArray(v) ? (v as T[]) : null;
  } catch {
    return null;
  }
}

/** Each step's outcome and the rows the run kept (as a table, values as text). */
function StepResults({ json }: { json: string }) {
  const steps = parse<StepResult>(json);
  if (!steps) return <pre>{json}</pre>;
  if (steps.length === 0) return <p class="muted">No steps ran.</p>;
  return (
    <>
      {steps.map((st) => (
        <div key={st.order} class="step-result">
          <p>
            <span class={`badge ${st.status.toLowerCase()}`}>{st.status}</span> Step {st.order + 1}
            {st.name ? `: ${st.name}` : ''}
            {st.rowCount !== undefined ? ` · ${count(st.rowCount, 'row')}` : ''}
            {st.executionTimeMs !== undefined ? ` · ${st.executionTimeMs} ms` : ''}
          </p>
          {st.error && <p class="alert">{st.error}</p>}
          {st.columns && st.rows && (
            <ResultTable
              result={{
                columns: st.columns,
                rows: st.rows,
                rowCount: st.rowCount ?? st.rows.length,
                truncated: st.truncated,
              }}
              caption={`Rows of step ${st.order + 1}`}
            />
          )}
        </div>
      ))}
    </>
  );
}

/** Each action's delivery: where it went, the answer's status code, attempts and the error. */
function ActionResults({ json }: { json: string }) {
  const actions = parse<ActionResult>(json);
  if (!actions) return <pre>{json}</pre>;
  if (actions.length === 0) return <p class="muted">No actions ran.</p>;
  return (
    <div class="table-wrap">
      <table>
        <caption class="sr-only">Action results</caption>
        <thead>
          <tr>
            <th scope="col">Action</th>
            <th scope="col">Outcome</th>
            <th scope="col">Destination</th>
            <th scope="col">HTTP status</th>
            <th scope="col">Attempts</th>
            <th scope="col">Error</th>
          </tr>
        </thead>
        <tbody>
          {actions.map((a) => (
            <tr key={a.order}>
              <td>
                {a.order + 1}. {a.type}
              </td>
              <td>
                <span class={`badge ${a.success ? 'success' : 'failed'}`}>
                  {a.success ? 'delivered' : 'failed'}
                </span>
              </td>
              <td class="value">
                {a.summary?.url ??
                  (a.summary?.recipients !== undefined ? `${a.summary.recipients} recipients` : '')}
              </td>
              <td>{a.summary?.statusCode ?? ''}</td>
              <td>{a.attempts ?? ''}</td>
              <td class="value">{a.error ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** What the workflow does: its trigger, steps (connection and SQL) and actions, as the draft stands. */
function Definition({
  workflow: w,
  connectionName,
}: {
  workflow: WorkflowRecord;
  connectionName: (id: string | null) => string;
}) {
  return (
    <>
      <dl class="facts">
        <dt>Trigger</dt>
        <dd>{w.triggerType === 'SCHEDULE' ? scheduleText(w.triggerConfig) : 'Run by hand'}</dd>
      </dl>
      <h3>Steps</h3>
      <ol class="definition">
        {w.steps.map((s) => (
          <li key={s.id}>
            <strong>{s.name}</strong> on {connectionName(s.connectionId)}
            {s.stopIfEmpty ? ' (stops the run when empty)' : ''}
            <pre>{s.query}</pre>
          </li>
        ))}
      </ol>
      <h3>Actions</h3>
      {w.actions.length === 0 && <p class="muted">No actions: runs only record their query results.</p>}
      <ol class="definition">
        {w.actions.map((a) => (
          <li key={a.id}>
            <ActionSummary type={a.type} config={a.config} />
          </li>
        ))}
      </ol>
    </>
  );
}

function ActionSummary({ type, config }: { type: string; config: string }) {
  let c: Record<string, unknown> = {};
  try {
    c = JSON.parse(config);
  } catch {
    return <code>{config}</code>;
  }
  if (type === 'WEBHOOK')
    return (
      <>
        Webhook: <code>{String(c.method)}</code> <span class="value">{String(c.url)}</span>
        {c.credentialId ? ' with a credential' : ''}
      </>
    );
  const to = Array.isArray(c.to) ? c.to.join(', ') : String(c.to ?? '');
  return (
    <>
      E-mail to <span class="value">{to}</span>: “{String(c.subject ?? '')}”
      {c.attachCsv ? ', CSV attached' : ''}
    </>
  );
}
