/**
 * The read-only guard as it was before issues 8 and 9 (node-sql-parser for every dialect, a deny list
 * of function names), kept unchanged for `npm run bench -- --only guard` to measure before and after
 * in the same run. Not used by the service.
 */
/**
 * The read-only guard (decisions.md §4). A statement may run only if the real SQL parser for the
 * connection's dialect (node-sql-parser) finds exactly one statement and it is a read: SELECT,
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
 * side-effecting functions, and on SQL Server EXEC / WAITFOR / OPENROWSET-style remote access.
 * MongoDB queries are JSON and checked in mongo-query.ts.
 */

import type { DbType } from '../shared/databases/drivers/types';
import { type Dialect, interpretations, type LexResult, lex, type Token } from '../shared/guard/lexer';
import { parseMongoQuery } from '../shared/guard/mongo';
import { AppError, validationError } from '../shared/platform/errors';

export type ReadKind = 'select' | 'values' | 'explain' | 'show' | 'describe' | 'pragma' | 'mongo';

export interface ReadStatement {
  kind: ReadKind;
}

export const readOnlyViolation = (statementType: string, message: string, extra?: Record<string, unknown>) =>
  new AppError(400, 'READ_ONLY_VIOLATION', message, { statementType, ...extra });

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
const parserModules: Record<Exclude<DbType, 'MONGODB'>, () => Promise<unknown>> = {
  POSTGRES: () => import('node-sql-parser/build/postgresql'),
  MYSQL: () => import('node-sql-parser/build/mysql'),
  MARIADB: () => import('node-sql-parser/build/mariadb'),
  MSSQL: () => import('node-sql-parser/build/transactsql'),
  SQLITE: () => import('node-sql-parser/build/sqlite'),
};
const parsers = new Map<DbType, Parser>();

/** Loads (once) the parser of `type`'s dialect so the synchronous checks below can use it. */
async function loadParser(type: Exclude<DbType, 'MONGODB'>): Promise<void> {
  if (parsers.has(type)) return;
  const mod = (await parserModules[type]()) as ParserModule & { default?: ParserModule };
  const Ctor = mod.Parser ?? mod.default?.Parser;
  if (!parsers.has(type)) parsers.set(type, new Ctor());
}

const parserFor = (type: Exclude<DbType, 'MONGODB'>): Parser => {
  const p = parsers.get(type);
  if (!p) throw new Error(`The ${parserDatabase[type]} parser is not loaded.`);
  return p;
};

/**
 * Functions with side effects, that sleep or hold locks, read server files or run SQL text the
 * guard cannot see. Names are compared lower-case without schema; patterns end with `*`.
 */
const deniedFunctions: Record<Dialect, string[]> = {
  pg: [
    'pg_sleep*',
    'nextval',
    'setval',
    'set_config',
    'pg_advisory*',
    'pg_try_advisory*',
    'lo_*',
    'loread',
    'lowrite',
    'dblink*',
    'pg_terminate_backend',
    'pg_cancel_backend',
    'pg_signal_backend',
    'pg_reload_conf',
    'pg_rotate_logfile',
    'pg_read_file',
    'pg_read_binary_file',
    'pg_ls_*',
    'pg_stat_file',
    'pg_file_*',
    'query_to_xml*',
    'cursor_to_xml*',
    'table_to_xml*',
    'schema_to_xml*',
    'database_to_xml*',
    'txid_current*',
    'pg_current_xact_id*',
    'pg_notify',
    'pg_logical_emit_message',
    'pg_logical_slot_*',
    'pg_replication_*',
    'pg_create_*',
    'pg_drop_replication_slot',
    'pg_copy_*_replication_slot',
    'pg_switch_wal',
    'pg_promote',
    'pg_wal_replay_*',
    'pg_backup_*',
    'pg_start_backup',
    'pg_stop_backup',
    'pg_export_snapshot',
    'pg_stat_reset*',
    'pg_stat_statements_reset',
    'pg_import_system_collations',
    'pg_log_backend_memory_contexts',
    'pg_prewarm',
  ],
  mysql: [
    'sleep',
    'benchmark',
    'get_lock',
    'release_lock',
    'release_all_locks',
    'load_file',
    'master_pos_wait',
    'source_pos_wait',
    'wait_for_executed_gtid_set',
    'wait_until_sql_thread_after_gtids',
    'nextval',
    'setval',
    'lastval',
    'sys_exec',
    'sys_eval',
    'last_insert_id',
  ],
  mssql: ['openrowset', 'openquery', 'opendatasource', 'openxml', 'sp_*', 'xp_*'],
  sqlite: ['load_extension', 'readfile', 'writefile', 'edit', 'fts3_tokenizer', 'zipfile'],
};

const matches = (name: string, patterns: string[]) =>
  patterns.some((p) => (p.endsWith('*') ? name.startsWith(p.slice(0, -1)) : name === p));

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
const verified = new Map<string, ReadKind>();
const MAX_VERIFIED = 500;
const MAX_VERIFIED_CHARS = 4000;

