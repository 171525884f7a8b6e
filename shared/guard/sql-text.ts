/**
 * The steps every SQL dialect's check shares: reading the text under every interpretation the server
 * might apply (lexer.ts), the first keyword, the token checks (stacked statements, SELECT … INTO,
 * locking reads, assignments, write keywords anywhere, denied functions), EXPLAIN of a read, and the
 * refusals' texts. Each dialect module (postgres.ts, mysql.ts, mssql.ts, sqlite.ts) composes them.
 */
import { AppError, validationError } from '../platform/errors';
import { multipleStatements as multiple, readOnlyViolation } from './errors';
import { isOtherDenied, type OtherDialect, pgDenied } from './functions';
import { type Dialect, interpretations, type LexResult, lex, type Token } from './lexer';
import { checkWithSqlparser, type SqlparserDialect } from './sqlparser';
import type { VerifiedRead } from './verdict';

export const functionDialect: Record<Exclude<Dialect, 'pg'>, OtherDialect> = {
  mysql: 'mysql',
  mssql: 'mssql',
  sqlite: 'sqlite',
};

/** Refuses a call on a name no read may call, whatever the connection allows (token-level check). */
export function assertNotDenied(dialect: Dialect, name: string): void {
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
export const writeKeywords = new Set([
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

export const mssqlLockHints = new Set(['UPDLOCK', 'XLOCK', 'HOLDLOCK', 'TABLOCK', 'TABLOCKX', 'PAGLOCK']);

const describe = (kind: string) => kind.toUpperCase().replace(/_/g, ' ');

const article = (w: string) => (/^[AEIOU]/i.test(w) ? 'an' : 'a');
export const notARead = (kind: string) =>
  readOnlyViolation(
    kind.toUpperCase(),
    `Only read statements can run here; this is ${article(kind)} ${describe(kind)} statement.`,
  );

/** The text read under every interpretation, and its first keyword (which must start a read). */
export interface ReadText {
  readings: LexResult[];
  tokens: Token[];
  first: string;
}

/** Lexes `text` for `dialect` and refuses what no read of any dialect starts with or contains. */
export function readText(dialect: Dialect, text: string): ReadText {
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
  return { readings, tokens, first };
}

/** PRAGMA outside SQLite. */
export const noPragma = () => readOnlyViolation('PRAGMA', 'PRAGMA is not a statement of this database.');

/** TABLE t: the shorthand is not verified on the dialects whose parse trees lack it. */
export const tableShorthand = () =>
  readOnlyViolation('TABLE', 'Write the TABLE shorthand as SELECT * FROM … so it can be verified.');

/** sqlparser-rs's reading, with every call's name held to the deny list. */
export function viaSqlparser(dialect: Exclude<Dialect, 'pg'>, text: string): VerifiedRead {
  const read = checkWithSqlparser(dialect as SqlparserDialect, text);
  for (const parts of read.calls) assertNotDenied(dialect, parts[parts.length - 1]);
  return read;
}

export function checkTokens(dialect: Dialect, tokens: Token[]): void {
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

export const lockingRead = () =>
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

/**
 * EXPLAIN (MySQL/MariaDB and SQLite; MySQL's DESCRIBE too): the explained statement is checked on
 * its own by `inner` (the dialect's check, one level deeper); MySQL's EXPLAIN t / DESCRIBE t describe
 * a table.
 */
export function explain(
  dialect: Dialect,
  text: string,
  readings: LexResult[],
  depth: number,
  inner: (text: string, depth: number) => VerifiedRead,
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
  const innerToken = tokens[i];
  if (!innerToken) throw readOnlyViolation('EXPLAIN', 'EXPLAIN needs a statement to explain.');
  const innerWord = innerToken.kind === 'word' ? innerToken.value.toUpperCase() : '';
  // MySQL/MariaDB: EXPLAIN t / DESCRIBE t [column] describe a table.
  if (
    dialect === 'mysql' &&
    !['SELECT', 'WITH', 'VALUES', 'TABLE', '('].includes(innerWord || innerToken.value)
  ) {
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
    innerRead = inner(text.slice(innerToken.start), depth + 1);
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
