import { useState } from 'preact/hooks';
import { type ApiError, api, ok, okPage } from '../api/client';
import type { operations } from '../api/schema.gen';
import { Confirm } from '../components/confirm';
import { ErrorAlert, useLoad } from '../components/load';
import { Once } from '../components/once';
import { Pager, usePaged } from '../components/pager';
import { submitWith, useSubmit } from '../components/use-submit';
import { isAdmin, loadMe, useMe } from '../me';
import { session } from '../session';
import { Members } from './members';
import { Webhooks } from './webhooks';

/**
 * Settings: API keys (a new key is shown once), members, and event webhooks (secret shown once, deliveries,
 * test). All three are admin-only in the API, so a member sees a note instead; nothing shows until the
 * key's role is known (no flash of forms the API would refuse).
 */
export function SettingsPage() {
  const me = useLoad(loadMe);
  // A key issued for a member (under Members) is listed under API keys at once.
  const [keysRound, setKeysRound] = useState(0);
  return (
    <>
      <h1>Settings</h1>
      <ErrorAlert error={me.error} />
      {me.data &&
        (isAdmin(me.data) ? (
          <>
            <Keys round={keysRound} />
            <Members onKeyIssued={() => setKeysRound((r) => r + 1)} />
            <Webhooks />
          </>
        ) : (
          <p class="note">
            Settings are managed by admins: API keys, members and event webhooks. Ask an admin of your
            organization for a key.
          </p>
        ))}
    </>
  );
}

/** A key's scopes as the API stores them (a JSON array in a string), shown as a readable list. */
export function scopesText(json: string): string {
  try {
    const v: unknown = JSON.parse(json);
    if (Array.isArray(v)) return v.map((x) => (x === '*' ? 'all (*)' : String(x))).join(', ') || 'none';
  } catch {
    // shown as it came below
  }
  return json;
}

type Scope = NonNullable<
  operations['postKeys']['requestBody']['content']['application/json']['scopes']
>[number];

/** The scopes a key can be given (POST /keys), each with a plain label. */
export const KEY_SCOPES: { scope: Exclude<Scope, '*'>; label: string }[] = [
  { scope: 'query', label: 'Run queries' },
  { scope: 'chat', label: 'Chat' },
  { scope: 'connections', label: 'Connections' },
  { scope: 'dashboards', label: 'Dashboards' },
  { scope: 'workflows', label: 'Workflows' },
  { scope: 'workflow_credentials', label: 'Workflow credentials' },
  { scope: 'usage', label: 'Usage' },
  { scope: 'webhooks', label: 'Webhooks' },
  { scope: 'admin', label: 'Administration' },
];

/** The scopes a key holding `held` may grant: a new key gets a subset of the calling key's scopes. */
export const grantableScopes = (held: string[]) =>
  held.includes('*') ? KEY_SCOPES : KEY_SCOPES.filter((s) => held.includes(s.scope));

function Keys({ round }: { round: number }) {
  const me = useMe();
  const keys = usePaged((query) => okPage(api.GET('/keys', { params: { query } })), [round]);
  // Owners by name: the list gives each key's userId (admins may read the members).
  const members = useLoad(() => ok(api.GET('/members', { params: { query: { pageSize: 100 } } })), [round]);
  const owner = (userId: string) =>
    `${members.data?.find((m) => m.id === userId)?.name ?? userId}${userId === me?.userId ? ' (you)' : ''}`;
  const signedInKey = session.key() ?? '';
  const isThisKey = (prefix: string) => prefix.length > 0 && signedInKey.startsWith(prefix);
  const [name, setName] = useState('');
  const grantable = grantableScopes(me?.scopes ?? []);
  // Scopes left unchecked; every grantable scope is checked until the admin unchecks it.
  const [unchecked, setUnchecked] = useState<Set<string>>(new Set());
  const chosen = grantable.map((s) => s.scope).filter((s) => !unchecked.has(s));
  const [created, setCreated] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [revoking, setRevoking] = useState<{ id: string; name: string; prefix: string } | null>(null);
  const creating = useSubmit(async () => {
    setError(null);
    try {
      // Every scope of a key holding `*` is `*` (it also covers scopes added later).
      const all = !!me?.scopes.includes('*') && chosen.length === KEY_SCOPES.length;
      const scopes: Scope[] = all ? ['*'] : chosen;
      const k = await ok(api.POST('/keys', { body: { name, scopes } }));
      setCreated(k.key);
      setName('');
      setUnchecked(new Set());
      keys.reload();
    } catch (err) {
      setError(err as ApiError);
    }
  });
  const revocation = useSubmit(async (id: string) => {
    setError(null);
    try {
      await ok(api.DELETE('/keys/{id}', { params: { path: { id } } }));
      setRevoking(null);
      keys.reload();
    } catch (err) {
      setRevoking(null);
      setError(err as ApiError);
    }
  });
  return (
    <section aria-labelledby="keys-title">
      <h2 id="keys-title">API keys</h2>
      <ErrorAlert error={keys.error ?? error} />
      <table class="phone-cards">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Prefix</th>
            <th scope="col">Owner</th>
            <th scope="col">Scopes</th>
            <th scope="col">Last used</th>
            <th scope="col">
              <span class="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {(keys.data ?? []).map((k) => (
            <tr key={k.id}>
              <td>
                {k.name}
                {isThisKey(k.keyPrefix) && <span class="badge success"> this key</span>}
              </td>
              <td data-label="Prefix">
                <code>{k.keyPrefix}</code>
              </td>
              <td data-label="Owner">{owner(k.userId)}</td>
              <td data-label="Scopes">{scopesText(k.scopes)}</td>
              <td data-label="Last used">
                {k.lastUsedAt ? new Date(k.lastUsedAt).toLocaleString() : 'never'}
              </td>
              <td class="row-actions">
                <button
                  type="button"
                  class="link"
                  onClick={() => setRevoking({ id: k.id, name: k.name, prefix: k.keyPrefix })}
                  aria-label={`Revoke ${k.name}`}
                  disabled={revocation.busy}
                >
                  Revoke
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager label="API keys" list={keys} />
      {revoking && (
        <Confirm
          question={
            isThisKey(revoking.prefix)
              ? `Revoke “${revoking.name}”? It is the key you are signed in with: you will be signed out.`
              : `Revoke “${revoking.name}”? Anything using it stops working.`
          }
          action="Revoke key"
          onConfirm={() => revocation.run(revoking.id)}
          onCancel={() => setRevoking(null)}
        />
      )}
      <form onSubmit={submitWith(creating.run)} class="inline">
        <div class="field">
          <label for="key-name">New key name</label>
          <input id="key-name" value={name} required onInput={(e) => setName(e.currentTarget.value)} />
        </div>
        <fieldset>
          <legend>Scopes of the new key</legend>
          {grantable.map((s) => (
            <label key={s.scope} class="check">
              <input
                type="checkbox"
                checked={!unchecked.has(s.scope)}
                onChange={(e) => {
                  const on = e.currentTarget.checked;
                  setUnchecked((u) => {
                    const next = new Set(u);
                    if (on) next.delete(s.scope);
                    else next.add(s.scope);
                    return next;
                  });
                }}
              />{' '}
              {s.label}
            </label>
          ))}
        </fieldset>
        <button type="submit" disabled={creating.busy || chosen.length === 0}>
          Create key
        </button>
      </form>
      {created && <Once label="The new API key." value={created} />}
    </section>
  );
}
