import { useState } from 'preact/hooks';
import { type ApiError, api, ok, okPage } from '../api/client';
import { Confirm } from '../components/confirm';
import { fieldErrors } from '../components/field-errors';
import { FormActions } from '../components/form-actions';
import { ErrorAlert, useLoad } from '../components/load';
import { Once } from '../components/once';
import { Pager, usePaged } from '../components/pager';
import { TextField } from '../components/text-field';
import { submitWith, useSubmit } from '../components/use-submit';

type Member = { id: string; email: string; name: string; role: 'admin' | 'member'; connectionIds: string[] };
type ConnectionName = { id: string; name: string };

/**
 * Settings → Members (admins only, like the API): add a member with a role and assigned connections, edit
 * them, issue a key for a member (shown once) and remove a member (its keys are revoked). The API refuses
 * to remove or demote the last admin; its message is shown as it came.
 */
/** Members; `onKeyIssued` is told when a key was issued for one (the keys list above shows it). */
export function Members({ onKeyIssued }: { onKeyIssued?: () => void }) {
  const members = usePaged((query) => okPage(api.GET('/members', { params: { query } })));
  const connections = useLoad(() => ok(api.GET('/connections', { params: { query: { pageSize: 100 } } })));
  const [editing, setEditing] = useState<string | null>(null);
  const [keyFor, setKeyFor] = useState<string | null>(null);
  const [removing, setRemoving] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const list = (members.data ?? []) as Member[];
  const conns = (connections.data ?? []) as ConnectionName[];
  const byId = new Map(conns.map((c) => [c.id, c.name]));
  const find = (id: string | null) => list.find((m) => m.id === id);
  const removal = useSubmit(async (id: string) => {
    setError(null);
    try {
      await ok(api.DELETE('/members/{id}', { params: { path: { id } } }));
      setRemoving(null);
      if (editing === id) setEditing(null);
      members.reload();
    } catch (err) {
      setError(err as ApiError);
      setRemoving(null);
    }
  });
  const remove = (id: string) => removal.run(id);
  const edited = find(editing);
  const keyMember = find(keyFor);
  const removed = find(removing);
  return (
    <section aria-labelledby="members-title">
      <h2 id="members-title">Members</h2>
      <ErrorAlert error={members.error ?? connections.error ?? error} />
      <table class="phone-cards">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Email</th>
            <th scope="col">Role</th>
            <th scope="col">Connections</th>
            <th scope="col">
              <span class="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {list.map((m) => (
            <tr key={m.id}>
              <td>{m.name}</td>
              <td class="value" data-label="Email">
                {m.email}
              </td>
              <td data-label="Role">{m.role}</td>
              <td data-label="Connections">
                {m.role === 'admin'
                  ? 'all'
                  : m.connectionIds.map((id) => byId.get(id) ?? id).join(', ') || 'none'}
              </td>
              <td class="row-actions">
                <button
                  type="button"
                  class="link"
                  onClick={() => setEditing(m.id)}
                  aria-label={`Edit member ${m.name}`}
                >
                  Edit
                </button>{' '}
                <button
                  type="button"
                  class="link"
                  onClick={() => setKeyFor(m.id)}
                  aria-label={`New key for ${m.name}`}
                >
                  New key
                </button>{' '}
                <button
                  type="button"
                  class="link"
                  onClick={() => setRemoving(m.id)}
                  aria-label={`Remove member ${m.name}`}
                >
                  Remove
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager label="Members" list={members} />
      {removed && (
        <Confirm
          question={`Remove member “${removed.name}” and revoke their keys?`}
          action="Yes, remove member"
          onConfirm={() => remove(removed.id)}
          onCancel={() => setRemoving(null)}
        />
      )}
      {edited && (
        <MemberForm
          key={edited.id}
          existing={edited}
          connections={conns}
          onSaved={() => {
            setEditing(null);
            members.reload();
          }}
          onCancel={() => setEditing(null)}
        />
      )}
      {keyMember && (
        <MemberKey
          key={keyMember.id}
          member={keyMember}
          onClose={() => setKeyFor(null)}
          onIssued={onKeyIssued}
        />
      )}
      <details class="new">
        <summary>Add member</summary>
        <MemberForm connections={conns} onSaved={() => members.reload()} />
      </details>
    </section>
  );
}

