import { useState } from 'preact/hooks';
import { type ApiError, api, ok, okPage } from '../api/client';
import { EVENT_TYPES } from '../api/event-types.gen';
import { Confirm } from '../components/confirm';
import { fieldErrors } from '../components/field-errors';
import { ErrorAlert, useLoad } from '../components/load';
import { Once } from '../components/once';
import { Pager, usePaged } from '../components/pager';
import { TextField } from '../components/text-field';
import { submitWith, useSubmit } from '../components/use-submit';

type Hook = { id: string; url: string; events: string[]; isActive: boolean; secret: string };

/**
 * Settings → Event webhooks (admins only, like the API): add an endpoint for chosen event types (its signing
 * secret is shown once), see its delivery log, send a test event, rotate the secret (the new one is shown
 * once), pause or resume it, and delete it.
 */
export function Webhooks() {
  const hooks = useLoad(() => ok(api.GET('/webhooks', { params: { query: { pageSize: 100 } } })));
  const [secret, setSecret] = useState<{ label: string; value: string } | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<string | null>(null);
  const list = (hooks.data ?? []) as Hook[];
  // One change at a time: a double click pauses, rotates or deletes once.
  const acting = useSubmit(async (call: () => Promise<unknown>) => {
    setError(null);
    try {
      await call();
    } catch (err) {
      setError(err as ApiError);
    } finally {
      hooks.reload();
    }
  });
  const act = (call: () => Promise<unknown>) => acting.run(call);
  const update = (h: Hook, body: { isActive?: boolean; rotateSecret?: true }) =>
    act(async () => {
      const r = await ok(api.PATCH('/webhooks/{id}', { params: { path: { id: h.id } }, body }));
      if (body.rotateSecret) setSecret({ label: `The new signing secret for ${h.url}.`, value: r.secret });
    });
  const doomed = list.find((h) => h.id === deleting);
  return (
    <section aria-labelledby="hooks-title">
      <h2 id="hooks-title">Event webhooks</h2>
      <ErrorAlert error={hooks.error ?? error} />
      {hooks.data?.length === 0 && <p class="muted">No event webhooks yet.</p>}
      <ul class="cards">
        {list.map((h) => (
          <li key={h.id}>
            <article aria-label={`Webhook ${h.url}`}>
              <p>
                <code>{h.url}</code> · {h.events.join(', ')} ·{' '}
                <span class={`badge ${h.isActive ? 'approved' : 'muted'}`}>
                  {h.isActive ? 'active' : 'paused'}
                </span>{' '}
                · secret <code>{h.secret}</code>
              </p>
              <p>
                <button
                  type="button"
                  class="link"
                  aria-expanded={open === h.id}
                  onClick={() => setOpen(open === h.id ? null : h.id)}
                  aria-label={`Deliveries of ${h.url}`}
                >
                  Deliveries
                </button>{' '}
                <button
                  type="button"
                  class="link"
                  onClick={() => update(h, { isActive: !h.isActive })}
                  aria-label={`${h.isActive ? 'Pause' : 'Resume'} ${h.url}`}
                >
                  {h.isActive ? 'Pause' : 'Resume'}
                </button>{' '}
                <button
                  type="button"
                  class="link"
                  onClick={() => update(h, { rotateSecret: true })}
                  aria-label={`Rotate the secret of ${h.url}`}
                >
                  Rotate secret
                </button>{' '}
                <button
                  type="button"
                  class="link"
                  onClick={() => setDeleting(h.id)}
                  aria-label={`Delete webhook ${h.url}`}
                >
                  Delete
                </button>
              </p>
              {open === h.id && <Deliveries id={h.id} />}
            </article>
          </li>
        ))}
      </ul>
      {doomed && (
        <Confirm
          question={`Delete the webhook for ${doomed.url}? Its delivery log goes with it.`}
          action="Yes, delete webhook"
          onConfirm={() => {
            setDeleting(null);
            setSecret(null);
            act(() => ok(api.DELETE('/webhooks/{id}', { params: { path: { id: doomed.id } } })));
          }}
          onCancel={() => setDeleting(null)}
        />
      )}
      {secret && <Once label={secret.label} value={secret.value} />}
      <details class="new">
        <summary>Add webhook</summary>
        <NewWebhook
          onCreated={(h) => {
            setSecret({ label: 'The webhook’s signing secret.', value: h.secret });
            hooks.reload();
          }}
        />
      </details>
    </section>
  );
}

