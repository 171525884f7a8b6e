/**
 * node-sql-parser (MySQL, MariaDB, SQL Server, SQLite): loading each dialect's parser on first use,
 * parsing, and reading its tree into a verdict. The walk refuses nodes the token checks might have
 * missed (writes, INTO, locking, assignments) and collects every call for the function rule.
 */
import type { DbType } from './dialect';
import { readOnlyViolation } from './errors';
import type { Dialect } from './lexer';
import { assertNotDenied, lockingRead, mssqlLockHints, notARead } from './sql-text';
import type { VerifiedRead } from './verdict';

/** The dialects node-sql-parser reads here. */
export type NodeParserType = Exclude<DbType, 'MONGODB' | 'POSTGRES'>;

const parserDatabase: Record<NodeParserType, string> = {
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
const parserModules: Record<NodeParserType, () => Promise<unknown>> = {
  MYSQL: () => import('node-sql-parser/build/mysql.js'),
  MARIADB: () => import('node-sql-parser/build/mariadb.js'),
  MSSQL: () => import('node-sql-parser/build/transactsql.js'),
  SQLITE: () => import('node-sql-parser/build/sqlite.js'),
};
const parsers = new Map<NodeParserType, Parser>();

/** Loads (once) node-sql-parser's parser of `type`'s dialect. */
export async function loadNodeParser(type: NodeParserType): Promise<void> {
  if (parsers.has(type)) return;
  const mod = (await parserModules[type]()) as ParserModule & { default?: ParserModule };
  const Ctor = mod.Parser ?? mod.default?.Parser;
  if (!parsers.has(type)) parsers.set(type, new Ctor());
}

const parserFor = (type: NodeParserType): Parser => {
  const p = parsers.get(type);
  if (!p) throw new Error(`The ${parserDatabase[type]} parser is not loaded.`);
  return p;
};

/**
 * node-sql-parser has no bare VALUES statement; it parses VALUES rows as a subquery
 * (PostgreSQL, MySQL, MariaDB) or, for SQLite, only as INSERT rows. The wrapper is parsed,
 * never run; the user's text runs as written.
 */
function valuesWrapper(type: NodeParserType, text: string): string {
  const body = text.trim().replace(/;+\s*$/, '');
  if (type === 'SQLITE') return `INSERT INTO loupe_values ${body}`;
  return `SELECT * FROM (${body}) AS loupe_values`;
}

function parse(type: NodeParserType, text: string): unknown[] {
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

/** node-sql-parser's statements of `text` (through the VALUES wrapper for a bare VALUES), or its 400. */
export const parseNodeTree = (type: NodeParserType, text: string, first: string): unknown[] =>
  parse(type, first === 'VALUES' ? valuesWrapper(type, text) : text);

/** The verdict of node-sql-parser's one statement `ast` of `text` (whose first keyword is `first`). */
export function readOfTree(
  type: NodeParserType,
  dialect: Exclude<Dialect, 'pg'>,
  ast: Record<string, unknown>,
  first: string,
): VerifiedRead {
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
  if (type === 'function' && !expressionForm(dialect, o)) {
    const parts = functionName(o.name);
    if (!parts) throw readOnlyViolation('FUNCTION', 'A function name could not be read.');
    assertNotDenied(dialect, parts[parts.length - 1]);
    calls.push(parts);
  }
  for (const v of Object.values(o)) if (v && typeof v === 'object') walk(dialect, v, calls, depth + 1);
}

/**
 * Expression forms node-sql-parser presents as calls, which run no function: `EXISTS (subquery)` on
 * every dialect, and `ROW(…)` on MySQL/MariaDB (both reserved words there: a stored function of that
 * name must be quoted, and a quoted name stays a call). Their arguments are still walked.
 */
function expressionForm(dialect: Dialect, o: Record<string, unknown>): boolean {
  const n = o.name as { name?: { type?: unknown; value?: unknown }[]; schema?: unknown } | undefined;
  const part = n?.name?.length === 1 && !n.schema ? n.name[0] : undefined;
  if (part?.type !== 'default' || typeof part.value !== 'string') return false;
  const word = part.value.toLowerCase();
  const args = (o.args as { value?: unknown[] } | undefined)?.value;
  if (word === 'exists')
    return args?.length === 1 && typeof (args[0] as { ast?: unknown })?.ast === 'object' && args[0] !== null;
  return word === 'row' && dialect === 'mysql';
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
