/**
 * runReadOnly: the one path by which a statement reaches a database outside approved queries.
 * guard (guard/read.ts, before any connection is opened) → pooled driver → query under the
 * statement timeout, row cap and byte cap, inside a read-only transaction or session.
 * Failures become AppErrors: 504 QUERY_TIMEOUT, 422 QUERY_FAILED (the database's message, details
 * {code, position?}), 422 CONNECTION_FAILED (details.diagnosis).
 */

import {
  assertPgCallsAllowed,
  type CatalogCheck,
  type CatalogQuery,
  pgReadCheck,
} from '../guard/postgres-catalog';
import { type PgReadSafety, pgReadMode, pgReadSafety } from '../guard/postgres-escapes';
import type { PgCalls, PgName } from '../guard/postgres-grammar';
import { lockRelationsSql } from '../guard/postgres-locks';
import { classifyStatement, verifyRead } from '../guard/read';
import { AppError, validationError } from '../platform/errors';
import {
  connectionStages,
  databaseUnavailable,
  diagnose,
  factsOf,
  isServerShutdown,
  sanitize,
} from './diagnosis';
import { dbDeadlines } from './drivers/deadline';
import { driverFor } from './drivers/index';
import type { ConnectionTarget, QueryOptions, QueryResult } from './drivers/types';
import { judgedCalls, judgeReads, type ReadCover, type ReadJudgement } from './read-set';

export const QUERY_DEFAULTS = {
  maxRows: 1000,
  maxRowsCap: 10_000,
  maxBytes: 5 * 1024 * 1024,
} as const;

export function resolveOptions(opts: Partial<QueryOptions>): QueryOptions {
  const maxRows = opts.maxRows ?? QUERY_DEFAULTS.maxRows;
  if (!Number.isInteger(maxRows) || maxRows < 1 || maxRows > QUERY_DEFAULTS.maxRowsCap)
    throw validationError(`maxRows must be an integer from 1 to ${QUERY_DEFAULTS.maxRowsCap}.`);
  // Default: the configured statement timeout (LOUPE_DB_STATEMENT_TIMEOUT_MS, at most 25 s).
  const timeoutMs = opts.timeoutMs ?? dbDeadlines().statementMs;
  if (!Number.isFinite(timeoutMs) || timeoutMs < 1)
    throw validationError('timeoutMs must be a positive number.');
  const maxBytes = opts.maxBytes ?? QUERY_DEFAULTS.maxBytes;
  if (!Number.isFinite(maxBytes) || maxBytes < 1)
    throw validationError('maxBytes must be a positive number.');
  if (opts.params !== undefined && !Array.isArray(opts.params))
    throw validationError('params must be an array.');
  return { ...opts, maxRows, timeoutMs, maxBytes };
}

/**
 * How many times a read may run: its catalog check can fail because the server was written to (the
 * next check computes the digest), then because the catalog changed (judged again), then once more.
 */
const CATALOG_ATTEMPTS = 4;

/**
 * `cover`: the names the read was judged on with others (judgeReadSet); used only when it holds every
 * name of this statement (read-set.ts: the monotone subset rule), the statement's own otherwise.
 */
export async function runReadOnly(
  target: ConnectionTarget,
  text: string,
  opts: Partial<QueryOptions> = {},
  cover?: ReadCover,
): Promise<QueryResult> {
  const statement = await verifyRead(target.type, text, { allowedFunctions: target.allowedFunctions });
  const options = {
    ...resolveOptions(opts),
    readOnly: true,
    kind: statement.kind,
    leavesNoSessionState: runsOnlyReviewedCode(target),
  };
  // One deadline for the whole read: the function rule's catalog lookups (PostgreSQL) spend from it.
  const deadline = Date.now() + options.timeoutMs;
  const left = () => Math.max(1, deadline - Date.now());
  if (!statement.pg) return runChecked(target, text, { ...options, timeoutMs: left() });
  const query: CatalogQuery = (sql, o) =>
    catalogRead(target, sql, { ...o, timeoutMs: Math.min(o.timeoutMs ?? left(), left()) });
  for (let attempt = 1; ; attempt++) {
    // Open mode (the role reaches no escape, guard/postgres-escapes.ts): PostgreSQL's read-only
    // transaction is the guarantee; the read's own check only confirms that the inventory still stands,
    // and the session is reset after it (owner code may have taken an advisory lock). Strict mode: the
    // function rule (guard/postgres-catalog.ts); a remembered verdict costs no query here, the read's own
    // transaction checks the catalog and fails before the statement when it changed.
    const mode = await pgReadMode(target, query);
    const check =
      mode.mode === 'open'
        ? mode.check
        : lockedFirst(
            await pgReadCheck(target, judgedCalls(statement.pg, cover), query),
            statement.pg.relations,
          );
    const leavesNoSessionState = mode.mode === 'open' ? false : options.leavesNoSessionState;
    try {
      return await runChecked(
        target,
        text,
        {
          ...options,
          leavesNoSessionState,
          lightReset: mode.mode === 'open',
          timeoutMs: left(),
          preCheck: check,
        },
        (e) => check?.changed(e),
      );
    } catch (e) {
      if (!(e instanceof CatalogChanged)) throw e;
      if (attempt >= CATALOG_ATTEMPTS)
        throw new AppError(
          422,
          'QUERY_FAILED',
          "The database's catalog kept changing while the statement was being checked; run it again.",
          { code: 'CATALOG_CHANGED' },
        );
    }
  }
}

