/**
 * The read-only guard's entry for reads (decisions.md §4): `verifyRead`. A statement may run only if
 * the real SQL parser for the connection's dialect finds exactly one statement and it is a read:
 * SELECT, WITH … SELECT, VALUES, EXPLAIN of a read, SHOW / DESCRIBE (MySQL, MariaDB; SHOW in
 * PostgreSQL), and a fixed set of read-only PRAGMAs on SQLite. Everything else is 400
 * READ_ONLY_VIOLATION naming the statement kind in `details.statementType`, before any connection is
 * opened. Text the parser cannot parse is refused with the same code (statementType `UNPARSEABLE`,
 * the parser's message in `details.reason`): if we cannot verify a statement we do not run it.
 *
 * Each dialect's whole check, from text to verdict, is its own module: postgres.ts (the server's own
 * grammar, libpg-query), mysql.ts (MySQL and MariaDB), mssql.ts, sqlite.ts, mongo.ts (MongoDB
 * queries are JSON). They share the token checks of sql-text.ts (the text under every interpretation
 * the server might apply: stacked statements, MySQL executable comments, SELECT … INTO, locking
 * reads, assignments, write keywords anywhere, denied functions), node-parser.ts (node-sql-parser)
 * and sqlparser.ts (sqlparser-rs). Function calls follow the allow-list rule of functions.ts: by
 * name here (allowedFunctions for stored functions), and for PostgreSQL also against the connection's
 * catalog (postgres-catalog.ts), applied by runReadOnly (databases/run.ts).
 */
import { AppError, validationError } from '../platform/errors';
import type { DbType } from './dialect';
import { readOnlyViolation } from './errors';
import { otherFunctionProblem } from './functions';
import { parseMongoQuery } from './mongo';
import { mssql } from './mssql';
import { mysqlCheck } from './mysql';
import { postgres } from './postgres';
import type { PgFunctionCall } from './postgres-grammar';
import { functionDialect } from './sql-text';
import { sqlite } from './sqlite';
import { loadSqlparser, sqlparserLoaded } from './sqlparser';
import type { DialectCheck, GuardOptions, ReadStatement, VerifiedRead } from './verdict';

export type { ReadKind } from './verdict';
export type { GuardOptions, PgFunctionCall, ReadStatement, VerifiedRead };
export { readOnlyViolation };

/** Each SQL dialect's check (MongoDB's is parseMongoQuery). */
const checks: Record<Exclude<DbType, 'MONGODB'>, DialectCheck> = {
  POSTGRES: postgres,
  MYSQL: mysqlCheck('MYSQL'),
  MARIADB: mysqlCheck('MARIADB'),
  MSSQL: mssql,
  SQLITE: sqlite,
};

/** The function rule's dialect of each SQL type other than PostgreSQL. */
const callDialect = {
  MYSQL: functionDialect.mysql,
  MARIADB: functionDialect.mysql,
  MSSQL: functionDialect.mssql,
  SQLITE: functionDialect.sqlite,
} as const;

/**
 * Statements this instance already verified as reads, by type and text (the guard depends on nothing
 * else), so that a repeated statement (dashboards, saved queries, polling clients) is not parsed again.
 * Only reads are kept; refusals are decided afresh. Bounded in entries and statement length.
 */
const verified = new Map<string, VerifiedRead>();
const MAX_VERIFIED = 500;
const MAX_VERIFIED_CHARS = 4000;

/**
 * Rejects with 400 READ_ONLY_VIOLATION unless `text` is exactly one read statement for `type`.
 * Returns what kind of read it is (drivers use it to pick a cursor or a plain query).
 * PostgreSQL functions are checked here only by name (the deny list); the catalog rule needs the
 * connection and is applied by runReadOnly (see verifyRead).
 */
export async function assertReadOnly(
  type: DbType,
  text: string,
  opts: GuardOptions = {},
): Promise<ReadStatement> {
  return { kind: (await verifyRead(type, text, opts)).kind };
}

/** assertReadOnly, returning the calls the connection-level function rule still has to check. */
export async function verifyRead(type: DbType, text: string, opts: GuardOptions = {}): Promise<VerifiedRead> {
  const memo = typeof text === 'string' && text.length <= MAX_VERIFIED_CHARS;
  // NUL separates the parts: a statement containing NUL is always refused, so keys never collide.
  const key = memo ? `${type}\u0000${text}` : '';
  let statement = memo ? verified.get(key) : undefined;
  if (!statement) {
    if (type !== 'MONGODB') await checks[type].load();
    try {
      statement = verify(type, text);
    } catch (e) {
      // node-sql-parser could not parse it: load the second grammar (once) and verify again.
      const unparseable =
        e instanceof AppError && (e.details as { statementType?: string })?.statementType === 'UNPARSEABLE';
      if (!unparseable || type === 'POSTGRES' || type === 'MONGODB' || sqlparserLoaded()) throw e;
      await loadSqlparser();
      statement = verify(type, text);
    }
    if (memo) {
      if (verified.size >= MAX_VERIFIED) verified.delete(verified.keys().next().value as string);
      verified.set(key, statement);
    }
  }
  if (statement.calls && type !== 'MONGODB' && type !== 'POSTGRES')
    for (const parts of statement.calls) {
      const problem = otherFunctionProblem(callDialect[type], parts, opts.allowedFunctions);
      if (problem) {
        const name = parts.join('.');
        throw readOnlyViolation(
          'FUNCTION',
          `The function ${name}() is not allowed in a read-only query (${problem}).`,
          {
            function: name,
          },
        );
      }
    }
  return statement;
}

/**
 * The statement's kind: 'read' when assertReadOnly accepts it, else 'write' (exactly one statement,
 * else the guard's 400). Without a connection the PostgreSQL catalog rule is not applied; use
 * classifyOnConnection (run.ts) where the connection is known.
 */
export async function classifyStatement(
  type: DbType,
  text: string,
  opts: GuardOptions = {},
): Promise<{ kind: 'read' | 'write'; statementType: string }> {
  try {
    const { kind } = await assertReadOnly(type, text, opts);
    return { kind: 'read', statementType: kind.toUpperCase() };
  } catch (e) {
    if (!(e instanceof AppError) || e.code !== 'READ_ONLY_VIOLATION') throw e;
    const statementType = String(
      (e.details as { statementType?: unknown } | undefined)?.statementType ?? 'UNKNOWN',
    );
    if (['MULTIPLE_STATEMENTS', 'UNPARSEABLE', 'EXECUTABLE_COMMENT', 'TOO_DEEP'].includes(statementType))
      throw e;
    return { kind: 'write', statementType };
  }
}

function verify(type: DbType, text: string): VerifiedRead {
  if (typeof text !== 'string' || text.trim() === '')
    throw validationError(type === 'MONGODB' ? 'The query is empty.' : 'The SQL statement is empty.');
  if (text.includes('\u0000'))
    throw readOnlyViolation('UNPARSEABLE', 'The statement contains a NUL character.');
  if (type === 'MONGODB') {
    parseMongoQuery(text);
    return { kind: 'mongo' };
  }
  return checks[type].check(text);
}
