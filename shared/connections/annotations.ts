import type { AnnotationInput } from '../ai/annotate';
import type { AuthContext } from '../auth/context';
import { pageOf } from '../http/envelope';
import type { PageQuery } from '../http/schemas';
import { config } from '../platform/config';
import { db, type Item, strip } from '../platform/db/store';
import { notFound } from '../platform/errors';
import { newId, nowIso } from '../platform/ids';
import type { AnnotationCreate, AnnotationUpdate } from './api';
import { loadConnection } from './connections';
import { connPk } from './store';

/**
 * Annotations of tables and columns, in the connection's partition:
 *  ORG#o#CONN#c / ANN#<table>#<column>   the annotation (one per table + column pair; '' for the table itself)
 *  ORG#o#CONN#c / ANNID#<id>             pointer from the annotation id to its pair key
 * Names are URI-encoded in keys, so a table's annotations are one prefix and sort by column.
 */
export interface Annotation {
  id: string;
  connectionId: string;
  tableName: string;
  columnName: string | null;
  annotation: string;
  dataType: string | null;
  examples: string | null;
  /** `auto` ones were written by automatic annotation and may be refreshed by it; `user` ones never are. */
  source: 'user' | 'auto';
  /**
   * false: the column's values (all columns' for a table annotation) are never read for the value index
   * or automatic annotation, and any sampled ones are dropped (value-index.ts). Absent: true.
   */
  sampleValues?: boolean;
  createdAt: string;
  updatedAt: string;
}

const enc = encodeURIComponent;
const tablePrefix = (table: string) => `ANN#${enc(table)}#`;
const pairSk = (table: string, column: string | null) =>
  `${tablePrefix(table)}${column === null ? '' : enc(column)}`;
const idSk = (id: string) => `ANNID#${id}`;

const toAnnotation = (item: Item): Annotation => {
  const { kind: _k, ...rest } = strip(item);
  return { sampleValues: true, ...rest } as unknown as Annotation;
};

export type { AnnotationInput };

/**
 * Creates the annotation of a table/column pair, or updates the one that exists. `source: 'auto'` writes
 * leave annotations a user wrote untouched and report `kept`.
 */
export async function writeAnnotation(
  orgId: string,
  connectionId: string,
  input: AnnotationInput & { sampleValues?: boolean },
  source: 'user' | 'auto',
): Promise<{ annotation: Annotation; outcome: 'created' | 'updated' | 'kept' }> {
  const pk = connPk(orgId, connectionId);
  const sk = pairSk(input.tableName, input.columnName);
  for (let attempt = 0; attempt < 5; attempt++) {
    const now = nowIso();
    const existing = await db.get(pk, sk);
    if (existing) {
      const cur = toAnnotation(existing);
      if (source === 'auto' && cur.source !== 'auto') return { annotation: cur, outcome: 'kept' };
      const changes: Record<string, unknown> = { annotation: input.annotation, source, updatedAt: now };
      if (input.dataType !== undefined) changes.dataType = input.dataType;
      if (input.examples !== undefined) changes.examples = input.examples;
      if (input.sampleValues !== undefined) changes.sampleValues = input.sampleValues;
      const updated = await db.patch(pk, sk, changes, {
        condition: source === 'auto' ? '#src = :auto AND id = :id' : 'id = :id',
        names: source === 'auto' ? { '#src': 'source' } : undefined,
        values: source === 'auto' ? { ':auto': 'auto', ':id': cur.id } : { ':id': cur.id },
      });
      if (updated) return { annotation: toAnnotation(updated), outcome: 'updated' };
      continue;
    }
    const rec: Annotation = {
      id: newId(),
      connectionId,
      tableName: input.tableName,
      columnName: input.columnName,
      annotation: input.annotation,
      dataType: input.dataType ?? null,
      examples: input.examples ?? null,
      source,
      sampleValues: input.sampleValues !== false,
      createdAt: now,
      updatedAt: now,
    };
    // The pointer first: an annotation is never reachable by pair without being reachable by id.
    await db.put({ pk, sk: idSk(rec.id), pairSk: sk });
    if (await db.put({ pk, sk, kind: 'annotation', ...rec }, { ifAbsent: true }))
      return { annotation: rec, outcome: 'created' };
    await db.delete(pk, idSk(rec.id));
  }
  throw new Error('Annotation write kept conflicting');
}

async function findById(orgId: string, connectionId: string, id: string) {
  const pk = connPk(orgId, connectionId);
  const pointer = await db.get<{ pairSk: string }>(pk, idSk(id));
  if (!pointer) return undefined;
  const item = await db.get(pk, pointer.pairSk);
  if (!item || item.id !== id) return undefined;
  return { sk: pointer.pairSk, annotation: toAnnotation(item) };
}

