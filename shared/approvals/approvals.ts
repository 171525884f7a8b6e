/**
 * Query approval (decisions.md §7): submit, list pending, status, approve, reject, expiry sweep.
 *
 * State moves of a pending query, each one conditional single-item write on its record:
 * - PENDING → APPROVED (execution RUNNING) only while PENDING and not past expiresAt: of two
 *   concurrent approvals exactly one write succeeds; the other answers 409 INVALID_STATE. The
 *   winner then runs the statement and records the outcome (SUCCEEDED with the bounded result, or
 *   FAILED with the error; the query stays APPROVED either way).
 * - PENDING → REJECTED under the same condition.
 * - PENDING → EXPIRED by the sweep, only once past expiresAt; reads show EXPIRED as soon as the time
 *   has passed. `query.expired` is recorded by the sweep that won that write, so at most once.
 */
import type * as z from 'zod/mini';
import { type AuthContext, isAdmin } from '../auth/context';
import { authStore } from '../auth/store';
import { loadConnection } from '../connections/connections';
import { startQueryRecord } from '../connections/history';
import { type ConnectionRecord, connectionStore } from '../connections/store';
import { targetFor } from '../connections/target';
import type { QueryResult } from '../databases/drivers/types';
import { pageOf } from '../http/envelope';
import type { PageQuery } from '../http/schemas';
import { config } from '../platform/config';
import { AppError, conflict, forbidden, isAppError, notFound, validationError } from '../platform/errors';
import { outbox } from '../platform/events';
import type { EventType } from '../platform/events/port';
import { newId, nowIso } from '../platform/ids';
import { logger } from '../platform/logger';
import { count } from '../platform/measures';
import type { ApprovalRuleCreate, ApprovalRuleUpdate, QueryListQuery, QuerySubmitRequest } from './api';
import { type ApprovalRuleRecord, type PendingQueryRecord, pendingStore, ruleStore } from './store';

/** How much of the statement an event carries. */
const EVENT_QUERY_CHARS = 4000;

export function pendingView(r: PendingQueryRecord, now = Date.now()) {
  const expired = r.status === 'PENDING' && Date.parse(r.expiresAt) <= now;
  return {
    id: r.id,
    connectionId: r.connectionId,
    connectionName: r.connectionName ?? null,
    connectionType: r.connectionType ?? null,
    apiKeyId: r.apiKeyId ?? null,
    query: r.query,
    context: r.context ?? null,
    status: expired ? ('EXPIRED' as const) : r.status,
    statementKind: r.kind,
    statementType: r.statementType,
    submittedBy: r.submittedBy,
    reviewedBy: r.reviewedBy ?? null,
    reviewedAt: r.reviewedAt ?? null,
    reviewNote: r.reviewNote ?? null,
    ...(r.status === 'APPROVED' && r.resultJson ? { result: JSON.parse(r.resultJson) as QueryResult } : {}),
    error: r.error ?? null,
    expiresAt: r.expiresAt,
    createdAt: r.createdAt,
  };
}