/**
 * Rejects with 400 READ_ONLY_VIOLATION unless `text` is exactly one read statement for `type`.
 * Returns what kind of read it is (drivers use it to pick a cursor or a plain query).
 */
export async function assertReadOnly(type: DbType, text: string): Promise<ReadStatement> {
  const memo = typeof text === 'string' && text.length <= MAX_VERIFIED_CHARS;
  // NUL separates the parts: a statement containing NUL is always refused, so keys never collide.
  const key = memo ? `${type}\u0000${text}` : '';
  const known = memo ? verified.get(key) : undefined;
  if (known) return { kind: known };
  if (type !== 'MONGODB' && Object.hasOwn(parserModules, type)) await loadParser(type);
  const statement = verify(type, text);
  if (memo) {
    if (verified.size >= MAX_VERIFIED) verified.delete(verified.keys().next().value as string);
    verified.set(key, statement.kind);
  }
  return statement;
}

function verify(type: DbType, text: string): ReadStatement {
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

function checkSql(type: Exclude<DbType, 'MONGODB'>, text: string, depth: number): ReadStatement {
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
  // EXPLAIN checks the explained statement (tokens and parse) on its own.
  if (first === 'EXPLAIN' || ((first === 'DESCRIBE' || first === 'DESC') && dialect === 'mysql'))
    return explain(type, dialect, text, readings, depth);
  for (const r of readings) checkTokens(dialect, r.tokens);
  if (first === 'PRAGMA') return pragma(dialect, tokens);
  if (first === 'TABLE')
    throw readOnlyViolation('TABLE', 'Write the TABLE shorthand as SELECT * FROM … so it can be verified.');

  const parseText = dialect === 'pg' ? withoutPgParams(text, tokens) : text;
  const asts = parse(type, first === 'VALUES' ? valuesWrapper(type, parseText) : parseText);
  if (asts.length !== 1) throw multiple();
  const ast = asts[0] as Record<string, unknown>;
  const kind = String(ast.type ?? 'unknown');
  if (first === 'VALUES') {
    // The wrapper parsed; only the VALUES rows are the user's text.
    const values = type === 'SQLITE' ? ast.values : ast;
    if (kind !== (type === 'SQLITE' ? 'insert' : 'select')) throw notARead(kind);
    walk(dialect, values);
    return { kind: 'values' };
  }
  if (kind === 'select') {
    walk(dialect, ast);
    return { kind: 'select' };
  }
  if (kind === 'show') return { kind: 'show' };
  if (kind === 'desc') return { kind: 'describe' };
  throw notARead(kind);
}

/**
 * node-sql-parser cannot parse a cast of a PostgreSQL parameter ($1::int). Parameters are values,
 * never SQL, so the parser sees NULL in their place (the text that runs is unchanged).
 */
function withoutPgParams(text: string, tokens: Token[]): string {
  let out = '';
  let at = 0;
  for (const t of tokens)
    if (t.kind === 'param') {
      out += `${text.slice(at, t.start)}NULL`;
      at = t.end;
    }
  return out + text.slice(at);
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

const multiple = () =>
  readOnlyViolation(
    'MULTIPLE_STATEMENTS',
    'Only one statement can run at a time; remove the extra statements.',
  );

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
    if ((t.kind === 'word' || t.kind === 'quoted') && isCall) {
      const name = t.value.toLowerCase();
      if (matches(name, deniedFunctions[dialect]))
        throw readOnlyViolation('FUNCTION', `The function ${name}() is not allowed in a read-only query.`, {
          function: name,
        });
    }
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

const explainOptions: Record<Dialect, Set<string>> = {
  pg: new Set(['ANALYZE', 'ANALYSE', 'VERBOSE']),
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
): ReadStatement {
  const tokens = readings[0].tokens;
  if (dialect === 'mssql')
    throw readOnlyViolation('EXPLAIN', 'SQL Server has no EXPLAIN statement; use SELECT instead.');
  if (depth > 0) throw readOnlyViolation('EXPLAIN', 'EXPLAIN cannot be nested.');
  let i = 1;
  if (dialect === 'pg' && tokens[1]?.value === '(') {
    while (i < tokens.length && tokens[i].value !== ')') i++;
    i++;
  }
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
  try {
    checkSql(type, text.slice(inner.start), depth + 1);
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
  return { kind: 'explain' };
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

/** Walks the parsed statement for nodes the token checks might have missed. */
function walk(dialect: Dialect, node: unknown): void {
  if (Array.isArray(node)) {
    for (const n of node) walk(dialect, n);
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
    const name = functionName(o.name);
    if (name && matches(name, deniedFunctions[dialect]))
      throw readOnlyViolation('FUNCTION', `The function ${name}() is not allowed in a read-only query.`, {
        function: name,
      });
  }
  for (const v of Object.values(o)) if (v && typeof v === 'object') walk(dialect, v);
}

function functionName(name: unknown): string | undefined {
  if (typeof name === 'string') return name.toLowerCase();
  const parts = (name as { name?: { value?: unknown }[] } | undefined)?.name;
  if (Array.isArray(parts) && parts.length > 0)
    return String(parts[parts.length - 1]?.value ?? '').toLowerCase();
  return undefined;
}
