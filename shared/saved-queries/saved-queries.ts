import type * as z from 'zod/mini';
import type { AuthContext } from '../auth/context';
import { connectionForUse, executeReadOnly } from '../connections/execute';
import { assertCanChange, canSee, onAssignedConnection } from '../dashboards/access';
import { assertReadOnlyAt, connectionForSave } from '../dashboards/connection';
import type { DbType } from '../databases/drivers/types';
import { pageOf } from '../http/envelope';
import { alreadyExists, conflict, notFound, validationError } from '../platform/errors';
import { newId, nowIso } from '../platform/ids';
import type { SavedQueryCreate, SavedQueryListQuery, SavedQueryRun, SavedQueryUpdate } from './api';
import { nameKey } from './name-guard';
import { bindQuery, checkDefinitions, guardText, type ParamDef } from './params';
import { type SavedQueryRecord, savedQueryNames, savedQueryStore } from './store';
import { resolveValues } from './values';

export function savedQueryView(r: SavedQueryRecord) {
  return {
    id: r.id,
    orgId: r.orgId,
    connectionId: r.connectionId,
    name: r.name,
    description: r.description ?? null,
    query: r.query,
    parameters: JSON.stringify(r.parameters ?? []),
    tags: r.tags ?? null,
    isPublic: r.isPublic,
    createdBy: r.createdBy,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
}

const normalizeDefs = (defs: z.output<typeof SavedQueryCreate>['parameters']): ParamDef[] =>
  defs.map((d) => ({
    name: d.name,
    type: d.type,
    required: d.required,
    ...(d.default !== undefined ? { default: d.default } : {}),
  }));

/** 400 with field paths when placeholders and definitions disagree; 400 READ_ONLY_VIOLATION for a write. */
async function checkQuery(
  type: DbType,
  query: string,
  defs: ParamDef[],
  allowedFunctions: readonly string[] = [],
) {
  const issues = checkDefinitions(type, query, defs);
  if (issues.length) throw validationError('Request validation failed.', { issues });
  await assertReadOnlyAt(type, guardText(type, query, defs), 'body.query', allowedFunctions);
}

async function visible(ctx: AuthContext, id: string): Promise<SavedQueryRecord> {
  const r = await savedQueryStore.get(ctx.orgId, id);
  if (!r || !canSee(ctx, r) || !onAssignedConnection(ctx, r)) throw notFound('Saved query');
  return r;
}

export async function listSavedQueries(ctx: AuthContext, q: z.output<typeof SavedQueryListQuery>) {
  const tags = q.tags?.toLowerCase();
  const items = (await savedQueryStore.list(ctx.orgId))
    .filter((r) => canSee(ctx, r) && onAssignedConnection(ctx, r))
    .filter((r) => !q.connectionId || r.connectionId === q.connectionId)
    .filter((r) => !tags || (r.tags ?? '').toLowerCase().includes(tags))
    .sort((a, b) => nameKey(a.name).localeCompare(nameKey(b.name)) || a.id.localeCompare(b.id));
  return pageOf(items.map(savedQueryView), q);
}

export async function getSavedQuery(ctx: AuthContext, id: string) {
  return savedQueryView(await visible(ctx, id));
}

export async function createSavedQuery(ctx: AuthContext, input: z.output<typeof SavedQueryCreate>) {
  const conn = await connectionForSave(ctx, input.connectionId, 'body.connectionId');
  const parameters = normalizeDefs(input.parameters);
  await checkQuery(conn.type, input.query, parameters, conn.allowedFunctions);
  const now = nowIso();
  const r: SavedQueryRecord = {
    id: newId(),
    orgId: ctx.orgId,
    connectionId: input.connectionId,
    name: input.name,
    description: input.description ?? null,
    query: input.query,
    parameters,
    tags: input.tags ?? null,
    isPublic: input.isPublic,
    createdBy: ctx.userId,
    createdAt: now,
    updatedAt: now,
  };
  if (!(await savedQueryNames.claim(ctx.orgId, r.name, r.id))) throw alreadyExists('A saved query');
  try {
    await savedQueryStore.put(r);
  } catch (e) {
    await savedQueryNames.release(ctx.orgId, r.name, r.id);
    throw e;
  }
  return savedQueryView(r);
}

export async function updateSavedQuery(
  ctx: AuthContext,
  id: string,
  input: z.output<typeof SavedQueryUpdate>,
) {
  const r = await visible(ctx, id);
  assertCanChange(ctx, r, 'saved query');
  const parameters = input.parameters ? normalizeDefs(input.parameters) : r.parameters;
  const query = input.query ?? r.query;
  const connectionId = input.connectionId ?? r.connectionId;
  if (input.query !== undefined || input.parameters !== undefined || input.connectionId !== undefined) {
    const conn = await connectionForSave(ctx, connectionId, 'body.connectionId');
    await checkQuery(conn.type, query, parameters, conn.allowedFunctions);
  }
  const renamed = input.name !== undefined && nameKey(input.name) !== nameKey(r.name);
  if (renamed && !(await savedQueryNames.claim(ctx.orgId, input.name!, id)))
    throw alreadyExists('A saved query');
  const updated = await savedQueryStore.update(ctx.orgId, id, r.name, {
    name: input.name,
    description: input.description,
    query: input.query,
    connectionId: input.connectionId,
    parameters: input.parameters ? parameters : undefined,
    tags: input.tags,
    isPublic: input.isPublic,
    updatedAt: nowIso(),
  });
  if (!updated) {
    if (renamed) await savedQueryNames.release(ctx.orgId, input.name!, id);
    if (!(await savedQueryStore.get(ctx.orgId, id))) throw notFound('Saved query');
    throw conflict(
      'CONFLICT',
      'The saved query was renamed by another request meanwhile; read it again and retry.',
    );
  }
  if (renamed) await savedQueryNames.release(ctx.orgId, r.name, id);
  return savedQueryView(updated);
}

/** Deletes the saved query, then frees its name (safe to repeat). */
export async function deleteSavedQuery(ctx: AuthContext, id: string) {
  const r = await visible(ctx, id);
  assertCanChange(ctx, r, 'saved query');
  if (!(await savedQueryStore.delete(ctx.orgId, id))) throw notFound('Saved query');
  await savedQueryNames.release(ctx.orgId, r.name, id);
  return { deleted: true as const };
}

/**
 * Runs a saved query read-only (source `saved_query`): values are checked against the definitions
 * (400 with a path per problem), then bound as driver parameters for the connection's current
 * dialect, never spliced into the text.
 */
export async function runSavedQuery(ctx: AuthContext, id: string, input: z.output<typeof SavedQueryRun>) {
  const r = await visible(ctx, id);
  const { values, issues } = resolveValues(r.parameters, input.params);
  if (issues.length) throw validationError('Parameter validation failed.', { issues });
  const conn = await connectionForUse(ctx, r.connectionId);
  const problems = checkDefinitions(conn.type, r.query, r.parameters);
  if (problems.length)
    throw validationError(
      `The saved query does not fit its connection (now ${conn.type}); edit the query or its parameters.`,
      { issues: problems.map((p) => ({ ...p, path: p.path.replace(/^body\./, 'savedQuery.') })) },
    );
  const bound = bindQuery(conn.type, r.query, r.parameters, values);
  return executeReadOnly(ctx, r.connectionId, {
    sql: bound.sql,
    params: bound.params,
    maxRows: input.maxRows,
    source: 'saved_query',
    writtenSql: r.query,
  });
}