export function ruleView(r: ApprovalRuleRecord) {
  return {
    id: r.id,
    orgId: r.orgId,
    connectionId: r.connectionId ?? null,
    scope: r.scope,
    approvers: r.approvers,
    isActive: r.isActive,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
}

const isExpired = (r: PendingQueryRecord, now = Date.now()) =>
  r.status === 'PENDING' && Date.parse(r.expiresAt) <= now;

/** The active rules that govern a connection: its own rules, else the rules with no connection. */
function rulesFor(active: ApprovalRuleRecord[], connectionId: string): ApprovalRuleRecord[] {
  const own = active.filter((r) => r.connectionId === connectionId);
  return own.length ? own : active.filter((r) => r.connectionId === null);
}
const activeRules = async (orgId: string) => (await ruleStore.list(orgId)).filter((r) => r.isActive);

/** May this caller approve or reject the query? The approvers of the matching rules; with none, admins. */
function mayReview(ctx: AuthContext, rules: ApprovalRuleRecord[]): boolean {
  if (rules.length === 0) return isAdmin(ctx);
  return rules.some((r) => r.approvers.includes(ctx.userId));
}

interface Classification {
  kind: 'read' | 'write';
  statementType: string;
}

/**
 * The classifier's verdict; a write is also verified here to be exactly one statement (whichever
 * classifier is in use), since a guard refuses a non-read at its first keyword before counting.
 */
async function classify(type: ConnectionRecord['type'], text: string): Promise<Classification> {
  // Lazily, like the guard and the drivers below: listing rules and queries needs none of them.
  const [{ classifyStatement }, { verifyWrite }] = await Promise.all([
    import('./classify'),
    import('../guard/write'),
  ]);
  const c = await classifyStatement(type, text);
  if (c.kind === 'write' && type !== 'MONGODB') await verifyWrite(type, text);
  return c;
}

/** A write must never reach a connection that cannot take one; refused with the guard's 400. */
async function assertWritable(conn: ConnectionRecord, c: Classification): Promise<void> {
  if (c.kind !== 'write') return;
  const { readOnlyViolation } = await import('../guard/read');
  if (conn.type === 'MONGODB')
    throw readOnlyViolation(
      c.statementType,
      'Approved MongoDB queries run only reads; this query writes ($out / $merge or another refused stage).',
    );
  if (conn.readOnly)
    throw readOnlyViolation(
      c.statementType,
      `Connection "${conn.name}" is read-only (readOnly: true): this statement writes, so it cannot be submitted. An admin can set readOnly to false to allow approved writes.`,
    );
  if (conn.type === 'SQLITE' && (conn.database.startsWith('s3://') || config().runtime === 'aws'))
    throw readOnlyViolation(
      c.statementType,
      'SQLite sources in S3 are read from a downloaded copy; a write would be lost, so it cannot be submitted.',
    );
}

const inactive = (conn: ConnectionRecord) =>
  new AppError(
    422,
    'CONNECTION_INACTIVE',
    `Connection "${conn.name}" is inactive${conn.lastError ? ` (last error: ${conn.lastError})` : ''}. ` +
      'Test it with POST /connections/{id}/test, or set isActive to true, to use it again.',
    { connectionId: conn.id },
  );

function eventData(r: PendingQueryRecord, extra: Record<string, unknown> = {}) {
  return {
    queryId: r.id,
    connectionId: r.connectionId,
    connectionName: r.connectionName,
    connectionType: r.connectionType,
    statementKind: r.kind,
    statementType: r.statementType,
    query: r.query.length > EVENT_QUERY_CHARS ? `${r.query.slice(0, EVENT_QUERY_CHARS)}…` : r.query,
    submittedBy: r.submittedBy,
    expiresAt: r.expiresAt,
    ...extra,
  };
}
const record = (r: PendingQueryRecord, type: EventType, extra?: Record<string, unknown>) =>
  outbox().record(r.orgId, type, eventData(r, extra));

const errorOf = (e: unknown): NonNullable<PendingQueryRecord['error']> =>
  isAppError(e)
    ? { code: e.code, message: e.message, ...(e.details !== undefined ? { details: e.details } : {}) }
    : { code: 'INTERNAL_ERROR', message: 'The statement failed unexpectedly.' };

/** The result as stored and returned: rows for a read, rowsAffected for a write. */
function stored(result: QueryResult, kind: 'read' | 'write') {
  const r = result as QueryResult & { rowsAffected?: number };
  return {
    columns: r.columns,
    rows: r.rows,
    rowCount: r.rowCount,
    executionTime: r.executionTime,
    ...(r.truncated ? { truncated: true } : {}),
    ...(kind === 'write' ? { rowsAffected: r.rowsAffected ?? r.rowCount } : {}),
  };
}

/**
 * Runs the statement of a query this request has just moved to APPROVED (execution RUNNING) and
 * records the outcome. Returns the result, or throws the execution's AppError after recording it.
 */
async function execute(conn: ConnectionRecord, q: PendingQueryRecord, kind: 'read' | 'write') {
  // The connection's query history records approved statements too (source `approval`, the submitter).
  const history = startQueryRecord(q.orgId, q.connectionId);
  const base = {
    connectionId: q.connectionId,
    source: 'approval' as const,
    question: q.context,
    sql: q.query,
    userId: q.submittedBy,
  };
  try {
    const { resultBytesFor, runApproved } = await import('./execute');
    const maxBytes = resultBytesFor(q.query, q.context);
    const result = stored(await runApproved(await targetFor(conn), q.query, kind, maxBytes), kind);
    await history.write({
      ...base,
      status: 'SUCCESS',
      rowCount: result.rowsAffected ?? result.rowCount,
      executionTime: result.executionTime,
      truncated: !!result.truncated,
      error: null,
      errorCode: null,
    });
    const done = await pendingStore.finishExecution(q.orgId, q.id, {
      execution: 'SUCCEEDED',
      resultJson: JSON.stringify(result),
      error: null,
      updatedAt: nowIso(),
    });
    return { result, record: done ?? q };
  } catch (e) {
    const error = errorOf(e);
    if (!isAppError(e)) logger().error('approved statement failed unexpectedly', { error: e });
    await history.write({
      ...base,
      status: error.code === 'QUERY_TIMEOUT' ? 'TIMEOUT' : 'FAILED',
      rowCount: null,
      executionTime: null,
      truncated: false,
      error: error.message,
      errorCode: error.code,
    });
    await pendingStore.finishExecution(q.orgId, q.id, {
      execution: 'FAILED',
      resultJson: null,
      error,
      updatedAt: nowIso(),
    });
    if (isAppError(e))
      throw new AppError(e.status, e.code, e.message, {
        ...((e.details as Record<string, unknown> | undefined) ?? {}),
        queryId: q.id,
        status: 'APPROVED',
      });
    throw e;
  }
}

export async function submitQuery(ctx: AuthContext, input: z.output<typeof QuerySubmitRequest>) {
  const rulesRead = activeRules(ctx.orgId);
  rulesRead.catch(() => {}); // awaited below
  const conn = await loadConnection(ctx, input.connectionId);
  const c = await classify(conn.type, input.query);
  await assertWritable(conn, c);
  const rules = rulesFor(await rulesRead, conn.id);
  const auto = c.kind === 'read' && rules.length > 0 && rules.every((r) => r.scope === 'write');
  const now = Date.now();
  const nowText = new Date(now).toISOString();
  const q: PendingQueryRecord = {
    id: newId(),
    orgId: ctx.orgId,
    connectionId: conn.id,
    connectionName: conn.name,
    connectionType: conn.type,
    apiKeyId: ctx.keyId,
    query: input.query,
    context: input.context ?? null,
    kind: c.kind,
    statementType: c.statementType,
    status: 'PENDING',
    submittedBy: ctx.userId,
    reviewedBy: null,
    reviewNote: null,
    reviewedAt: null,
    execution: null,
    resultJson: null,
    error: null,
    expiresAt: new Date(now + config().LOUPE_APPROVAL_TTL_SECONDS * 1000).toISOString(),
    expiredAt: null,
    createdAt: nowText,
    updatedAt: nowText,
  };
  if (!auto) {
    await pendingStore.create(q);
    count('approvals', { outcome: 'submitted' });
    await record(q, 'query.approval.requested');
    return pendingView(q, now);
  }
  // A read under write-scope rules only: approved at once by "auto" and run now.
  if (!conn.isActive) throw inactive(conn);
  const approved: PendingQueryRecord = {
    ...q,
    status: 'APPROVED',
    reviewedBy: 'auto',
    reviewedAt: nowText,
    execution: 'RUNNING',
  };
  await pendingStore.create(approved);
  count('approvals', { outcome: 'auto_approved' });
  await record(approved, 'query.approval.requested');
  try {
    const { record: done } = await execute(conn, approved, 'read');
    await record(done, 'query.approved', {
      reviewedBy: 'auto',
      execution: 'SUCCEEDED',
      rowCount: JSON.parse(done.resultJson ?? '{}').rowCount ?? null,
    });
    return pendingView(done);
  } catch (e) {
    await record(approved, 'query.approved', {
      reviewedBy: 'auto',
      execution: 'FAILED',
      errorCode: errorOf(e).code,
    });
    throw e;
  }
}

export async function listPending(ctx: AuthContext, q: PageQuery) {
  const active = await activeRules(ctx.orgId);
  const approver = active.some((r) => r.approvers.includes(ctx.userId));
  if (!isAdmin(ctx) && !approver)
    throw forbidden(
      'Listing pending queries needs an admin or an approver named in an active approval rule.',
    );
  const now = Date.now();
  const pending = (await pendingStore.listPending(ctx.orgId)).filter(
    (p) =>
      p.status === 'PENDING' &&
      !isExpired(p, now) &&
      (isAdmin(ctx) || mayReview(ctx, rulesFor(active, p.connectionId))),
  );
  pending.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  return pageOf(
    pending.map((p) => pendingView(p, now)),
    q,
  );
}

/**
 * The history: the organization's submitted queries, every status, newest first, without `result`.
 * Admins see all; anyone else their own submissions and the queries they may review under the active
 * rules as they are now (each item is one GET /queries/{id}/status shows the caller too). Reads the
 * organization's queries once per request (one Query on the base table, results left out), filters
 * and pages in memory.
 */
export async function listQueries(ctx: AuthContext, q: QueryListQuery) {
  const [all, active] = await Promise.all([
    pendingStore.listAll(ctx.orgId),
    isAdmin(ctx) ? [] : activeRules(ctx.orgId),
  ]);
  const now = Date.now();
  const wanted = q.status && new Set(q.status);
  const items = all
    .filter(
      (p) => isAdmin(ctx) || p.submittedBy === ctx.userId || mayReview(ctx, rulesFor(active, p.connectionId)),
    )
    .map((p) => {
      const { result: _result, ...item } = pendingView(p, now);
      return item;
    })
    .filter((p) => !wanted || wanted.has(p.status))
    .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id));
  return pageOf(items, q);
}

