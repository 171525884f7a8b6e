/**
 * The read-only guard (decisions.md §4). A statement may run only if the real SQL parser for the
 * connection's dialect finds exactly one statement and it is a read: SELECT,
 * WITH … SELECT, VALUES, EXPLAIN of a read, SHOW / DESCRIBE (MySQL, MariaDB; SHOW in PostgreSQL),
 * and a fixed set of read-only PRAGMAs on SQLite. Everything else is 400 READ_ONLY_VIOLATION
 * naming the statement kind in `details.statementType`, before any connection is opened.
 *
 * Text the parser cannot parse is refused with the same code (statementType `UNPARSEABLE`, the
 * parser's message in `details.reason`): if we cannot verify a statement we do not run it.
 *
 * Next to the parser, a dialect-aware tokenizer (sql-lexer.ts) checks the text under every
 * interpretation the server might apply, refusing: stacked statements, MySQL executable comments,
 * SELECT … INTO, locking reads, assignments, write keywords anywhere (data-modifying CTEs),
 * denied functions, and on SQL Server EXEC / WAITFOR / OPENROWSET-style remote access. (On
 * PostgreSQL the server's own grammar decides; the tokenizer adds the reading of strings with
 * standard_conforming_strings off.) MongoDB queries are JSON and checked in mongo-query.ts.
 *
 * Parsers: PostgreSQL is verified on the server's own grammar (libpg-query, guard/pg.ts); SQLite on
 * sqlparser-rs first and node-sql-parser second; MySQL, MariaDB and SQL Server on node-sql-parser
 * first and sqlparser-rs second (guard/sqlparser.ts). SQL Server needs no `;` between statements,
 * so there sqlparser-rs, whose tree keeps quoting, also checks every read for a reserved word
 * written bare (no AS, no brackets) and read as an alias, where the server starts another statement
 * (guard/tsql-reserved.ts); and every sqlparser-rs reading must reach the end of the text
 * (guard/one-statement.ts). Function calls
 * follow the allow-list rule of guard/functions.ts: by name here (allowedFunctions for stored
 * functions), and for PostgreSQL also against the connection's catalog (guard/pg-catalog.ts),
 * applied by runReadOnly (run.ts).
 */
import { AppError, validationError } from '../platform/errors';
import type { DbType } from './dialect';
import { multipleStatements as multiple, readOnlyViolation } from './errors';
import { isOtherDenied, type OtherDialect, otherFunctionProblem, pgDenied } from './functions';
import { type Dialect, interpretations, type LexResult, lex, type Token } from './lexer';
import { parseMongoQuery } from './mongo';
import { oneSqlparserStatement } from './one-statement';
import { checkPostgres, loadPgParser, type PgCalls, type PgFunctionCall } from './pg';
import { checkWithSqlparser, loadSqlparser, sqlparserLoaded } from './sqlparser';
import { assertNoReservedNspAlias } from './tsql-reserved';

export type { PgFunctionCall };
export { readOnlyViolation };

export type ReadKind = 'select' | 'values' | 'explain' | 'show' | 'describe' | 'pragma' | 'mongo';

export interface ReadStatement {
  kind: ReadKind;
}

/** What the guard verified, with the calls the function rule still has to check per connection. */
export interface VerifiedRead extends ReadStatement {
  /** PostgreSQL: functions, operators and field names for the catalog check (guard/pg-catalog.ts). */
  pg?: PgCalls;
  /** Other SQL dialects: every called function's name parts (schema first), lower-cased. */
  calls?: string[][];
}

export interface GuardOptions {
  /** Stored functions the connection's admin allows (MySQL/MariaDB, SQL Server). */
  allowedFunctions?: readonly string[];
}

const dialectOf: Record<Exclude<DbType, 'MONGODB'>, Dialect> = {
  POSTGRES: 'pg',
  MYSQL: 'mysql',
  MARIADB: 'mysql',
  MSSQL: 'mssql',
  SQLITE: 'sqlite',
};

const parserDatabase: Record<Exclude<DbType, 'MONGODB'>, string> = {
  POSTGRES: 'PostgresQL',
  MYSQL: 'MySQL',
  MARIADB: 'MariaDB',
  MSSQL: 'TransactSQL',
  SQLITE: 'Sqlite',
};

