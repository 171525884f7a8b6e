import { useState } from 'preact/hooks';
import { type ApiError, api, ok } from '../api/client';
import { ErrorAlert, useLoad } from '../components/load';
import { Once } from '../components/once';
import { isAdmin, loadMe } from '../me';
import { Members } from './members';
import { Webhooks } from './webhooks';

/**
 * Settings: API keys (a new key is shown once), members, and event webhooks (secret shown once, deliveries,
 * test). All three are admin-only in the API, so a member sees a note instead; nothing shows until the
 * key's role is known (no flash of forms the API would refuse).
 */
export function SettingsPage() {
  const me = useLoad(loadMe);
  return (
    <>
      <h1>Settings</h1>
      <ErrorAlert error={me.error} />
      {me.data &&
        (isAdmin(me.data) ? (
          <>
            <Keys />
            <Members />
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

function Keys() {
  const keys = useLoad(() => ok(api.GET('/keys', { params: { query: { pageSize: 100 } } })));
  const [name, setName] = useState('');
  const [created, setCreated] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const create = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      const k = await ok(api.POST('/keys', { body: { name } }));
      setCreated(k.key);
      setName('');
      keys.reload();
    } catch (err) {
      setError(err as ApiError);
    }
  };
  const revoke = async (id: string) => {
    try {
      await ok(api.DELETE('/keys/{id}', { params: { path: { id } } }));
      keys.reload();
    } catch (err) {
      setError(err as ApiError);
    }
  };
  return (
    <section aria-labelledby="keys-title">
      <h2 id="keys-title">API keys</h2>
      <ErrorAlert error={keys.error ?? error} />
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Prefix</th>
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
              <td>{k.name}</td>
              <td>
                <code>{k.keyPrefix}</code>
              </td>
              <td>{k.scopes}</td>
              <td>{k.lastUsedAt ? new Date(k.lastUsedAt).toLocaleString() : 'never'}</td>
              <td>
                <button
                  type="button"
                  class="link"
                  onClick={() => revoke(k.id)}
                  aria-label={`Revoke ${k.name}`}
                >
                  Revoke
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form onSubmit={create} class="inline">
        <div class="field">
          <label for="key-name">New key name</label>
          <input id="key-name" value={name} required onInput={(e) => setName(e.currentTarget.value)} />
        </div>
        <button type="submit">Create key</button>
      </form>
      {created && <Once label="The new API key." value={created} />}
    </section>
  );
}
