/**
 * Query parameters that look like secrets (`?token=`, `?access_token=`, `?api_key=`, `?sig=` …): refused in
 * every URL Loupe stores for sending (workflow webhook actions, event webhook endpoints), since a URL is
 * shown back to readers and logged while a credential is encrypted and never returned.
 */
const SECRET_QUERY =
  /(secret|token|password|passwd|api[-_]?key|apikey|signature|^sig$|^key$|^auth$|^access[-_]?key)/i;

/** The names of `url`'s query parameters that look like secrets (each once). */
export function secretQueryParameters(url: URL): string[] {
  return [...new Set([...url.searchParams.keys()].filter((k) => SECRET_QUERY.test(k)))];
}
