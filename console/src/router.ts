import { useEffect, useState } from 'preact/hooks';

/**
 * Hash routes (`#/query`, `#/dashboards/<id>`): the server only ever serves index.html and /assets, so
 * no path of the API's origin needs a fallback rule, locally or behind CloudFront.
 */
export function useRoute(): string[] {
  const read = () => parseHash(location.hash);
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const on = () =>
      setRoute((old) => {
        const now = read();
        return JSON.stringify(now) === JSON.stringify(old) ? old : now;
      });
    addEventListener('hashchange', on);
    // A hash changed between the first render and this subscription (a link followed while the
    // shell mounts after sign-in) fired no event here: read it once now.
    on();
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

/** A route that matches no page: the shell shows "Not found" (with its navigation and Sign out). */
export const BAD_ROUTE = ['not-found'];

/**
 * The hash's parts, decoded; a malformed escape (`#/dashboards/%E0%A4%A`, typed or pasted) is a route to
 * no page, never an exception that would blank the whole console.
 */
export function parseHash(hash: string): string[] {
  try {
    return (hash.replace(/^#\/?/, '') || 'dashboards').split('/').map((p) => decodeURIComponent(p));
  } catch {
    return BAD_ROUTE;
  }
}

export const href = (...parts: string[]) => `#/${parts.map(encodeURIComponent).join('/')}`;
