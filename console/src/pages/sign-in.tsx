import { useState } from 'preact/hooks';
import { session } from '../session';

/** The key is checked with GET /v1/ (the API's context) before it is kept for this tab. */
export function SignIn({ reason }: { reason: string | null }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const res = await fetch('/v1/', { headers: { authorization: `Bearer ${key.trim()}` } });
      const body = await res.json().catch(() => null);
      if (!res.ok) throw new Error(body?.error?.message ?? `The API answered ${res.status}.`);
      session.signIn(key.trim());
      if (!location.hash) location.hash = '#/dashboards';
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="sign-in">
      <h1>Sign in to Loupe</h1>
      {reason && (
        <p role="alert" class="alert">
          {reason}
        </p>
      )}
      <form onSubmit={submit}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          required
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          aria-describedby="api-key-help"
        />
        <p id="api-key-help" class="muted">
          A key starting with lp_. It is kept in this tab only and forgotten when the tab closes.
        </p>
        {error && (
          <p role="alert" class="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}