/**
 * What a PostgreSQL connection's role can reach beyond a read-only transaction, and so the mode its
 * reads run in (guard/postgres-escapes.ts); `fresh` finds it again now instead of the remembered one.
 */
export function readSafety(target: ConnectionTarget, opts: { fresh?: boolean } = {}): Promise<PgReadSafety> {
  const { statementMs } = dbDeadlines();
  return pgReadSafety(
    target,
    (sql, o) =>
      catalogRead(target, sql, { ...o, timeoutMs: Math.min(o.timeoutMs ?? statementMs, statementMs) }),
    opts,
  );
}

/**
 * Strict mode: the relations the statement names are locked (ACCESS SHARE) before the catalog check, so
 * that nothing they run can be replaced between the check and the statement (guard/postgres-locks.ts).
 */
function lockedFirst(
  check: CatalogCheck | undefined,
  relations: readonly PgName[],
): CatalogCheck | undefined {
  const lock = check && lockRelationsSql(relations);
  return check && lock ? { ...check, sql: `${lock}; ${check.sql}` } : check;
}

/** The read's catalog check failed (the server was written to, or its catalog changed): the statement did not run. */
class CatalogChanged extends Error {}

/**
 * Judges several reads of `target` ahead of running them (read-set.ts): on PostgreSQL, few catalog
 * lookups for all (one when all are allowed), each spending from one deadline of `timeoutMs`. Pass a
 * judgement's `cover` to runReadOnly; a refused statement need not be run.
 */
export function judgeReadSet(
  target: ConnectionTarget,
  texts: string[],
  opts: { timeoutMs: number },
): Promise<ReadJudgement[]> {
  const deadline = Date.now() + opts.timeoutMs;
  const left = () => Math.max(1, deadline - Date.now());
  const query: CatalogQuery = (sql, o) =>
    catalogRead(target, sql, { ...o, timeoutMs: Math.min(o.timeoutMs ?? left(), left()) });
  return judgeReads(target, texts, async (calls: PgCalls) => {
    // Open mode: every read is allowed (nothing it runs can escape the read-only transaction).
    if ((await pgReadMode(target, query)).mode === 'open') return;
    await assertPgCallsAllowed(target, calls, query);
  });
}

/**
 * classifyStatement with the connection's function rule applied too: a read calling a function the
 * connection does not allow (PostgreSQL: not a built-in, a reviewed extension function or listed; MySQL/MariaDB, SQL Server:
 * not in allowedFunctions) is classified 'write' with statementType FUNCTION, since runReadOnly
 * would refuse it. Connection failures of the catalog lookup are thrown as runReadOnly would.
 */
export async function classifyOnConnection(
  target: ConnectionTarget,
  text: string,
): Promise<{ kind: 'read' | 'write'; statementType: string }> {
  const verdict = await classifyStatement(target.type, text, { allowedFunctions: target.allowedFunctions });
  if (verdict.kind !== 'read' || target.type !== 'POSTGRES') return verdict;
  const statement = await verifyRead(target.type, text);
  if (!statement.pg) return verdict;
  const query: CatalogQuery = (sql, o) => catalogRead(target, sql, o);
  try {
    if ((await pgReadMode(target, query)).mode === 'open') return verdict;
    await assertPgCallsAllowed(target, statement.pg, query);
  } catch (e) {
    if (e instanceof AppError && e.code === 'READ_ONLY_VIOLATION')
      return { kind: 'write', statementType: 'FUNCTION' };
    throw e;
  }
  return verdict;
}

