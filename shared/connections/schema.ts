import type { AuthContext } from '../auth/context';
import { diagnose, introspectionFailed } from '../databases/diagnosis';
import { driverFor } from '../databases/drivers';
import { REQUEST_DB_BUDGET_MS } from '../databases/drivers/deadline';
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
import { sampleValues, usableValues, type ValueIndex } from './value-index';

/** For other capabilities: the cached schema of a connection the caller may use (404 otherwise), or null. */
export async function cachedSchema(ctx: AuthContext, connectionId: string): Promise<CachedSchema | null> {
  await loadConnection(ctx, connectionId);
  return loadSchema(ctx.orgId, connectionId);
}

/** GET /connections/{id}/schema: the cache, or 404 when nothing has been introspected yet. */
export async function getSchema(ctx: AuthContext, connectionId: string): Promise<CachedSchema> {
  const found = await cachedSchema(ctx, connectionId);
  // The value index stays internal: sampled values are for retrieval, not part of the schema answer.
  const cached = found && {
    schema: found.schema,
    schemaSummary: found.schemaSummary,
    schemaUpdatedAt: found.schemaUpdatedAt,
  };
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
  opts: { target?: ConnectionTarget; valuesMs?: number } = {},
): Promise<CachedSchema> {
  // The optional embedding index is brought up to date meanwhile (never fails the introspection), and
  // the value index is sampled within its budget (never fails it either).
  const annotations = listAnnotationsOf(rec.orgId, rec.id);
  annotations.catch(() => undefined);
  const [schemaSummary, , values] = await Promise.all([
    summarizeSchema(ctx, rec, schema),
    refreshEmbeddingIndex({ orgId: rec.orgId, userId: ctx.userId }, rec.id, schema.tables, () => annotations),
    sampleConnectionValues(rec, schema, annotations, opts),
  ]);
  const schemaUpdatedAt = nowIso();
  // An exclusion written while sampling ran is honoured before anything is stored.
  let kept = values;
  if (kept?.columns.length) {
    const latest = await listAnnotationsOf(rec.orgId, rec.id).catch(() => null);
    kept = latest ? { ...kept, columns: usableValues(kept, latest) } : null;
  }
  const value = { schema, schemaSummary, schemaUpdatedAt, values: kept };
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

/** The value index of a freshly read schema (value-index.ts); null when sampling could not start. */
async function sampleConnectionValues(
  rec: ConnectionRecord,
  schema: SchemaSnapshot,
  annotations: Promise<Awaited<ReturnType<typeof listAnnotationsOf>>>,
  opts: { target?: ConnectionTarget; valuesMs?: number },
): Promise<ValueIndex | null> {
  try {
    const [target, notes] = await Promise.all([opts.target ?? targetFor(rec), annotations]);
    const index = await sampleValues(target, schema.tables, notes, { totalMs: opts.valuesMs });
    logger().info('value index sampled', { connectionId: rec.id, ...index.stats });
    return index;
  } catch (e) {
    logger().warn('value index: sampling failed', { connectionId: rec.id, error: (e as Error).message });
    return null;
  }
}

/** POST /connections/{id}/schema: re-reads the live schema and caches it. */
export async function refreshSchema(ctx: AuthContext, connectionId: string): Promise<CachedSchema> {
  const rec = await loadConnection(ctx, connectionId);
  const target = await targetFor(rec);
  const started = performance.now();
  const schema = await introspect(rec, target);
  const left = REQUEST_DB_BUDGET_MS - (performance.now() - started);
  const { values: _values, ...stored } = await storeIntrospected(ctx, rec, schema, {
    target,
    valuesMs: Math.max(0, left - 3_000),
  });
  return stored;
}