/** The query, if the caller may see it: its submitter, admins, its reviewers, members using its connection. */
async function visibleQuery(ctx: AuthContext, id: string) {
  const [q, active] = await Promise.all([pendingStore.get(ctx.orgId, id), activeRules(ctx.orgId)]);
  if (!q) throw notFound('Query');
  const rules = rulesFor(active, q.connectionId);
  const visible =
    q.submittedBy === ctx.userId ||
    isAdmin(ctx) ||
    mayReview(ctx, rules) ||
    ctx.connectionIds.includes(q.connectionId);
  return { q, rules, visible };
}

export async function queryStatus(ctx: AuthContext, id: string) {
  const { q, visible } = await visibleQuery(ctx, id);
  if (!visible) throw notFound('Query');
  return pendingView(q);
}

const invalidState = (q: PendingQueryRecord) => {
  const status = isExpired(q) ? 'EXPIRED' : q.status;
  return conflict(
    'INVALID_STATE',
    `The query is ${status}; only a PENDING query can be approved or rejected.`,
    {
      status,
    },
  );
};

async function reviewable(ctx: AuthContext, id: string) {
  const { q, rules } = await visibleQuery(ctx, id);
  if (q.submittedBy === ctx.userId) throw forbidden('Nobody approves or rejects their own submission.');
  if (!mayReview(ctx, rules)) {
    throw forbidden(
      rules.length
        ? 'Only the approvers named in the approval rule for this connection may review this query.'
        : 'With no approval rule for this connection, only admins may review this query.',
    );
  }
  if (q.status !== 'PENDING' || isExpired(q)) throw invalidState(q);
  return q;
}