/** Adds a member, or edits one (`existing`): email only at creation, as the API allows. */
function MemberForm({
  existing,
  connections,
  onSaved,
  onCancel,
}: {
  existing?: Member;
  connections: ConnectionName[];
  onSaved: () => void;
  onCancel?: () => void;
}) {
  const blank = { email: '', name: '', role: 'member' as Member['role'], connectionIds: [] as string[] };
  const [form, setForm] = useState(existing ? { ...existing } : blank);
  const [error, setError] = useState<ApiError | null>(null);
  const [saved, setSaved] = useState(false);
  const errors = fieldErrors(error);
  const prefix = existing ? `member-${existing.id}` : 'member-new';
  const saving = useSubmit(async () => {
    setError(null);
    setSaved(false);
    const { name, role, connectionIds } = form;
    try {
      if (existing)
        await ok(
          api.PATCH('/members/{id}', {
            params: { path: { id: existing.id } },
            body: { name, role, connectionIds },
          }),
        );
      else await ok(api.POST('/members', { body: { email: form.email, name, role, connectionIds } }));
      setSaved(true);
      if (!existing) setForm(blank);
      onSaved();
    } catch (err) {
      setError(err as ApiError);
    }
  });
  const toggle = (id: string, on: boolean) =>
    setForm({
      ...form,
      connectionIds: on ? [...form.connectionIds, id] : form.connectionIds.filter((c) => c !== id),
    });
  const text = (k: 'email' | 'name', label: string) => (
    <TextField
      id={`${prefix}-${k}`}
      label={label}
      type={k === 'email' ? 'email' : 'text'}
      value={form[k]}
      onInput={(v) => setForm({ ...form, [k]: v })}
      error={errors[k]}
    />
  );
  return (
    <form
      onSubmit={submitWith(saving.run)}
      class="stack"
      aria-label={existing ? `Edit member ${existing.name}` : 'Add member'}
    >
      {existing ? <h3>Edit member {existing.email}</h3> : text('email', 'Email')}
      {text('name', 'Name')}
      <div class="field">
        <label for={`${prefix}-role`}>Role</label>
        <select
          id={`${prefix}-role`}
          value={form.role}
          onChange={(e) => setForm({ ...form, role: e.currentTarget.value as Member['role'] })}
        >
          <option value="member">member</option>
          <option value="admin">admin</option>
        </select>
      </div>
      <fieldset>
        <legend>Connections</legend>
        {form.role === 'admin' && <p class="muted">Admins use every connection.</p>}
        {connections.map((c) => (
          <label key={c.id} class="check">
            <input
              type="checkbox"
              checked={form.connectionIds.includes(c.id)}
              onChange={(e) => toggle(c.id, e.currentTarget.checked)}
            />{' '}
            {c.name}
          </label>
        ))}
        {errors.connectionIds && <span class="field-error">{errors.connectionIds}</span>}
      </fieldset>
      <ErrorAlert error={error} />
      {saved && <p role="status">Saved.</p>}
      <FormActions label={existing ? 'Save member' : 'Add member'} busy={saving.busy} onCancel={onCancel} />
    </form>
  );
}

/** Issues an API key for a member; the key is shown once. */
function MemberKey({
  member,
  onClose,
  onIssued,
}: {
  member: Member;
  onClose: () => void;
  onIssued?: () => void;
}) {
  const [name, setName] = useState('');
  const [created, setCreated] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const creating = useSubmit(async () => {
    setError(null);
    try {
      const k = await ok(
        api.POST('/members/{id}/keys', { params: { path: { id: member.id } }, body: { name } }),
      );
      setCreated(k.key);
      setName('');
      onIssued?.();
    } catch (err) {
      setError(err as ApiError);
    }
  });
  const id = `member-key-${member.id}`;
  return (
    <form onSubmit={submitWith(creating.run)} class="inline" aria-label={`New key for ${member.name}`}>
      <div class="field">
        <label for={id}>Key name for {member.name}</label>
        <input id={id} value={name} required onInput={(e) => setName(e.currentTarget.value)} />
      </div>
      <button type="submit" disabled={creating.busy}>
        Create member key
      </button>{' '}
      <button type="button" class="secondary" onClick={onClose}>
        Close
      </button>
      <ErrorAlert error={error} />
      {created && <Once label={`The new API key for ${member.name}.`} value={created} />}
    </form>
  );
}
