import { useEffect, useState } from 'preact/hooks';

/**
 * Hash routes (`#/query`, `#/dashboards/<id>`): the server only ever serves index.html and /assets, so
 * no path of the API's origin needs a fallback rule, locally or behind CloudFront.
 */
export function useRoute(): string[] {
  const read = () =>
    (location.hash.replace(/^#\/?/, '') || 'dashboards').split('/').map((p) => decodeURIComponent(p));
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const on = () => setRoute(read());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

export const href = (...parts: string[]) => `#/${parts.map(encodeURIComponent).join('/')}`;