/** After a lost conditional write: the current state, as 409 (or 404 when the query vanished). */
async function lostRace(ctx: AuthContext, id: string): Promise<never> {
  const now = await pendingStore.get(ctx.orgId, id);
  if (!now) throw notFound('Query');
  throw invalidState(now);
}

export async function approveQuery(ctx: AuthContext, id: string, note: string | undefined) {
  const q = await reviewable(ctx, id);
  const conn = await connectionStore.get(ctx.orgId, q.connectionId);
  if (!conn) throw notFound('Connection');
  if (!conn.isActive) throw inactive(conn);
  // Classified again against the connection as it is now (its type or readOnly may have changed).
  const c = await classify(conn.type, q.query);
  await assertWritable(conn, c);
  const nowText = nowIso();
  const won = await pendingStore.leavePending(ctx.orgId, id, 'APPROVED', nowText, {
    reviewedBy: ctx.userId,
    reviewNote: note ?? null,
    reviewedAt: nowText,
    execution: 'RUNNING',
  });
  if (!won) return lostRace(ctx, id);
  count('approvals', { outcome: 'approved' });
  try {
    const { result, record: done } = await execute(conn, won, c.kind);
    await record(done, 'query.approved', {
      reviewedBy: ctx.userId,
      execution: 'SUCCEEDED',
      rowCount: result.rowCount,
      ...(c.kind === 'write' ? { rowsAffected: result.rowsAffected } : {}),
    });
    return { id, status: 'APPROVED' as const, reviewedBy: ctx.userId, reviewNote: note ?? null, result };
  } catch (e) {
    await record(won, 'query.approved', {
      reviewedBy: ctx.userId,
      execution: 'FAILED',
      errorCode: errorOf(e).code,
    });
    throw e;
  }
}