type Parser = { astify(sql: string, opt: { database: string }): unknown };
type ParserModule = { Parser: new () => Parser };
/**
 * Each dialect's parser is large (~250 KB minified each), so it is imported on first use: a function
 * bundle loads none of them at start (esbuild puts each in its own lazy chunk) and then only the
 * dialects its requests need.
 */
const parserModules: Record<Exclude<DbType, 'MONGODB' | 'POSTGRES'>, () => Promise<unknown>> = {
  MYSQL: () => import('node-sql-parser/build/mysql'),
  MARIADB: () => import('node-sql-parser/build/mariadb'),
  MSSQL: () => import('node-sql-parser/build/transactsql'),
  SQLITE: () => import('node-sql-parser/build/sqlite'),
};
const parsers = new Map<DbType, Parser>();

/** Loads (once) the parser of `type`'s dialect so the synchronous checks below can use it. */
async function loadParser(type: Exclude<DbType, 'MONGODB'>): Promise<void> {
  if (type === 'POSTGRES') return loadPgParser();
  if (sqlparserFirst.has(type) || type === 'MSSQL') await loadSqlparser();
  if (parsers.has(type)) return;
  const mod = (await parserModules[type]()) as ParserModule & { default?: ParserModule };
  const Ctor = mod.Parser ?? mod.default?.Parser;
  if (!parsers.has(type)) parsers.set(type, new Ctor());
}

/**
 * Dialects verified by sqlparser-rs first and node-sql-parser only when it cannot parse: SQLite,
 * where node-sql-parser rejects window functions and more (23% of the corpus' valid reads) and
 * sqlparser-rs is also faster (median 0.22 vs 0.35 ms per statement here). The other dialects keep
 * node-sql-parser first (no corpus read refused) with sqlparser-rs as the second grammar.
 */
const sqlparserFirst = new Set<DbType>(['SQLITE']);

const parserFor = (type: Exclude<DbType, 'MONGODB'>): Parser => {
  const p = parsers.get(type);
  if (!p) throw new Error(`The ${parserDatabase[type]} parser is not loaded.`);
  return p;
};

const functionDialect: Record<Exclude<Dialect, 'pg'>, OtherDialect> = {
  mysql: 'mysql',
  mssql: 'mssql',
  sqlite: 'sqlite',
};

/** Refuses a call on a name no read may call, whatever the connection allows (token-level check). */
function assertNotDenied(dialect: Dialect, name: string): void {
  const problem =
    dialect === 'pg'
      ? pgDenied(name)
      : isOtherDenied(functionDialect[dialect], name)
        ? 'it sleeps, locks, reads files or runs text the guard cannot verify'
        : undefined;
  if (problem)
    throw readOnlyViolation(
      'FUNCTION',
      `The function ${name}() is not allowed in a read-only query (${problem}).`,
      {
        function: name,
      },
    );
}

/**
 * Unquoted keywords that never appear inside a read (outside function calls such as REPLACE()):
 * they reveal a data-modifying WITH clause or a statement hidden from the parser.
 */
const writeKeywords = new Set([
  'INSERT',
  'UPDATE',
  'DELETE',
  'MERGE',
  'UPSERT',
  'TRUNCATE',
  'DROP',
  'CREATE',
  'ALTER',
  'GRANT',
  'REVOKE',
  'EXEC',
  'EXECUTE',
  'WAITFOR',
  'DECLARE',
  'CALL',
]);

const readLeaders = new Set([
  'SELECT',
  'WITH',
  'VALUES',
  'EXPLAIN',
  'SHOW',
  'DESCRIBE',
  'DESC',
  'PRAGMA',
  'TABLE',
]);

const mssqlLockHints = new Set(['UPDLOCK', 'XLOCK', 'HOLDLOCK', 'TABLOCK', 'TABLOCKX', 'PAGLOCK']);

/** SQLite pragmas that only report (in their query form, without `=`). */
const readPragmas = new Set([
  'table_info',
  'table_xinfo',
  'table_list',
  'index_list',
  'index_info',
  'index_xinfo',
  'foreign_key_list',
  'database_list',
  'collation_list',
  'function_list',
  'module_list',
  'pragma_list',
  'compile_options',
  'page_count',
  'page_size',
  'freelist_count',
  'encoding',
  'user_version',
  'schema_version',
  'application_id',
  'data_version',
]);

