import { useState } from 'preact/hooks';
import { type ApiError, api, ok, okPage } from '../api/client';
import { Confirm } from '../components/confirm';
import { useConnections } from '../components/connection-select';
import { fieldErrors } from '../components/field-errors';
import { FormActions } from '../components/form-actions';
import { ErrorAlert, Loading, useLoad } from '../components/load';
import { Pager, usePaged } from '../components/pager';
import { submitWith, useSubmit } from '../components/use-submit';

interface Rule {
  id: string;
  connectionId: string | null;
  scope: 'all' | 'write';
  approvers: string[];
  isActive: boolean;
}

const SCOPES = [
  ['all', 'Every submitted query'],
  ['write', 'Writes only (a submitted read runs at once)'],
] as const;

/**
 * Approval rules (admins only in the API): who approves the queries submitted on a connection (or on
 * all connections), and whether every query or only writes need it. Without a matching active rule any
 * admin approves. Listed, added, edited (also turned off and on) and deleted here.
 */
export function ApprovalRules() {
  const rules = usePaged((query) => okPage(api.GET('/approval-rules', { params: { query } })));
  const members = useLoad(() => ok(api.GET('/members', { params: { query: { pageSize: 100 } } })));
  const connections = useConnections();
  const memberName = (id: string) => members.data?.find((m) => m.id === id)?.name ?? id;
  const connectionName = (id: string | null) =>
    id === null ? 'All connections' : (connections.data?.find((c) => c.id === id)?.name ?? id);
  const [editing, setEditing] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<Rule | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [status, setStatus] = useState('');
  const removing = useSubmit(async (id: string) => {
    setError(null);
    try {
      await ok(api.DELETE('/approval-rules/{id}', { params: { path: { id } } }));
      setStatus('Approval rule deleted.');
      rules.reload();
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setDeleting(null);
    }
  });
  const saved = (what: string) => {
    setEditing(null);
    setStatus(what);
    rules.reload();
  };
  return (
    <section aria-labelledby="rules-title">
      <h2 id="rules-title">Approval rules</h2>
      <p class="muted">
        Who approves the queries submitted on a connection. Without a matching active rule, any admin
        approves; nobody approves their own submission.
      </p>
      <ErrorAlert error={rules.error ?? error} />
      <ErrorAlert error={members.error} />
      {rules.loading && !rules.data && <Loading what="approval rules" />}
      {rules.data?.length === 0 && <p class="muted">No approval rules yet.</p>}
      <ul class="cards" aria-label="Approval rules">
        {((rules.data ?? []) as Rule[]).map((r) => {
          const label = `${connectionName(r.connectionId)}: ${r.scope === 'all' ? 'every query' : 'writes only'}`;
          return (
            <li key={r.id}>
              <article aria-label={`Approval rule ${label}`}>
                <dl class="facts">
                  <dt>Connection</dt>
                  <dd>{connectionName(r.connectionId)}</dd>
                  <dt>Needs approval</dt>
                  <dd>{SCOPES.find(([v]) => v === r.scope)?.[1] ?? r.scope}</dd>
                  <dt>Approvers</dt>
                  <dd>{r.approvers.map(memberName).join(', ')}</dd>
                  <dt>State</dt>
                  <dd>{r.isActive ? 'active' : 'off'}</dd>
                </dl>
                {editing === r.id ? (
                  <RuleForm
                    existing={r}
                    members={members.data ?? []}
                    connections={connections.data ?? []}
                    onSaved={() => saved('Approval rule saved.')}
                    onCancel={() => setEditing(null)}
                  />
                ) : (
                  <p>
                    <button
                      type="button"
                      class="link"
                      onClick={() => setEditing(r.id)}
                      aria-label={`Edit approval rule ${label}`}
                    >
                      Edit
                    </button>{' '}
                    <button
                      type="button"
                      class="link"
                      onClick={() => setDeleting(r)}
                      aria-label={`Delete approval rule ${label}`}
                    >
                      Delete
                    </button>
                  </p>
                )}
                {deleting?.id === r.id && (
                  <Confirm
                    question={`Delete the approval rule for ${connectionName(r.connectionId)}?`}
                    action="Yes, delete rule"
                    onConfirm={() => removing.run(r.id)}
                    onCancel={() => setDeleting(null)}
                  />
                )}
              </article>
            </li>
          );
        })}
      </ul>
      <Pager label="Approval rules" list={rules} />
      <p role="status">{status}</p>
      <details class="new">
        <summary>New approval rule</summary>
        <RuleForm
          members={members.data ?? []}
          connections={connections.data ?? []}
          onSaved={() => saved('Approval rule added.')}
        />
      </details>
    </section>
  );
}

