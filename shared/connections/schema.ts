import type { AuthContext } from '../auth/context';
import { diagnose, introspectionFailed } from '../databases/diagnosis';
import { driverFor } from '../databases/drivers';
import type { ConnectionTarget, SchemaSnapshot } from '../databases/drivers/types';
import { AppError } from '../platform/errors';
import { outbox } from '../platform/events';
import { nowIso } from '../platform/ids';
import { logger } from '../platform/logger';
import { listAnnotationsOf } from './annotations';
import { loadConnection } from './connections';
import { refreshEmbeddingIndex } from './embedding-index';
import { type CachedSchema, loadSchema, saveSchema } from './schema-store';
import { type ConnectionRecord, connectionStore, type StoredDiagnosis } from './store';
import { summarizeSchema } from './summary';
import { targetFor } from './target';

/** For other capabilities: the cached schema of a connection the caller may use (404 otherwise), or null. */
export async function cachedSchema(ctx: AuthContext, connectionId: string): Promise<CachedSchema | null> {
  await loadConnection(ctx, connectionId);
  return loadSchema(ctx.orgId, connectionId);
}

/** GET /connections/{id}/schema: the cache, or 404 when nothing has been introspected yet. */
export async function getSchema(ctx: AuthContext, connectionId: string): Promise<CachedSchema> {
  const cached = await cachedSchema(ctx, connectionId);
  if (!cached)
    throw new AppError(
      404,
      'NOT_FOUND',
      'Schema not introspected yet: run POST /connections/{id}/test (its first success caches it) or POST /connections/{id}/schema.',
    );
  return cached;
}

/** Reads the live schema; a failure is 422 INTROSPECTION_FAILED with a diagnosis (also stored as lastError). */
export async function introspect(
  rec: ConnectionRecord,
  target: ConnectionTarget,
  opts?: { timeoutMs?: number },
): Promise<SchemaSnapshot> {
  try {
    const driver = await driverFor(target);
    return await driver.introspect(opts);
  } catch (e) {
    const err = introspectionFailed(e, target);
    const diagnosis =
      ((err.details as { diagnosis?: StoredDiagnosis } | undefined)?.diagnosis as
        | StoredDiagnosis
        | undefined) ?? diagnose(e, target, 'READ_SCHEMA');
    await connectionStore.patch(
      rec.orgId,
      rec.id,
      { lastError: err.message, lastErrorDiagnosis: diagnosis, updatedAt: nowIso() },
      { expectVersion: rec.version },
    );
    throw err;
  }
}

/** Summarizes and caches a freshly read schema, stamps the connection and records `schema.updated`. */
export async function storeIntrospected(
  ctx: AuthContext,
  rec: ConnectionRecord,
  schema: SchemaSnapshot,
): Promise<CachedSchema> {
  // The optional embedding index is brought up to date meanwhile (never fails the introspection).
  const [schemaSummary] = await Promise.all([
    summarizeSchema(ctx, rec, schema),
    refreshEmbeddingIndex({ orgId: rec.orgId, userId: ctx.userId }, rec.id, schema.tables, () =>
      listAnnotationsOf(rec.orgId, rec.id),
    ),
  ]);
  const schemaUpdatedAt = nowIso();
  const value = { schema, schemaSummary, schemaUpdatedAt };
  await saveSchema(rec.orgId, rec.id, value);
  const updated = await connectionStore.patch(
    rec.orgId,
    rec.id,
    { schemaUpdatedAt, lastError: null, lastErrorDiagnosis: null },
    { expectVersion: rec.version },
  );
  if (updated)
    await outbox()
      .record(rec.orgId, 'schema.updated', {
        connectionId: rec.id,
        name: rec.name,
        tableCount: schema.tables.length,
        schemaUpdatedAt,
      })
      .catch((e) => logger().error('recording schema.updated failed', { error: (e as Error).message }));
  return value;
}

/** POST /connections/{id}/schema: re-reads the live schema and caches it. */
export async function refreshSchema(ctx: AuthContext, connectionId: string): Promise<CachedSchema> {
  const rec = await loadConnection(ctx, connectionId);
  const target = await targetFor(rec);
  const schema = await introspect(rec, target);
  return storeIntrospected(ctx, rec, schema);
}
