import { api, ok } from '../api/client';
import { ErrorAlert, useLoad } from './load';

export type Connection = NonNullable<ReturnType<typeof useConnections>['data']>[number];

export function useConnections() {
  return useLoad(() => ok(api.GET('/connections', { params: { query: { pageSize: 100 } } })));
}

/**
 * A select labelled "Connection" over the connections this key can use. When the list cannot be read
 * (a key without the `connections` scope, say) the API's message is shown under it, not an empty select.
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
