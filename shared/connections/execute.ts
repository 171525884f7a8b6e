import { type AuthContext, assertConnectionVisible } from '../auth/context';
import type { DbType, QueryResult } from '../databases/drivers/types';
import { config } from '../platform/config';
import { AppError, isAppError, notFound, validationError } from '../platform/errors';
import { loadConnection } from './connections';
import { claimQueryNumber, type QueryStatus, queryRecordAt } from './history';
import { targetFor } from './target';

/** The drivers, the SQL guard and error diagnosis load with the first query, not at a cold start. */
let runModule: Promise<typeof import('../databases/run')> | undefined;
const run = () => (runModule ??= import('../databases/run'));

export interface ExecuteInput {
  /** SQL text, or for MONGODB a JSON query string (decisions.md §3). */
  sql: string;
  /** Positional driver parameters ($1 for POSTGRES, ? for MYSQL/MARIADB/SQLITE, @p1 for MSSQL). */
  params?: unknown[];
  /** Default 1000, max 10000. */
  maxRows?: number;
  /** Stored in query history. */
  question?: string;
  /**
   * The statement as the user wrote it, for query history, when it differs from the one run (a saved
   * query's `{{placeholders}}`, bound as driver parameters or, for MongoDB, as JSON values).
   */
  writtenSql?: string;
  source: 'query' | 'widget' | 'saved_query' | 'metric' | 'chat' | 'workflow' | 'mcp';
}

export const MAX_SQL_CHARS = 100_000;
export const DEFAULT_MAX_ROWS = 1000;
export const MAX_ROWS = 10_000;
export const MAX_RESULT_BYTES = 5 * 1024 * 1024;

const statusOf = (e: unknown): QueryStatus => {
  if (isAppError(e) && e.code === 'READ_ONLY_VIOLATION') return 'REJECTED';
  if (isAppError(e) && e.code === 'QUERY_TIMEOUT') return 'TIMEOUT';
  return 'FAILED';
};

/**
 * Runs one read-only statement on a connection the caller may use.
 * 400 on bad input; 404 if the connection is missing, in another org, or not visible to a member; 422
 * CONNECTION_INACTIVE when it is deactivated; 400 READ_ONLY_VIOLATION; 422 QUERY_FAILED (details: code,
 * position); 504 QUERY_TIMEOUT.
 * Store calls: the connection is read and its history number taken in one UpdateItem, after the input was
 * checked and only for an active connection (claimQueryNumber), and the history entry is written before
 * answering; every execution that got a number is recorded, whatever its outcome.
 */
export async function executeReadOnly(
  ctx: AuthContext,
  connectionId: string,
  input: ExecuteInput,
): Promise<QueryResult> {
  assertConnectionVisible(ctx, connectionId);
  if (input.sql.length > MAX_SQL_CHARS)
    throw validationError(`SQL text is limited to ${MAX_SQL_CHARS.toLocaleString('en-US')} characters.`);
  if (!input.sql.trim()) throw validationError('SQL text is empty.');
  const maxRows = input.maxRows ?? DEFAULT_MAX_ROWS;
  if (!Number.isInteger(maxRows) || maxRows < 1 || maxRows > MAX_ROWS)
    throw validationError(`maxRows must be an integer from 1 to ${MAX_ROWS}.`);
  const claim = await claimQueryNumber(ctx.orgId, connectionId, { activeOnly: true });
  const conn = claim.connection;
  if (!conn) throw notFound('Connection');
  if (claim.sequence === undefined)
    throw new AppError(
      422,
      'CONNECTION_INACTIVE',
      `Connection "${conn.name}" is inactive${conn.lastError ? ` (last error: ${conn.lastError})` : ''}. ` +
        'Test it with POST /connections/{id}/test, or set isActive to true, to use it again.',
      { connectionId, lastErrorDiagnosis: conn.lastErrorDiagnosis },
    );
  const record = queryRecordAt(ctx.orgId, connectionId, claim.sequence);
  const base = {
    connectionId,
    source: input.source,
    question: input.question ?? null,
    sql: input.writtenSql ?? input.sql,
    userId: ctx.userId,
  };
  try {
    const { runReadOnly } = await run();
    const result = await runReadOnly(await targetFor(conn), input.sql, {
      maxRows,
      maxBytes: MAX_RESULT_BYTES,
      // Connect and statement within LOUPE_DB_STATEMENT_TIMEOUT_MS (default 25 s; docs/internals/database-faults.md).
      timeoutMs: config().LOUPE_DB_STATEMENT_TIMEOUT_MS,
      params: input.params,
      readOnly: true,
    });
    await record.write({
      ...base,
      status: 'SUCCESS',
      rowCount: result.rowCount,
      executionTime: result.executionTime,
      truncated: !!result.truncated,
      error: null,
      errorCode: null,
    });
    return result;
  } catch (e) {
    await record.write({
      ...base,
      status: statusOf(e),
      rowCount: null,
      executionTime: null,
      truncated: false,
      error: isAppError(e) ? e.message : 'The query failed unexpectedly.',
      errorCode: isAppError(e) ? e.code : 'INTERNAL_ERROR',
    });
    throw e;
  }
}

/** The sanitized connection (no secrets) after the same visibility check (404 otherwise). */
export async function connectionForUse(
  ctx: AuthContext,
  connectionId: string,
): Promise<{
  id: string;
  name: string;
  type: DbType;
  database: string;
  isActive: boolean;
  readOnly: boolean;
  /** Stored functions the guard lets reads call (the save-time check uses them too). */
  allowedFunctions: string[];
}> {
  const c = await loadConnection(ctx, connectionId);
  return {
    id: c.id,
    name: c.name,
    type: c.type,
    database: c.database,
    isActive: c.isActive,
    readOnly: c.readOnly,
    allowedFunctions: c.allowedFunctions ?? [],
  };
}