const describe = (kind: string) => kind.toUpperCase().replace(/_/g, ' ');

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
    if (type !== 'MONGODB') await loadParser(type);
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
      const problem = otherFunctionProblem(
        functionDialect[dialectOf[type] as Exclude<Dialect, 'pg'>],
        parts,
        opts.allowedFunctions,
      );
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
  return checkSql(type, text, 0);
}

function checkSql(type: Exclude<DbType, 'MONGODB'>, text: string, depth: number): VerifiedRead {
  const dialect = dialectOf[type];
  const readings = interpretations(dialect).map((opts) => lex(text, opts));
  if (readings.some((r) => r.executableComment))
    throw readOnlyViolation(
      'EXECUTABLE_COMMENT',
      'MySQL executable comments (/*! … */) are not allowed: the server runs their contents.',
    );
  if (readings[0].unterminated)
    throw readOnlyViolation(
      'UNPARSEABLE',
      'The statement has an unterminated string, identifier or comment.',
    );
  const tokens = readings[0].tokens;
  if (tokens.length === 0) throw validationError('The SQL statement is empty (only comments).');
  const lead = tokens.find((t) => !(t.kind === 'punct' && t.value === '('));
  const first = lead?.kind === 'word' ? lead.value.toUpperCase() : undefined;
  if (!first || !readLeaders.has(first)) throw notARead(first ?? 'UNKNOWN');
  if (dialect === 'pg') return checkPg(text, readings, first);
  // EXPLAIN checks the explained statement (tokens and parse) on its own.
  if (first === 'EXPLAIN' || ((first === 'DESCRIBE' || first === 'DESC') && dialect === 'mysql'))
    return explain(type, dialect, text, readings, depth);
  for (const r of readings) checkTokens(dialect, r.tokens);
  if (first === 'PRAGMA') return pragma(dialect, tokens);
  if (first === 'TABLE')
    throw readOnlyViolation('TABLE', 'Write the TABLE shorthand as SELECT * FROM … so it can be verified.');

  const viaSqlparser = (): VerifiedRead => {
    const read = checkWithSqlparser(dialect, text);
    for (const parts of read.calls) assertNotDenied(dialect, parts[parts.length - 1]);
    return read;
  };
  if (sqlparserFirst.has(type) && sqlparserLoaded())
    try {
      return viaSqlparser();
    } catch (e) {
      // Refusals stand; a statement sqlparser-rs cannot parse goes to node-sql-parser.
      if (e instanceof AppError) throw e;
    }
  let asts: unknown[];
  try {
    asts = parse(type, first === 'VALUES' ? valuesWrapper(type, text) : text);
  } catch (e) {
    if (!sqlparserLoaded() || sqlparserFirst.has(type)) throw e;
    try {
      return viaSqlparser();
    } catch (e2) {
      if (e2 instanceof AppError) throw e2;
      throw e;
    }
  }
  if (asts.length !== 1) throw multiple();
  const ast = asts[0] as Record<string, unknown>;
  if (dialect === 'mssql') assertOneMssqlStatement(text, ast, tokens);
  const kind = String(ast.type ?? 'unknown');
  if (first === 'VALUES') {
    // The wrapper parsed; only the VALUES rows are the user's text.
    const values = type === 'SQLITE' ? ast.values : ast;
    if (kind !== (type === 'SQLITE' ? 'insert' : 'select')) throw notARead(kind);
    const calls: string[][] = [];
    walk(dialect, values, calls, 0);
    return { kind: 'values', calls };
  }
  if (kind === 'select') {
    const calls: string[][] = [];
    walk(dialect, ast, calls, 0);
    return { kind: 'select', calls };
  }
  if (kind === 'show') return { kind: 'show' };
  if (kind === 'desc') return { kind: 'describe' };
  throw notARead(kind);
}

/**
 * SQL Server needs no `;` between statements, and node-sql-parser's tree keeps no quoting, so where
 * the statement ends is read on sqlparser-rs's tree too: one statement, read to the end, no bare
 * reserved word as an alias (guard/one-statement.ts). Text sqlparser-rs cannot parse is held to the
 * stricter check on node-sql-parser's aliases (guard/tsql-reserved.ts).
 */
function assertOneMssqlStatement(text: string, ast: unknown, tokens: Token[]): void {
  try {
    oneSqlparserStatement('mssql', text);
  } catch (e) {
    if (e instanceof AppError) throw e;
    assertNoReservedNspAlias(ast, tokens);
  }
}