function NewWebhook({ onCreated }: { onCreated: (h: Hook) => void }) {
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<string[]>([]);
  const [error, setError] = useState<ApiError | null>(null);
  const errors = fieldErrors(error);
  const all = events.includes('*');
  const toggle = (e: string, on: boolean) =>
    setEvents(on ? [...events.filter((x) => x !== e), e] : events.filter((x) => x !== e));
  const creating = useSubmit(async () => {
    setError(null);
    try {
      const h = await ok(api.POST('/webhooks', { body: { url, events: all ? ['*'] : events } }));
      setUrl('');
      setEvents([]);
      onCreated(h as Hook);
    } catch (err) {
      setError(err as ApiError);
    }
  });
  return (
    <form onSubmit={submitWith(creating.run)} class="stack" aria-label="Add webhook">
      <TextField
        id="hook-url"
        label="Endpoint URL (https)"
        type="url"
        required
        value={url}
        onInput={setUrl}
        error={errors.url}
      />
      <fieldset>
        <legend>Events</legend>
        <label class="check">
          <input type="checkbox" checked={all} onChange={(e) => toggle('*', e.currentTarget.checked)} /> All
          events
        </label>
        {EVENT_TYPES.map((t) => (
          <label key={t} class="check">
            <input
              type="checkbox"
              disabled={all}
              checked={all || events.includes(t)}
              onChange={(e) => toggle(t, e.currentTarget.checked)}
            />{' '}
            {t}
          </label>
        ))}
        {errors.events && <span class="field-error">{errors.events}</span>}
      </fieldset>
      <ErrorAlert error={error} />
      <button type="submit" disabled={creating.busy}>
        Add webhook
      </button>
    </form>
  );
}

function Deliveries({ id }: { id: string }) {
  const list = usePaged(
    (query) => okPage(api.GET('/webhooks/{id}/deliveries', { params: { path: { id }, query } })),
    [id],
  );
  const [error, setError] = useState<ApiError | null>(null);
  const [outcome, setOutcome] = useState<string | null>(null);
  const testing = useSubmit(async () => {
    setError(null);
    setOutcome(null);
    try {
      const r = await ok(api.POST('/webhooks/{id}/test', { params: { path: { id } } }));
      setOutcome(r.success ? 'The test event was delivered.' : `The test event failed: ${r.error ?? ''}`);
    } catch (err) {
      setError(err as ApiError);
    } finally {
      list.reload();
    }
  });
  return (
    <div>
      <button type="button" class="secondary" onClick={() => testing.run()} disabled={testing.busy}>
        Send test event
      </button>
      {outcome && <p role="status">{outcome}</p>}
      <ErrorAlert error={list.error ?? error} />
      {list.data?.length === 0 && <p class="muted">No deliveries yet.</p>}
      {!!list.data?.length && (
        <table>
          <caption class="sr-only">Deliveries</caption>
          <thead>
            <tr>
              <th scope="col">Event</th>
              <th scope="col">Status</th>
              <th scope="col">HTTP</th>
              <th scope="col">Attempts</th>
              <th scope="col">Created</th>
              <th scope="col">Error</th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((d) => (
              <tr key={d.id}>
                <td>{d.event}</td>
                <td>{d.status}</td>
                <td>{d.statusCode ?? ''}</td>
                <td>{d.attempts}</td>
                <td>{new Date(d.createdAt).toLocaleString()}</td>
                <td class="value">{d.error ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Pager label="Deliveries" list={list} />
    </div>
  );
}
