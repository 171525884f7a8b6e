import type { SchemaSnapshot } from '../databases/drivers/types';
import { db } from '../platform/db/store';
import { newId, padSeq } from '../platform/ids';
import { deleteKeys, keysOf, orgPk } from './store';
import type { ValueIndex } from './value-index';

/** node:zlib when a large schema is written or read, not at start (a few ms of every cold start). */
const zlib = () => process.getBuiltinModule('node:zlib');

/**
 * The cached schema of a connection, in its own items (a schema of hundreds of tables does not fit in
 * the connection item):
 *  ORG#o / CONNSCHEMA#c              meta: schemaUpdatedAt, tableCount, encoding, gen, chunks; the
 *                                    payload inline when it fits
 *  ORG#o / CONNSCHEMA#c#<gen>#<n>    chunk n of generation gen (gzip bytes) for large schemas
 * A new generation's chunks are written before the meta item points at them, and old generations are
 * removed after, so a reader never sees a half-written schema.
 */
export interface CachedSchema {
  schema: SchemaSnapshot;
  schemaSummary: string | null;
  schemaUpdatedAt: string;
  /**
   * The value index (value-index.ts): sampled values of low-cardinality text columns, stored in the same
   * payload (and so the same chunks) as the schema; absent for a cache written before it existed. Never
   * returned by GET /connections/{id}/schema.
   */
  values?: ValueIndex | null;
}

/** Payloads up to this many bytes of JSON stay plain JSON inline. */
const INLINE_JSON_MAX = 300_000;
/** Gzip bytes per item (DynamoDB's item limit is 400 KB including names and keys). */
export const CHUNK_BYTES = 350_000;

const metaSk = (id: string) => `CONNSCHEMA#${id}`;
const chunkPrefix = (id: string, gen: string) => `CONNSCHEMA#${id}#${gen}#`;

interface Meta {
  schemaUpdatedAt: string;
  tableCount: number;
  encoding: 'json' | 'gzip';
  gen: string;
  chunks: number;
  data?: string | Uint8Array;
}

/** Stores the schema and summary; an older snapshot never replaces a newer one. */
export async function saveSchema(orgId: string, connectionId: string, value: CachedSchema): Promise<void> {
  const json = JSON.stringify({
    schema: value.schema,
    schemaSummary: value.schemaSummary,
    values: value.values ?? null,
  });
  const gen = newId().slice(0, 8);
  const meta: Meta = {
    schemaUpdatedAt: value.schemaUpdatedAt,
    tableCount: value.schema.tables.length,
    encoding: 'json',
    gen,
    chunks: 0,
  };
  if (Buffer.byteLength(json) <= INLINE_JSON_MAX) meta.data = json;
  else {
    const zipped = zlib().gzipSync(Buffer.from(json));
    meta.encoding = 'gzip';
    if (zipped.byteLength <= CHUNK_BYTES) meta.data = new Uint8Array(zipped);
    else {
      const parts: Uint8Array[] = [];
      for (let i = 0; i < zipped.byteLength; i += CHUNK_BYTES)
        parts.push(new Uint8Array(zipped.subarray(i, i + CHUNK_BYTES)));
      for (const [n, part] of parts.entries())
        await db.put({ pk: orgPk(orgId), sk: `${chunkPrefix(connectionId, gen)}${padSeq(n)}`, data: part });
      meta.chunks = parts.length;
    }
  }
  await db.put(
    { pk: orgPk(orgId), sk: metaSk(connectionId), kind: 'schema', connectionId, ...meta },
    {
      condition: 'attribute_not_exists(pk) OR schemaUpdatedAt <= :t',
      values: { ':t': value.schemaUpdatedAt },
    },
  );
  await removeStaleChunks(orgId, connectionId);
}

/** Deletes chunk items of every generation but the current one. */
async function removeStaleChunks(orgId: string, connectionId: string) {
  const current = await db.get<Meta>(orgPk(orgId), metaSk(connectionId));
  const keep = current?.chunks ? chunkPrefix(connectionId, current.gen) : undefined;
  const stale = (await keysOf(orgPk(orgId), `${metaSk(connectionId)}#`)).filter(
    (k) => !keep || !k.sk.startsWith(keep),
  );
  await deleteKeys(stale);
}

export async function loadSchema(
  orgId: string,
  connectionId: string,
  attempt = 0,
): Promise<CachedSchema | null> {
  const meta = await db.get<Meta>(orgPk(orgId), metaSk(connectionId));
  if (!meta) return null;
  let bytes: Buffer;
  if (meta.chunks > 0) {
    const parts = await db.query<{ data: Uint8Array }>({
      pk: orgPk(orgId),
      prefix: chunkPrefix(connectionId, meta.gen),
    });
    // A concurrent refresh replaced this generation while it was read: read the new one.
    if (parts.length !== meta.chunks)
      return attempt < 2 ? loadSchema(orgId, connectionId, attempt + 1) : null;
    bytes = Buffer.concat(parts.map((p) => Buffer.from(p.data)));
  } else bytes = typeof meta.data === 'string' ? Buffer.from(meta.data) : Buffer.from(meta.data ?? '');
  const json = meta.encoding === 'gzip' ? zlib().gunzipSync(bytes).toString('utf8') : bytes.toString('utf8');
  const parsed = JSON.parse(json) as {
    schema: SchemaSnapshot;
    schemaSummary: string | null;
    values?: ValueIndex | null;
  };
  return {
    schema: parsed.schema,
    schemaSummary: parsed.schemaSummary,
    schemaUpdatedAt: meta.schemaUpdatedAt,
    ...(parsed.values ? { values: parsed.values } : {}),
  };
}

/** Forgets the cached schema (connection deleted, or now pointing at another database). Idempotent. */
export async function dropCachedSchema(orgId: string, connectionId: string): Promise<void> {
  await deleteKeys(await keysOf(orgPk(orgId), metaSk(connectionId)));
}