const sameTokens = (a: Token[], b: Token[]) =>
  a.length === b.length && a.every((t, i) => t.kind === b[i].kind && t.value === b[i].value);

/**
 * PostgreSQL: the server's grammar decides (guard/pg.ts). The parser reads strings as the server
 * does with standard_conforming_strings on (the default); where the text reads differently with it
 * off (a backslash in a '…' string), the other reading must also pass the token checks, and every
 * call it shows joins the function rule.
 */
function checkPg(text: string, readings: LexResult[], first: string): VerifiedRead {
  if (first === 'PRAGMA') return pragma('pg', readings[0].tokens);
  const extra: PgFunctionCall[] = [];
  for (const r of readings.slice(1)) {
    if (sameTokens(r.tokens, readings[0].tokens)) continue;
    checkTokens('pg', r.tokens);
    r.tokens.forEach((t, i) => {
      const next = r.tokens[i + 1];
      if ((t.kind === 'word' || t.kind === 'quoted') && next?.kind === 'punct' && next.value === '(')
        extra.push({ name: t.kind === 'word' ? t.value.toLowerCase() : t.value });
    });
  }
  const read = checkPostgres(text);
  for (const f of extra) assertNotDenied('pg', f.name);
  return {
    kind: read.kind,
    pg: {
      functions: [...read.functions, ...extra],
      operators: read.operators,
      attributes: read.attributes,
      casts: read.casts,
    },
  };
}

const article = (w: string) => (/^[AEIOU]/i.test(w) ? 'an' : 'a');
const notARead = (kind: string) =>
  readOnlyViolation(
    kind.toUpperCase(),
    `Only read statements can run here; this is ${article(kind)} ${describe(kind)} statement.`,
  );

/**
 * node-sql-parser has no bare VALUES statement; it parses VALUES rows as a subquery
 * (PostgreSQL, MySQL, MariaDB) or, for SQLite, only as INSERT rows. The wrapper is parsed,
 * never run; the user's text runs as written.
 */
function valuesWrapper(type: Exclude<DbType, 'MONGODB'>, text: string): string {
  const body = text.trim().replace(/;+\s*$/, '');
  if (type === 'SQLITE') return `INSERT INTO loupe_values ${body}`;
  return `SELECT * FROM (${body}) AS loupe_values`;
}

function parse(type: Exclude<DbType, 'MONGODB'>, text: string): unknown[] {
  try {
    const ast = parserFor(type).astify(text, { database: parserDatabase[type] });
    return (Array.isArray(ast) ? ast : [ast]).filter((a) => a != null);
  } catch (e) {
    const reason = (e instanceof Error ? e.message : String(e)).slice(0, 300);
    throw readOnlyViolation(
      'UNPARSEABLE',
      `The statement could not be verified as a single read: the ${parserDatabase[type]} parser rejected it (${reason}). Only statements the parser can verify are run.`,
      { reason },
    );
  }
}

function checkTokens(dialect: Dialect, tokens: Token[]): void {
  const semi = tokens.findIndex((t) => t.kind === 'punct' && t.value === ';');
  if (semi >= 0 && tokens.slice(semi).some((t) => !(t.kind === 'punct' && t.value === ';'))) throw multiple();
  tokens.forEach((t, i) => {
    const nextTok = tokens[i + 1];
    const prev = tokens[i - 1];
    const isCall = nextTok?.kind === 'punct' && nextTok.value === '(';
    if ((t.kind === 'word' || t.kind === 'quoted') && isCall) assertNotDenied(dialect, t.value.toLowerCase());
    if (t.kind === 'punct' && t.value === ':=')
      throw readOnlyViolation(
        'ASSIGNMENT',
        'Assignments to variables (:=) are not allowed in a read-only query.',
      );
    if (t.kind !== 'word') return;
    const w = t.value.toUpperCase();
    const afterDot = prev?.kind === 'punct' && prev.value === '.';
    if (afterDot) return;
    if (w === 'INTO')
      throw readOnlyViolation(
        'SELECT_INTO',
        'SELECT … INTO (a new table, a file or variables) is not allowed in a read-only query.',
      );
    if (w === 'FOR' && nextTok?.kind === 'word') {
      const n1 = nextTok.value.toUpperCase();
      const n2 = tokens[i + 2]?.value.toUpperCase();
      if (
        n1 === 'UPDATE' ||
        n1 === 'SHARE' ||
        (n1 === 'NO' && n2 === 'KEY') ||
        (n1 === 'KEY' && n2 === 'SHARE')
      )
        throw lockingRead();
    }
    if (w === 'LOCK' && nextTok?.value.toUpperCase() === 'IN') throw lockingRead();
    if (dialect === 'mssql' && mssqlLockHints.has(w)) throw lockingRead();
    if (writeKeywords.has(w) && !isCall) {
      const isFirst = tokens.slice(0, i).every((x) => x.kind === 'punct' && x.value === '(');
      if (isFirst) throw notARead(w);
      throw readOnlyViolation(
        w,
        `The statement contains ${w}, which writes or changes state; only reads can run here (this includes data-modifying WITH clauses).`,
      );
    }
  });
}

