import { api, ok } from '../api/client';
import { useLoad } from './load';

export type Connection = NonNullable<ReturnType<typeof useConnections>['data']>[number];

export function useConnections() {
  return useLoad(() => ok(api.GET('/connections', { params: { query: { pageSize: 100 } } })));
}

/** A select labelled "Connection" over the connections this key can use. */
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
  return (
    <div class="field">
      <label for={id}>Connection</label>
      <select id={id} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        <option value="">Choose a connection</option>
        {(data ?? []).map((c) => (
          <option key={c.id} value={c.id}>
            {c.name} ({c.type})
          </option>
        ))}
      </select>
    </div>
  );
}