function RuleForm({
  existing,
  members,
  connections,
  onSaved,
  onCancel,
}: {
  existing?: Rule;
  members: { id: string; name: string; email: string; role: string }[];
  connections: { id: string; name: string; type: string }[];
  onSaved: () => void;
  onCancel?: () => void;
}) {
  const [f, setF] = useState({
    connectionId: existing?.connectionId ?? '',
    scope: existing?.scope ?? ('all' as Rule['scope']),
    approvers: existing?.approvers ?? ([] as string[]),
    isActive: existing?.isActive ?? true,
  });
  const [error, setError] = useState<ApiError | null>(null);
  const errors = fieldErrors(error);
  const prefix = existing ? `rule-${existing.id}` : 'rule-new';
  const save = useSubmit(async () => {
    setError(null);
    const body = { connectionId: f.connectionId || null, scope: f.scope, approvers: f.approvers };
    try {
      if (existing)
        await ok(
          api.PATCH('/approval-rules/{id}', {
            params: { path: { id: existing.id } },
            body: { ...body, isActive: f.isActive },
          }),
        );
      else await ok(api.POST('/approval-rules', { body }));
      if (!existing) setF({ connectionId: '', scope: 'all', approvers: [], isActive: true });
      onSaved();
    } catch (err) {
      setError(err as ApiError);
    }
  });
  const approverError =
    errors.approvers ?? Object.entries(errors).find(([k]) => k.startsWith('approvers.'))?.[1];
  return (
    <form class="stack" onSubmit={submitWith(save.run)}>
      <div class="field">
        <label for={`${prefix}-connection`}>Rule connection</label>
        <select
          id={`${prefix}-connection`}
          value={f.connectionId}
          onChange={(e) => setF({ ...f, connectionId: e.currentTarget.value })}
          aria-invalid={errors.connectionId ? true : undefined}
          aria-describedby={errors.connectionId ? `${prefix}-connection-error` : undefined}
        >
          <option value="">All connections</option>
          {connections.map((c) => (
            <option key={c.id} value={c.id}>
              {c.name} ({c.type})
            </option>
          ))}
        </select>
        {errors.connectionId && (
          <span id={`${prefix}-connection-error`} class="field-error">
            {errors.connectionId}
          </span>
        )}
      </div>
      <div class="field">
        <label for={`${prefix}-scope`}>Needs approval</label>
        <select
          id={`${prefix}-scope`}
          value={f.scope}
          onChange={(e) => setF({ ...f, scope: e.currentTarget.value as Rule['scope'] })}
        >
          {SCOPES.map(([v, label]) => (
            <option key={v} value={v}>
              {label}
            </option>
          ))}
        </select>
      </div>
      <fieldset aria-describedby={approverError ? `${prefix}-approvers-error` : undefined}>
        <legend>Approvers</legend>
        {members.map((m) => (
          <label key={m.id} class="check">
            <input
              type="checkbox"
              checked={f.approvers.includes(m.id)}
              onChange={(e) =>
                setF({
                  ...f,
                  approvers: e.currentTarget.checked
                    ? [...f.approvers, m.id]
                    : f.approvers.filter((a) => a !== m.id),
                })
              }
            />{' '}
            {m.name}{' '}
            <span class="muted">
              ({m.email}, {m.role})
            </span>
          </label>
        ))}
        {approverError && (
          <span id={`${prefix}-approvers-error`} class="field-error">
            {approverError}
          </span>
        )}
      </fieldset>
      {existing && (
        <label class="check">
          <input
            type="checkbox"
            checked={f.isActive}
            onChange={(e) => setF({ ...f, isActive: e.currentTarget.checked })}
          />{' '}
          Active
        </label>
      )}
      <ErrorAlert error={error} />
      <FormActions label={existing ? 'Save rule' : 'Add rule'} busy={save.busy} onCancel={onCancel} />
    </form>
  );
}