const lockingRead = () =>
  readOnlyViolation(
    'LOCKING_READ',
    'Locking reads (FOR UPDATE, FOR SHARE, LOCK IN SHARE MODE, lock hints) are not allowed in a read-only query.',
  );

/** EXPLAIN options of the dialects checked here (PostgreSQL's EXPLAIN is read from its parse tree). */
const explainOptions: Record<Dialect, Set<string>> = {
  pg: new Set(),
  mysql: new Set(['EXTENDED', 'PARTITIONS', 'ANALYZE']),
  sqlite: new Set(['QUERY', 'PLAN']),
  mssql: new Set(),
};

function explain(
  type: Exclude<DbType, 'MONGODB'>,
  dialect: Dialect,
  text: string,
  readings: LexResult[],
  depth: number,
): VerifiedRead {
  const tokens = readings[0].tokens;
  if (dialect === 'mssql')
    throw readOnlyViolation('EXPLAIN', 'SQL Server has no EXPLAIN statement; use SELECT instead.');
  if (depth > 0) throw readOnlyViolation('EXPLAIN', 'EXPLAIN cannot be nested.');
  let i = 1;
  for (;;) {
    const t = tokens[i];
    if (!t) break;
    const w = t.value.toUpperCase();
    if (t.kind === 'word' && explainOptions[dialect].has(w)) {
      i++;
      continue;
    }
    if (dialect === 'mysql' && t.kind === 'word' && w === 'FORMAT' && tokens[i + 1]?.value === '=') {
      i += 3;
      continue;
    }
    break;
  }
  const inner = tokens[i];
  if (!inner) throw readOnlyViolation('EXPLAIN', 'EXPLAIN needs a statement to explain.');
  const innerWord = inner.kind === 'word' ? inner.value.toUpperCase() : '';
  // MySQL/MariaDB: EXPLAIN t / DESCRIBE t [column] describe a table.
  if (dialect === 'mysql' && !['SELECT', 'WITH', 'VALUES', 'TABLE', '('].includes(innerWord || inner.value)) {
    if (writeKeywords.has(innerWord) || innerWord === 'FOR')
      throw readOnlyViolation(
        `EXPLAIN ${innerWord}`,
        `Only EXPLAIN of a read can run here; this explains a ${innerWord} statement.`,
      );
    for (const r of readings) checkTokens(dialect, r.tokens);
    const rest = tokens.slice(i).filter((t) => !(t.kind === 'punct' && t.value === ';'));
    const ok = rest.every(
      (t) => t.kind === 'word' || t.kind === 'quoted' || t.kind === 'string' || t.value === '.',
    );
    if (!ok || rest.length > 4)
      throw readOnlyViolation('DESCRIBE', 'DESCRIBE takes a table name and an optional column.');
    return { kind: 'describe' };
  }
  let innerRead: VerifiedRead;
  try {
    innerRead = checkSql(type, text.slice(inner.start), depth + 1);
  } catch (e) {
    if (e instanceof AppError && e.code === 'READ_ONLY_VIOLATION') {
      const inner = (e.details as { statementType: string }).statementType;
      throw readOnlyViolation(`EXPLAIN ${inner}`, `Only EXPLAIN of a read can run here: ${e.message}`, {
        ...(e.details as object),
        statementType: `EXPLAIN ${inner}`,
      });
    }
    throw e;
  }
  return { kind: 'explain', calls: innerRead.calls };
}