export async function rejectQuery(ctx: AuthContext, id: string, note: string | undefined) {
  await reviewable(ctx, id);
  const nowText = nowIso();
  const done = await pendingStore.leavePending(ctx.orgId, id, 'REJECTED', nowText, {
    reviewedBy: ctx.userId,
    reviewNote: note ?? null,
    reviewedAt: nowText,
  });
  if (!done) return lostRace(ctx, id);
  count('approvals', { outcome: 'rejected' });
  await record(done, 'query.rejected', { reviewedBy: ctx.userId, reviewNote: done.reviewNote });
  return {
    id,
    status: 'REJECTED' as const,
    reviewedBy: ctx.userId,
    reviewNote: done.reviewNote,
    result: null,
  };
}

/**
 * The periodic sweep: stores EXPIRED on every PENDING query past its expiresAt (one conditional write
 * each, so `query.expired` is recorded at most once per query) and drops the expiry markers it handled.
 */
export async function sweepExpired(
  now = new Date(),
  batch = 200,
): Promise<{ expired: number; checked: number }> {
  const nowText = now.toISOString();
  let expired = 0;
  let checked = 0;
  for (;;) {
    const due = await pendingStore.dueMarkers(nowText, batch);
    for (const m of due) {
      checked++;
      const q = await pendingStore.get(m.orgId, m.id);
      if (q?.status === 'PENDING') {
        const done = await pendingStore.leavePending(m.orgId, m.id, 'EXPIRED', nowText, {
          expiredAt: nowText,
        });
        if (done) {
          expired++;
          count('approvals', { outcome: 'expired' });
          await record(done, 'query.expired', { expiredAt: nowText });
        }
      }
      await pendingStore.deleteMarker(m.orgId, m.id);
    }
    if (due.length < batch) break;
  }
  if (checked) logger().info('approval expiry sweep', { checked, expired });
  return { expired, checked };
}

// --- Approval rules (admin) ---

type Issue = { path: string; message: string; code: string };

/** Approvers must be active users of the organization; connectionId must be a connection of it (404). */
async function checkRule(
  orgId: string,
  approvers: string[] | undefined,
  connectionId: string | null | undefined,
) {
  if (approvers) {
    const users = new Set((await authStore.listUsers(orgId)).map((u) => u.id));
    const issues: Issue[] = [];
    approvers.forEach((a, i) => {
      if (!users.has(a))
        issues.push({
          path: `body.approvers.${i}`,
          message: 'not an active user of this organization',
          code: 'custom',
        });
    });
    if (issues.length)
      throw validationError('Every approver must be an active user of the organization.', { issues });
  }
  if (connectionId) {
    const conn = await connectionStore.get(orgId, connectionId);
    if (!conn)
      throw new AppError(404, 'NOT_FOUND', 'Connection not found.', {
        path: 'body.connectionId',
      });
  }
}

const unique = (xs: string[]) => [...new Set(xs)];

export async function listRules(ctx: AuthContext, q: PageQuery) {
  return pageOf((await ruleStore.list(ctx.orgId)).map(ruleView), q);
}

export async function getRule(ctx: AuthContext, id: string) {
  const r = await ruleStore.get(ctx.orgId, id);
  if (!r) throw notFound('Approval rule');
  return ruleView(r);
}

export async function createRule(ctx: AuthContext, input: z.output<typeof ApprovalRuleCreate>) {
  const approvers = unique(input.approvers);
  await checkRule(ctx.orgId, approvers, input.connectionId);
  const now = nowIso();
  const r: ApprovalRuleRecord = {
    id: newId(),
    orgId: ctx.orgId,
    connectionId: input.connectionId ?? null,
    scope: input.scope,
    approvers,
    isActive: true,
    createdBy: ctx.userId,
    createdAt: now,
    updatedAt: now,
  };
  await ruleStore.put(r);
  return ruleView(r);
}

export async function updateRule(ctx: AuthContext, id: string, input: z.output<typeof ApprovalRuleUpdate>) {
  if (!(await ruleStore.get(ctx.orgId, id))) throw notFound('Approval rule');
  const approvers = input.approvers ? unique(input.approvers) : undefined;
  await checkRule(ctx.orgId, approvers, input.connectionId);
  const updated = await ruleStore.update(ctx.orgId, id, {
    approvers,
    scope: input.scope,
    isActive: input.isActive,
    connectionId: input.connectionId,
    updatedAt: nowIso(),
  });
  if (!updated) throw notFound('Approval rule');
  return ruleView(updated);
}

export async function deleteRule(ctx: AuthContext, id: string) {
  if (!(await ruleStore.delete(ctx.orgId, id))) throw notFound('Approval rule');
  return { deleted: true as const };
}
