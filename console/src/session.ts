/**
 * The API key of this browser tab. It lives in sessionStorage only (never localStorage or a cookie), so
 * it is gone when the tab closes, and it is sent only to this origin's /v1 (api/client.ts).
 */
const KEY = 'loupe.apiKey';

type Listener = (reason: string | null) => void;
const listeners = new Set<Listener>();

export const session = {
  key: (): string | null => sessionStorage.getItem(KEY),
  signIn(key: string) {
    sessionStorage.setItem(KEY, key);
    for (const l of listeners) l(null);
  },
  /** Clears the key; `reason` is shown on the sign-in page (a 401's message, for example). */
  signOut(reason: string | null = null) {
    sessionStorage.removeItem(KEY);
    for (const l of listeners) l(reason);
  },
  onChange(l: Listener) {
    listeners.add(l);
    return () => listeners.delete(l);
  },
};