/** Every annotation of the connection (optionally one table's), ordered by table then column. */
export async function listAnnotationsOf(orgId: string, connectionId: string, table?: string) {
  const items = await db.query({
    pk: connPk(orgId, connectionId),
    prefix: table === undefined ? 'ANN#' : tablePrefix(table),
  });
  return items.map(toAnnotation);
}

/** For the chat capability: every annotation of a connection the caller may use (404 otherwise). */
export async function annotationsFor(ctx: AuthContext, connectionId: string): Promise<Annotation[]> {
  await loadConnection(ctx, connectionId);
  return listAnnotationsOf(ctx.orgId, connectionId);
}

export async function listAnnotations(
  ctx: AuthContext,
  connectionId: string,
  q: PageQuery & { table?: string },
) {
  await loadConnection(ctx, connectionId);
  return pageOf(await listAnnotationsOf(ctx.orgId, connectionId, q.table), q);
}

/**
 * With the optional embedding index on (LOUPE_EMBEDDING_MODEL), a user's edit queues the refresh of the
 * edited table's vector (annotation-embeddings.ts, loaded only then).
 */
async function afterUserEdit(ctx: AuthContext, connectionId: string): Promise<void> {
  if (!config().LOUPE_EMBEDDING_MODEL?.trim()) return;
  await (await import('./annotation-embeddings')).queueEmbeddingRefresh(ctx, connectionId);
}

export async function createAnnotation(ctx: AuthContext, connectionId: string, body: AnnotationCreate) {
  await loadConnection(ctx, connectionId);
  const { annotation } = await writeAnnotation(
    ctx.orgId,
    connectionId,
    { ...body, columnName: body.columnName ?? null },
    'user',
  );
  await afterUserEdit(ctx, connectionId);
  if (annotation.sampleValues === false) await dropExcludedValues(ctx.orgId, connectionId);
  return annotation;
}

export async function getAnnotation(ctx: AuthContext, connectionId: string, id: string) {
  await loadConnection(ctx, connectionId);
  const found = await findById(ctx.orgId, connectionId, id);
  if (!found) throw notFound('Annotation');
  return found.annotation;
}

/** A user's edit: the annotation becomes theirs (automatic annotation no longer refreshes it). */
export async function updateAnnotation(
  ctx: AuthContext,
  connectionId: string,
  id: string,
  body: AnnotationUpdate,
) {
  await loadConnection(ctx, connectionId);
  const found = await findById(ctx.orgId, connectionId, id);
  if (!found) throw notFound('Annotation');
  const changes: Record<string, unknown> = { source: 'user', updatedAt: nowIso() };
  for (const k of ['annotation', 'dataType', 'examples', 'sampleValues'] as const)
    if (body[k] !== undefined) changes[k] = body[k];
  const updated = await db.patch(connPk(ctx.orgId, connectionId), found.sk, changes, {
    condition: 'id = :id',
    values: { ':id': id },
  });
  if (!updated) throw notFound('Annotation');
  await afterUserEdit(ctx, connectionId);
  if (body.sampleValues === false) await dropExcludedValues(ctx.orgId, connectionId);
  return toAnnotation(updated);
}

/**
 * An annotation now excludes a column's values: the stored value index loses them at once (not at the
 * next refresh). Retrieval also leaves excluded columns out when it reads the index (usableValues).
 */
async function dropExcludedValues(orgId: string, connectionId: string): Promise<void> {
  const [{ loadSchema, saveSchema }, { usableValues }] = await Promise.all([
    import('./schema-store'),
    import('./value-index'),
  ]);
  for (let attempt = 0; attempt < 3; attempt++) {
    const cached = await loadSchema(orgId, connectionId);
    if (!cached?.values?.columns.length) return;
    const kept = usableValues(cached.values, await listAnnotationsOf(orgId, connectionId));
    if (kept.length === cached.values.columns.length) return;
    await saveSchema(orgId, connectionId, { ...cached, values: { ...cached.values, columns: kept } });
    // A refresh that wrote meanwhile sampled with the exclusion already in force; check again.
  }
}

export async function deleteAnnotation(ctx: AuthContext, connectionId: string, id: string) {
  await loadConnection(ctx, connectionId);
  const found = await findById(ctx.orgId, connectionId, id);
  if (!found) throw notFound('Annotation');
  const pk = connPk(ctx.orgId, connectionId);
  await db.delete(pk, found.sk);
  await db.delete(pk, idSk(id));
  await afterUserEdit(ctx, connectionId);
  return { deleted: true as const };
}
