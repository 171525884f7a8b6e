import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, ok } from '../api/client';
import type { components } from '../api/schema.gen';

export type SchemaTable = components['schemas']['CachedSchema']['schema']['tables'][number];
export type Annotation = components['schemas']['Annotation'];

/** A connection's cached schema as the editor and the Schema panel use it. */
export interface SchemaInfo {
  /** The connection's type (POSTGRES, MYSQL, MARIADB, MSSQL, SQLITE, MONGODB): the editor's dialect. */
  type: string;
  tables: SchemaTable[];
  /** The first 100 annotations of the connection (table notes have no columnName). */
  notes: Annotation[];
  updatedAt: string;
}

/** How long a schema read here is reused before asking the API again (it is the API's cache anyway). */
const FRESH_MS = 60_000;
const cache = new Map<string, { at: number; info: Promise<SchemaInfo> }>();

/**
 * The connection's cached schema (`GET /connections/{id}/schema`), its type and its annotations, read
 * once per minute however many editors and panels ask. Rejects with the API's error: 404 NOT_FOUND
 * until the schema has been introspected, 403 for a key without the `connections` scope.
 */
export function schemaOf(connectionId: string): Promise<SchemaInfo> {
  const hit = cache.get(connectionId);
  if (hit && Date.now() - hit.at < FRESH_MS) return hit.info;
  const path = { id: connectionId };
  const info = Promise.all([
    typeOf(connectionId).then((type) => ({ type })),
    ok(api.GET('/connections/{id}/schema', { params: { path } })),
    // Annotations are extra: without them the schema still completes and lists.
    ok(api.GET('/connections/{id}/annotations', { params: { path, query: { pageSize: 100 } } })).catch(
      () => [] as Annotation[],
    ),
  ]).then(([conn, schema, notes]) => ({
    type: conn.type,
    tables: schema.schema.tables,
    notes,
    updatedAt: schema.schemaUpdatedAt,
  }));
  cache.set(connectionId, { at: Date.now(), info });
  // A failure is not kept: the next caller asks again (the schema may have been read meanwhile).
  info.catch(() => {
    if (cache.get(connectionId)?.info === info) cache.delete(connectionId);
  });
  return info;
}

const types = new Map<string, Promise<string>>();
/** The connection's type (it never changes), read once; a failure is not kept. */
export function typeOf(connectionId: string): Promise<string> {
  let type = types.get(connectionId);
  if (!type) {
    type = ok(api.GET('/connections/{id}', { params: { path: { id: connectionId } } })).then((c) => c.type);
    types.set(connectionId, type);
    type.catch(() => types.delete(connectionId));
  }
  return type;
}

/** Forgets a connection's schema (after "Refresh schema", or an annotation changed). */
export function forgetSchema(connectionId: string): void {
  cache.delete(connectionId);
}

/** The schema of `connectionId` (none while it is empty), with `reload` to read it again. */
export function useSchema(connectionId: string | undefined) {
  const [round, setRound] = useState(0);
  const [state, setState] = useState<{ data?: SchemaInfo; error?: ApiError; loading: boolean }>({
    loading: false,
  });
  useEffect(() => {
    if (!connectionId) {
      setState({ loading: false });
      return;
    }
    let live = true;
    setState({ loading: true });
    schemaOf(connectionId).then(
      (data) => live && setState({ data, loading: false }),
      (error) =>
        live &&
        setState({
          error:
            error instanceof ApiError ? error : new ApiError(0, 'NETWORK', String(error?.message ?? error)),
          loading: false,
        }),
    );
    return () => {
      live = false;
    };
  }, [connectionId, round]);
  return {
    ...state,
    reload: () => {
      if (connectionId) forgetSchema(connectionId);
      setRound((r) => r + 1);
    },
  };
}