function pragma(dialect: Dialect, tokens: Token[]): ReadStatement {
  if (dialect !== 'sqlite') throw readOnlyViolation('PRAGMA', 'PRAGMA is not a statement of this database.');
  const rest = tokens.slice(1).filter((t) => !(t.kind === 'punct' && t.value === ';'));
  let i = 0;
  if (rest[1]?.value === '.') i = 2;
  const name = rest[i]?.value.toLowerCase();
  const after = rest.slice(i + 1);
  const argsOk =
    after.length === 0 ||
    (after.length === 3 &&
      after[0].value === '(' &&
      ['word', 'quoted', 'string', 'number'].includes(after[1].kind) &&
      after[2].value === ')');
  if (!name || !readPragmas.has(name) || !argsOk)
    throw readOnlyViolation(
      'PRAGMA',
      `Only read-only PRAGMAs in their query form can run here (${[...readPragmas].slice(0, 6).join(', ')}, …).`,
    );
  return { kind: 'pragma' };
}

const lockHintNames = (hint: unknown): string[] =>
  JSON.stringify(hint ?? null)
    .toUpperCase()
    .match(/[A-Z]+/g) ?? [];

/** Deepest parse tree walked; deeper statements are refused rather than walked without bound. */
const MAX_DEPTH = 1000;

/** Walks the parsed statement for nodes the token checks might have missed, collecting calls. */
function walk(dialect: Dialect, node: unknown, calls: string[][], depth: number): void {
  if (depth > MAX_DEPTH)
    throw readOnlyViolation('TOO_DEEP', 'The statement is nested too deeply to be verified.');
  if (Array.isArray(node)) {
    for (const n of node) walk(dialect, n, calls, depth + 1);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const o = node as Record<string, unknown>;
  const type = typeof o.type === 'string' ? o.type.toLowerCase() : '';
  if (
    [
      'insert',
      'update',
      'delete',
      'replace',
      'create',
      'drop',
      'alter',
      'truncate',
      'rename',
      'grant',
      'revoke',
      'exec',
      'call',
      'set',
      'lock',
      'unlock',
      'transaction',
      'load_data',
      'attach',
      'use',
      'declare',
      'merge',
    ].includes(type)
  )
    throw readOnlyViolation(
      type.toUpperCase(),
      `The statement contains ${type.toUpperCase()}, which writes or changes state; only reads can run here.`,
    );
  if (type === 'assign')
    throw readOnlyViolation('ASSIGNMENT', 'Assignments to variables are not allowed in a read-only query.');
  const into = o.into as { position?: unknown; expr?: unknown } | undefined;
  if (into && typeof into === 'object' && (into.position || into.expr))
    throw readOnlyViolation(
      'SELECT_INTO',
      'SELECT … INTO (a new table, a file or variables) is not allowed in a read-only query.',
    );
  if (o.locking_read || o.for_update) throw lockingRead();
  if (o.for && typeof o.for === 'object') {
    const forType = String((o.for as { type?: unknown }).type ?? '').toLowerCase();
    if (!forType.startsWith('for xml') && !forType.startsWith('for json')) throw lockingRead();
  }
  if (o.table_hint && lockHintNames(o.table_hint).some((h) => mssqlLockHints.has(h))) throw lockingRead();
  if (type === 'function') {
    const parts = functionName(o.name);
    if (!parts) throw readOnlyViolation('FUNCTION', 'A function name could not be read.');
    assertNotDenied(dialect, parts[parts.length - 1]);
    calls.push(parts);
  }
  for (const v of Object.values(o)) if (v && typeof v === 'object') walk(dialect, v, calls, depth + 1);
}

/** The written name of a call (schema or database first), lower-cased. */
function functionName(name: unknown): string[] | undefined {
  if (typeof name === 'string') return [name.toLowerCase()];
  const n = name as { name?: { value?: unknown }[]; schema?: { value?: unknown } } | undefined;
  const parts = n?.name;
  if (!Array.isArray(parts) || parts.length === 0) return undefined;
  const out = parts.map((p) => String(p?.value ?? '').toLowerCase());
  if (n?.schema && typeof n.schema === 'object' && n.schema.value != null)
    out.unshift(String(n.schema.value).toLowerCase());
  return out.some((p) => p === '') ? undefined : out;
}
