import type * as z from 'zod/mini';
import type { AuthContext } from '../auth/context';
import { executeReadOnly } from '../connections/execute';
import { assertCanChange, onAssignedConnection } from '../dashboards/access';
import { assertReadOnlyAt, connectionForSave } from '../dashboards/connection';
import { pageOf } from '../http/envelope';
import type { PageQuery } from '../http/schemas';
import { alreadyExists, conflict, notFound, validationError } from '../platform/errors';
import { newId, nowIso } from '../platform/ids';
import { nameKey } from '../saved-queries/name-guard';
import type { MetricCreate, MetricUpdate } from './api';
import { type MetricRecord, metricNames, metricStore } from './store';

export function metricView(m: MetricRecord) {
  return {
    id: m.id,
    orgId: m.orgId,
    name: m.name,
    description: m.description ?? null,
    formula: m.formula,
    connectionId: m.connectionId ?? null,
    unit: m.unit ?? null,
    dimensions: m.dimensions ?? null,
    createdBy: m.createdBy,
    createdAt: m.createdAt,
    updatedAt: m.updatedAt,
  };
}

async function found(ctx: AuthContext, id: string): Promise<MetricRecord> {
  const m = await metricStore.get(ctx.orgId, id);
  if (!m || !onAssignedConnection(ctx, m)) throw notFound('Metric');
  return m;
}

/** Save-time checks: the connection (when set) is visible to the caller and the formula is one read. */
async function checkFormula(ctx: AuthContext, connectionId: string | null, formula: string) {
  if (!connectionId) return;
  const conn = await connectionForSave(ctx, connectionId, 'body.connectionId');
  await assertReadOnlyAt(conn.type, formula, 'body.formula', conn.allowedFunctions);
}

export async function listMetrics(ctx: AuthContext, q: PageQuery) {
  const items = (await metricStore.list(ctx.orgId))
    .filter((m) => onAssignedConnection(ctx, m))
    .sort((a, b) => nameKey(a.name).localeCompare(nameKey(b.name)) || a.id.localeCompare(b.id));
  return pageOf(items.map(metricView), q);
}

export async function getMetric(ctx: AuthContext, id: string) {
  return metricView(await found(ctx, id));
}

export async function createMetric(ctx: AuthContext, input: z.output<typeof MetricCreate>) {
  const connectionId = input.connectionId ?? null;
  await checkFormula(ctx, connectionId, input.formula);
  const now = nowIso();
  const m: MetricRecord = {
    id: newId(),
    orgId: ctx.orgId,
    name: input.name,
    description: input.description ?? null,
    formula: input.formula,
    connectionId,
    unit: input.unit ?? null,
    dimensions: input.dimensions ?? null,
    createdBy: ctx.userId,
    createdAt: now,
    updatedAt: now,
  };
  if (!(await metricNames.claim(ctx.orgId, m.name, m.id))) throw alreadyExists('A metric');
  try {
    await metricStore.put(m);
  } catch (e) {
    await metricNames.release(ctx.orgId, m.name, m.id);
    throw e;
  }
  return metricView(m);
}

export async function updateMetric(ctx: AuthContext, id: string, input: z.output<typeof MetricUpdate>) {
  const m = await found(ctx, id);
  assertCanChange(ctx, m, 'metric');
  const formula = input.formula ?? m.formula;
  const connectionId = input.connectionId === undefined ? m.connectionId : input.connectionId;
  if (input.formula !== undefined || input.connectionId !== undefined)
    await checkFormula(ctx, connectionId, formula);
  const renamed = input.name !== undefined && nameKey(input.name) !== nameKey(m.name);
  if (renamed && !(await metricNames.claim(ctx.orgId, input.name!, id))) throw alreadyExists('A metric');
  const updated = await metricStore.update(ctx.orgId, id, m.name, {
    name: input.name,
    formula: input.formula,
    description: input.description,
    connectionId: input.connectionId,
    unit: input.unit,
    dimensions: input.dimensions,
    updatedAt: nowIso(),
  });
  if (!updated) {
    if (renamed) await metricNames.release(ctx.orgId, input.name!, id);
    if (!(await metricStore.get(ctx.orgId, id))) throw notFound('Metric');
    throw conflict(
      'CONFLICT',
      'The metric was renamed by another request meanwhile; read it again and retry.',
    );
  }
  if (renamed) await metricNames.release(ctx.orgId, m.name, id);
  return metricView(updated);
}

/** Deletes the metric, then frees its name (safe to repeat). */
export async function deleteMetric(ctx: AuthContext, id: string) {
  const m = await found(ctx, id);
  assertCanChange(ctx, m, 'metric');
  if (!(await metricStore.delete(ctx.orgId, id))) throw notFound('Metric');
  await metricNames.release(ctx.orgId, m.name, id);
  return { deleted: true as const };
}

/**
 * Evaluates the formula now, read-only (source `metric`), on the metric's connection or the
 * `connectionId` override: the value is the first column of the first row, null when there are no
 * rows. A failing formula is the path's 422 QUERY_FAILED.
 */
export async function metricValue(ctx: AuthContext, id: string, override?: string) {
  const m = await found(ctx, id);
  const connectionId = override ?? m.connectionId;
  if (!connectionId)
    throw validationError('This metric has no connection; pass connectionId to evaluate it on one.', {
      issues: [
        {
          path: 'query.connectionId',
          message: 'required when the metric has no connection',
          code: 'required',
        },
      ],
    });
  const result = await executeReadOnly(ctx, connectionId, { sql: m.formula, source: 'metric', maxRows: 1 });
  const first = result.rows[0];
  const column = result.columns[0];
  return {
    value: first && column !== undefined ? (first[column] ?? null) : null,
    unit: m.unit ?? null,
    asOf: nowIso(),
    executionTime: result.executionTime,
  };
}
