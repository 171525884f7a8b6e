import { useState } from 'preact/hooks';
import { ApiError, api, ok, okPage } from '../api/client';
import { AdminOnly } from '../components/admin-only';
import { Confirm } from '../components/confirm';
import type { Connection } from '../components/connection-select';
import { fieldErrors } from '../components/field-errors';
import { ErrorAlert, Loading, useLoad } from '../components/load';
import { NotShown, Pager, usePaged, useSelected } from '../components/pager';
import { TextField } from '../components/text-field';
import { submitWith, useSubmit } from '../components/use-submit';
import { href } from '../router';
import { AnnotationEditor } from './annotations';
import { type ReadSafety, ReadSafetySection } from './read-safety';

/** Connections: the list with status, one connection's schema (searchable) and its test with diagnosis. */
export function ConnectionsPage({ id }: { id?: string }) {
  const list = usePaged((query) => okPage(api.GET('/connections', { params: { query } })));
  // A deep link to a connection on another page of the list (or to none) reads it by its id.
  const {
    selected,
    error: notShown,
    reload,
  } = useSelected(list, id, (one) => ok(api.GET('/connections/{id}', { params: { path: { id: one } } })));
  return (
    <>
      <h1>Connections</h1>
      <ErrorAlert error={list.error} />
      {list.loading && !list.data && <Loading what="connections" />}
      <div class="split">
        <section aria-label="Connection list">
          <table class="phone-cards">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Type</th>
                <th scope="col">Status</th>
                <th scope="col">Health</th>
                <th scope="col">Last test</th>
              </tr>
            </thead>
            <tbody>
              {(list.data ?? []).map((c) => (
                <tr key={c.id} aria-selected={c.id === id}>
                  <td>
                    <a href={href('connections', c.id)}>{c.name}</a>
                  </td>
                  <td data-label="Type">{c.type}</td>
                  <td data-label="Status">
                    <span class={`badge ${c.isActive ? 'success' : 'muted'}`}>
                      {c.isActive ? 'active' : 'inactive'}
                    </span>
                  </td>
                  <td data-label="Health">
                    {c.lastError ? (
                      <span class="badge failed">
                        failing: {c.lastErrorDiagnosis?.title ?? 'last attempt failed'}
                      </span>
                    ) : c.lastTestedAt ? (
                      'healthy'
                    ) : (
                      <span class="muted">not tested yet</span>
                    )}
                  </td>
                  <td data-label="Last test">
                    {c.lastTestedAt ? new Date(c.lastTestedAt).toLocaleString() : 'never'}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <Pager label="Connections" list={list} />
          <AdminOnly>
            <ConnectionForm onSaved={() => list.reload()} />
          </AdminOnly>
        </section>
        <NotShown error={notShown} id={id} what="connection" route="connections" />
        {selected && <ConnectionDetail key={selected.id} connection={selected} onChanged={reload} />}
      </div>
    </>
  );
}

function ConnectionDetail({ connection: c, onChanged }: { connection: Connection; onChanged: () => void }) {
  const [search, setSearch] = useState('');
  const [test, setTest] = useState<{
    success: boolean;
    message: string;
    latency: number;
    readSafety?: ReadSafety;
  } | null>(null);
  const [testError, setTestError] = useState<ApiError | null>(null);
  const [testing, setTesting] = useState(false);
  const schema = useLoad(
    () => ok(api.GET('/connections/{id}/schema', { params: { path: { id: c.id } } })),
    [c.id],
  );
  const notes = useLoad(
    () =>
      ok(
        api.GET('/connections/{id}/annotations', {
          params: { path: { id: c.id }, query: { pageSize: 100 } },
        }),
      ),
    [c.id],
  );
  const [refreshError, setRefreshError] = useState<ApiError | null>(null);
  // Reads the live database's schema again (POST …/schema) and shows the new cached copy.
  const refreshing = useSubmit(async () => {
    setRefreshError(null);
    try {
      await ok(api.POST('/connections/{id}/schema', { params: { path: { id: c.id } } }));
      schema.reload();
    } catch (e) {
      setRefreshError(e as ApiError);
    } finally {
      onChanged();
    }
  });
  const runTest = async () => {
    setTesting(true);
    // The previous test's outcome goes away: what shows is always this test's.
    setTest(null);
    setTestError(null);
    try {
      setTest(await ok(api.POST('/connections/{id}/test', { params: { path: { id: c.id } } })));
      // A first successful test also reads the schema: show it.
      schema.reload();
    } catch (e) {
      setTestError(e as ApiError);
    } finally {
      setTesting(false);
      onChanged();
    }
  };
  const q = search.trim().toLowerCase();
  const tables = (schema.data?.schema.tables ?? []).filter(
    (t) =>
      !q || t.name.toLowerCase().includes(q) || t.columns.some((col) => col.name.toLowerCase().includes(q)),
  );
  const noteFor = (table: string, column?: string) =>
    (notes.data ?? []).filter(
      (n) => n.tableName === table && (column === undefined ? !n.columnName : n.columnName === column),
    );
  const d = c.lastErrorDiagnosis;
  return (
    <section aria-labelledby="conn-title" class="detail">
      <h2 id="conn-title">{c.name}</h2>
      <p class="muted">
        {c.type} · {c.host || c.database} · {c.sslEnabled ? 'TLS' : 'no TLS'} ·{' '}
        {c.readOnly ? 'read-only' : 'writes through approvals'}
      </p>
      <p>
        <button type="button" onClick={runTest} disabled={testing}>
          Test connection
        </button>{' '}
        <a href={href('query', c.id)}>Query this connection</a>
      </p>
      {test && (
        <p role="status" class={test.success ? 'ok' : 'alert'}>
          {test.success ? 'Connected' : 'Failed'} in {test.latency} ms: {test.message}
        </p>
      )}
      <ErrorAlert error={testError} />
      {c.lastError && (
        <section class="diagnosis" aria-label="Diagnosis">
          <h3>{d?.title ?? 'Last error'}</h3>
          <p>{c.lastError}</p>
          {d && <p>{d.explanation}</p>}
          {d && d.fixSteps.length > 0 && (
            <ol>
              {d.fixSteps.map((s) => (
                <li key={s}>{s}</li>
              ))}
            </ol>
          )}
        </section>
      )}
      <AdminOnly>
        <ConnectionAdmin connection={c} onChanged={onChanged} />
        <ConnectionForm existing={c} onSaved={onChanged} />
      </AdminOnly>
      <ReadSafetySection connection={c} tested={test} />
      <h3>Schema</h3>
      <p>
        <span class="muted">
          {c.schemaUpdatedAt
            ? `Read from the database ${new Date(c.schemaUpdatedAt).toLocaleString()}.`
            : 'Not read from the database yet.'}
        </span>{' '}
        <button type="button" class="secondary" onClick={() => refreshing.run()} disabled={refreshing.busy}>
          Refresh schema
        </button>
      </p>
      <ErrorAlert error={refreshError} />
      {schema.error instanceof ApiError && schema.error.status === 404 ? (
        <p class="muted">
          The schema has not been read yet: “Test connection” or “Refresh schema” reads it from the database.
        </p>
      ) : (
        <ErrorAlert error={schema.error} />
      )}
      <ErrorAlert error={notes.error} />
      <div class="field">
        <label for="schema-search">Search tables and columns</label>
        <input
          id="schema-search"
          type="search"
          value={search}
          onInput={(e) => setSearch(e.currentTarget.value)}
        />
      </div>
      {schema.loading && <Loading what="schema" />}
      {tables.map((t) => (
        <details key={`${t.schema ?? ''}.${t.name}`} class="table-schema" open={tables.length <= 3}>
          <summary>
            {t.schema ? `${t.schema}.` : ''}
            {t.name}{' '}
            <span class="muted">
              ({t.kind}, {t.columns.length} columns)
            </span>
          </summary>
          {t.comment && <p class="muted">{t.comment}</p>}
          {noteFor(t.name).map((n) => (
            <p key={n.id} class="note">
              {n.annotation}
            </p>
          ))}
          <table>
            <thead>
              <tr>
                <th scope="col">Column</th>
                <th scope="col">Type</th>
                <th scope="col">Key</th>
                <th scope="col">Notes</th>
              </tr>
            </thead>
            <tbody>
              {t.columns.map((col) => {
                const fk = t.foreignKeys.find((f) => f.columns.includes(col.name));
                return (
                  <tr key={col.name}>
                    <td>{col.name}</td>
                    <td class="value">
                      {col.type}
                      {col.nullable ? '' : ' not null'}
                    </td>
                    <td>
                      {col.primaryKey ? 'primary key' : ''}
                      {fk ? `→ ${fk.referencedTable}(${fk.referencedColumns.join(', ')})` : ''}
                    </td>
                    <td class="value">
                      {[col.comment, ...noteFor(t.name, col.name).map((n) => n.annotation)]
                        .filter(Boolean)
                        .join(' · ')}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          <AnnotationEditor
            connectionId={c.id}
            table={t.name}
            columns={t.columns.map((col) => col.name)}
            notes={notes.data ?? []}
            onChanged={() => notes.reload()}
          />
        </details>
      ))}
    </section>
  );
}

/** Admins turn a connection off and on (PATCH isActive) and delete it after an in-page confirmation. */
function ConnectionAdmin({ connection: c, onChanged }: { connection: Connection; onChanged: () => void }) {
  const [error, setError] = useState<ApiError | null>(null);
  const [confirming, setConfirming] = useState(false);
  const toggling = useSubmit(async () => {
    setError(null);
    try {
      await ok(
        api.PATCH('/connections/{id}', { params: { path: { id: c.id } }, body: { isActive: !c.isActive } }),
      );
      onChanged();
    } catch (err) {
      setError(err as ApiError);
    }
  });
  const deleting = useSubmit(async () => {
    setError(null);
    try {
      await ok(api.DELETE('/connections/{id}', { params: { path: { id: c.id } } }));
      setConfirming(false);
      location.hash = href('connections');
      onChanged();
    } catch (err) {
      setConfirming(false);
      setError(err as ApiError);
    }
  });
  const busy = toggling.busy || deleting.busy;
  return (
    <>
      <p>
        <button type="button" class="secondary" onClick={() => toggling.run()} disabled={busy}>
          {c.isActive ? 'Deactivate' : 'Activate'}
        </button>{' '}
        <button type="button" class="secondary" onClick={() => setConfirming(true)} disabled={busy}>
          Delete connection
        </button>
      </p>
      {confirming && (
        <Confirm
          question={`Delete the connection “${c.name}”? Its stored credentials, schema and annotations are deleted; this cannot be undone.`}
          action="Delete"
          onConfirm={() => deleting.run()}
          onCancel={() => setConfirming(false)}
        />
      )}
      <ErrorAlert error={error} />
    </>
  );
}

const TYPES = ['POSTGRES', 'MYSQL', 'MARIADB', 'MSSQL', 'MONGODB', 'SQLITE'] as const;

/**
 * Admins add a connection, or edit one (the password is only sent when typed: it is never shown). The
 * API's validation messages appear beside their fields.
 */
function ConnectionForm({ existing, onSaved }: { existing?: Connection; onSaved: () => void }) {
  const [form, setForm] = useState({
    name: existing?.name ?? '',
    type: (existing?.type ?? 'POSTGRES') as (typeof TYPES)[number],
    host: existing?.host ?? '',
    port: existing?.port ? String(existing.port) : '',
    database: existing?.database ?? '',
    username: existing?.username ?? '',
    password: '',
    readOnly: existing?.readOnly ?? true,
    sslEnabled: existing?.sslEnabled ?? false,
  });
  const [error, setError] = useState<ApiError | null>(null);
  const [saved, setSaved] = useState(false);
  const errors = fieldErrors(error);
  const prefix = existing ? 'edit' : 'new';
  const set = (k: keyof typeof form) => (e: Event) =>
    setForm({ ...form, [k]: (e.currentTarget as HTMLInputElement).value });
  const saving = useSubmit(async () => {
    setError(null);
    setSaved(false);
    if (form.port.trim() && !/^\d{1,5}$/.test(form.port.trim())) {
      const message = 'Port must be a whole number from 1 to 65535 (or empty for the default).';
      setError(new ApiError(400, 'VALIDATION_ERROR', message, { issues: [{ path: 'body.port', message }] }));
      return;
    }
    const body = {
      ...form,
      // Empty: the type's default port (an edit clears a stored port with null).
      port: form.port.trim() ? Number(form.port.trim()) : existing ? null : undefined,
      password: form.password || undefined,
    };
    try {
      if (existing) await ok(api.PATCH('/connections/{id}', { params: { path: { id: existing.id } }, body }));
      else await ok(api.POST('/connections', { body }));
      setSaved(true);
      onSaved();
      setForm({ ...form, password: '', ...(existing ? {} : { name: '' }) });
    } catch (err) {
      setError(err as ApiError);
    }
  });
  const field = (k: 'name' | 'host' | 'port' | 'database' | 'username' | 'password', label: string) => (
    <TextField
      id={`${prefix}-${k}`}
      label={label}
      type={k === 'password' ? 'password' : 'text'}
      value={form[k]}
      onInput={(v) => setForm({ ...form, [k]: v })}
      error={errors[k]}
    />
  );
  return (
    <details class="new">
      <summary>{existing ? 'Edit connection' : 'New connection'}</summary>
      <form onSubmit={submitWith(saving.run)} class="stack">
        {field('name', 'Name')}
        <div class="field">
          <label for={`${prefix}-type`}>Type</label>
          <select id={`${prefix}-type`} value={form.type} onChange={set('type')}>
            {TYPES.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </div>
        {field('host', 'Host')}
        {field('port', 'Port')}
        {field('database', 'Database')}
        {field('username', 'Username')}
        {field('password', existing ? 'New password (leave empty to keep it)' : 'Password')}
        <label class="check">
          <input
            type="checkbox"
            checked={form.sslEnabled}
            onChange={(e) => setForm({ ...form, sslEnabled: e.currentTarget.checked })}
          />{' '}
          Use TLS (SSL) to connect
        </label>
        <label class="check">
          <input
            type="checkbox"
            checked={form.readOnly}
            onChange={(e) => setForm({ ...form, readOnly: e.currentTarget.checked })}
          />{' '}
          Read-only (writes are never submitted for approval)
        </label>
        <ErrorAlert error={error} />
        {saved && <p role="status">Saved.</p>}
        <button type="submit" disabled={saving.busy}>
          {existing ? 'Save connection' : 'Create connection'}
        </button>
      </form>
    </details>
  );
}