/**
 * True when a read of this connection can run only reviewed built-in code: the guard admits code the
 * database owner wrote (a function, or code run implicitly by a view, domain, cast, policy or operator)
 * only when the connection's admin listed it in allowedFunctions. Reviewed built-ins cannot leave session
 * state past the read's ROLLBACK (those that could, such as pg_advisory_lock, set_config or dblink, are
 * refused by name), so the PostgreSQL adapter skips its DISCARD ALL (docs/internals/database-sessions.md).
 */
export const runsOnlyReviewedCode = (target: Pick<ConnectionTarget, 'allowedFunctions'>) =>
  (target.allowedFunctions ?? []).length === 0;

/** The function rule's catalog lookup: one read of our own catalog SQL on the connection's read-only path. */
function catalogRead(
  target: ConnectionTarget,
  text: string,
  opts: Partial<QueryOptions>,
): Promise<QueryResult> {
  return runChecked(target, text, {
    ...resolveOptions(opts),
    readOnly: true,
    kind: 'select',
    leavesNoSessionState: true,
    ownQuery: true,
  });
}

async function runChecked(
  target: ConnectionTarget,
  text: string,
  options: QueryOptions,
  catalogChanged?: (e: unknown) => boolean | undefined,
): Promise<QueryResult> {
  let driver: Awaited<ReturnType<typeof driverFor>>;
  try {
    driver = await driverFor(target);
  } catch (e) {
    throw queryError(e, target, options);
  }
  try {
    return await driver.query(text, options);
  } catch (e) {
    if (catalogChanged?.(e)) throw new CatalogChanged();
    throw queryError(e, target, options);
  }
}

const timeoutCodes = new Set([
  'LOUPE_QUERY_TIMEOUT',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_STATEMENT_TIMEOUT',
  'ER_QUERY_TIMEOUT',
  'MaxTimeMSExpired',
]);

/** True when the failure is the statement running out of time (not the connection attempt). */
export function isQueryTimeout(error: unknown): boolean {
  const f = factsOf(error);
  const msg = f.messages.join(' | ');
  if ([...f.codes].some((c) => timeoutCodes.has(c))) return true;
  if (f.numbers.has(1969) || f.numbers.has(3024)) return true;
  if (f.codes.has('57014') && /statement timeout|canceling statement/i.test(msg)) return true;
  if (/Query read timeout/i.test(msg)) return true;
  // mssql: a RequestError with ETIMEOUT is the request timeout (a ConnectionError ETIMEOUT is the connect timeout).
  const e = error as { name?: string; code?: string };
  if (e?.name === 'RequestError' && e.code === 'ETIMEOUT') return true;
  if (
    /interrupted|max_statement_time|max_execution_time/i.test(msg) &&
    (f.numbers.has(1317) || f.numbers.has(3024))
  )
    return true;
  return false;
}

export function queryError(
  error: unknown,
  target: ConnectionTarget,
  options: Pick<QueryOptions, 'timeoutMs'>,
): AppError {
  if (error instanceof AppError) return error;
  if (isQueryTimeout(error))
    return new AppError(
      504,
      'QUERY_TIMEOUT',
      `The query did not finish within ${Math.round(options.timeoutMs / 1000)} s and was cancelled. Narrow it (filters, LIMIT, aggregates) or add an index.`,
      { timeoutMs: options.timeoutMs },
    );
  if (isServerShutdown(error)) return databaseUnavailable(error, target);
  const diagnosis = diagnose(error, target, 'QUERY');
  const raw = error instanceof Error ? error.message : String(error);
  if (connectionStages.has(diagnosis.stage) && diagnosis.fault !== 'us')
    return new AppError(422, 'CONNECTION_FAILED', `${diagnosis.title}: ${sanitize(raw, target)}`, {
      diagnosis,
    });
  const e = error as {
    code?: unknown;
    number?: unknown;
    errno?: unknown;
    position?: unknown;
    codeName?: unknown;
  };
  const code =
    typeof e?.number === 'number' && e.number > 0
      ? String(e.number)
      : typeof e?.code === 'string' || typeof e?.code === 'number'
        ? String(e.code)
        : typeof e?.errno === 'number'
          ? String(e.errno)
          : 'UNKNOWN';
  const position =
    typeof e?.position === 'string' || typeof e?.position === 'number' ? Number(e.position) : undefined;
  return new AppError(422, 'QUERY_FAILED', `The database rejected the statement: ${sanitize(raw, target)}`, {
    code,
    ...(position !== undefined && Number.isFinite(position) ? { position } : {}),
    ...(typeof e?.codeName === 'string' ? { codeName: e.codeName } : {}),
  });
}
