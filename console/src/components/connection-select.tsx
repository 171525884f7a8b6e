import { useEffect, useRef } from 'preact/hooks';
import { api, ok } from '../api/client';
import { ErrorAlert, useLoad } from './load';

export type Connection = NonNullable<ReturnType<typeof useConnections>['data']>[number];

export function useConnections() {
  return useLoad(() => ok(api.GET('/connections', { params: { query: { pageSize: 100 } } })));
}

/** The connection to preselect: the only one, when the key can use exactly one; otherwise none. */
export function defaultConnectionId(connections: readonly { id: string }[] | undefined): string | undefined {
  return connections?.length === 1 ? connections[0].id : undefined;
}

/**
 * A select labelled "Connection" over the connections this key can use. When the list cannot be read
 * (a key without the `connections` scope, say) the API's message is shown under it, not an empty select.
 * When the key can use exactly one connection and none is chosen, that one is chosen.
 */
export function ConnectionSelect({
  value,
  onChange,
  id = 'connection',
  connections,
}: {
  value: string;
  onChange: (id: string) => void;
  id?: string;
  connections?: Connection[];
}) {
  const loaded = useConnections();
  const data = connections ?? loaded.data;
  const errorId = `${id}-load-error`;
  // With exactly one connection to choose from, it is chosen already: once, when the list arrives, so a
  // user who then picks "Choose a connection" keeps that choice.
  const only = defaultConnectionId(data);
  const preselected = useRef(false);
  useEffect(() => {
    if (preselected.current || !data) return;
    preselected.current = true;
    if (value === '' && only) onChange(only);
  }, [data]);
  return (
    <div class="field">
      <label for={id}>Connection</label>
      <select
        id={id}
        value={value}
        onChange={(e) => onChange(e.currentTarget.value)}
        aria-describedby={loaded.error ? errorId : undefined}
      >
        <option value="">Choose a connection</option>
        {(data ?? []).map((c) => (
          <option key={c.id} value={c.id}>
            {c.name} ({c.type})
          </option>
        ))}
      </select>
      <ErrorAlert error={loaded.error} id={errorId} />
    </div>
  );
}
