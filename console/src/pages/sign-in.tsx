import { useState } from 'preact/hooks';
import { session } from '../session';

/**
 * What is wrong with a typed or pasted key, in plain words, before it is sent (a header can only carry
 * printable ASCII: a zero-width space or a typographic quote pasted with the key would make the browser's
 * fetch throw its own message). Null when it can be sent.
 */
export function keyProblem(key: string): string | null {
  if (!key) return 'Enter an API key.';
  const bad = [...key].find((ch) => ch < '!' || ch > '~');
  if (bad === undefined) return null;
  const code = `U+${(bad.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
  return /\s/.test(bad) || /[\u200b-\u200d\u2060\ufeff]/.test(bad)
    ? `The key contains a space or an invisible character (${code}), probably copied with it. Paste the key again, exactly as it was shown.`
    : `The key contains a character that cannot be part of a Loupe key (${code}). Keys use only letters, digits, “_” and “-”: paste it again, exactly as it was shown.`;
}

/** The key is checked with GET /v1/ (the API's context) before it is kept for this tab. */
export function SignIn({ reason }: { reason: string | null }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const typed = key.trim();
    const problem = keyProblem(typed);
    if (problem) {
      setError(problem);
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const res = await fetch('/v1/', { headers: { authorization: `Bearer ${typed}` } });
      const body = await res.json().catch(() => null);
      if (!res.ok) throw new Error(body?.error?.message ?? `The API answered ${res.status}.`);
      session.signIn(typed);
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
