/**
 * PostgreSQL verification on the server's own grammar: libpg-query is PostgreSQL's parser (17)
 * compiled to WebAssembly, so the guard sees the statement exactly as the server will. The tree must
 * be one read statement (SELECT / VALUES / TABLE / WITH … SELECT without data-modifying CTEs, no
 * INTO, no locking clause; EXPLAIN without ANALYZE of such a read; SHOW). Every function call and
 * operator in the tree is collected for the function rule (guard/functions.ts statically,
 * postgres-catalog.ts against the connection's catalog).
 */

import { readOnlyViolation } from './errors';
import { pgDenied } from './functions';
import type { ReadStatement } from './verdict';
import { baselineWasmOnly } from './wasm-tiering';

export interface PgFunctionCall {
  /** Lower-case unless quoted (as the server folds it); schema only when written. */
  schema?: string;
  name: string;
}

type PgParser = { parseSync(sql: string): { stmts?: { stmt?: Record<string, unknown> }[] } };
let parser: PgParser | undefined;

/** Loads libpg-query (and its WebAssembly module) on first use: a lazy chunk like the other parsers. */
export async function loadPgParser(): Promise<void> {
  if (parser) return;
  baselineWasmOnly();
  const mod = (await import('libpg-query')) as unknown as PgParser & { loadModule(): Promise<void> };
  await mod.loadModule();
  parser = mod;
}

/** The deepest tree the guard walks; deeper statements are refused rather than walked without bound. */
export const MAX_PG_DEPTH = 1000;

/** Statement nodes that may appear in a read only as the kinds handled below. */
const READ_STATEMENTS = new Set(['SelectStmt']);

const lockingRead = () =>
  readOnlyViolation(
    'LOCKING_READ',
    'Locking reads (FOR UPDATE, FOR SHARE, FOR NO KEY UPDATE, FOR KEY SHARE) are not allowed in a read-only query.',
  );

const describeKind = (node: string) =>
  node
    .replace(/Stmt$/, '')
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toUpperCase();

/** `InsertStmt` → INSERT, `VariableSetStmt` → SET … for the statementType of a refusal. */
export function statementTypeOf(node: string): string {
  const known: Record<string, string> = {
    InsertStmt: 'INSERT',
    UpdateStmt: 'UPDATE',
    DeleteStmt: 'DELETE',
    MergeStmt: 'MERGE',
    VariableSetStmt: 'SET',
    TransactionStmt: 'TRANSACTION',
    CopyStmt: 'COPY',
    CallStmt: 'CALL',
    DoStmt: 'DO',
    CreateStmt: 'CREATE',
    CreateTableAsStmt: 'CREATE',
    DropStmt: 'DROP',
    AlterTableStmt: 'ALTER',
    TruncateStmt: 'TRUNCATE',
    GrantStmt: 'GRANT',
    VacuumStmt: 'VACUUM',
    ListenStmt: 'LISTEN',
    NotifyStmt: 'NOTIFY',
    RefreshMatViewStmt: 'REFRESH',
    PrepareStmt: 'PREPARE',
    ExecuteStmt: 'EXECUTE',
    LockStmt: 'LOCK',
    ExplainStmt: 'EXPLAIN',
  };
  return known[node] ?? describeKind(node);
}

const article = (w: string) => (/^[AEIOU]/i.test(w) ? 'an' : 'a');
const notARead = (kind: string) =>
  readOnlyViolation(
    kind,
    `Only read statements can run here; this is ${article(kind)} ${kind.replace(/_/g, ' ')} statement.`,
  );

/** The statements PostgreSQL's grammar reads in `text`; throws the parser's own error. */
export function pgStatements(text: string): Record<string, unknown>[] {
  if (!parser) throw new Error('The PostgreSQL parser is not loaded.');
  return (parser.parseSync(text).stmts ?? []).map((s) => s.stmt ?? {});
}

function parsePg(text: string): Record<string, unknown>[] {
  try {
    return pgStatements(text);
  } catch (e) {
    const reason = (e instanceof Error ? e.message : String(e)).slice(0, 300);
    throw readOnlyViolation(
      'UNPARSEABLE',
      `The statement could not be verified as a single read: PostgreSQL's parser rejected it (${reason}). Only statements the parser can verify are run.`,
      { reason },
    );
  }
}

export interface PgCalls {
  functions: PgFunctionCall[];
  operators: string[];
  /**
   * Names written as fields (`t.f`, `(t).f`): PostgreSQL calls a one-argument function `f(t)` when `t`
   * has no column `f` (functional notation), so each is checked as a possible call.
   */
  attributes: string[];
  /** Type names of explicit casts (`x::t`, `CAST(x AS t)`): a cast may run a function. */
  casts: string[];
}

export interface PgRead extends ReadStatement, PgCalls {}

/** Verifies `text` as exactly one PostgreSQL read; throws 400 READ_ONLY_VIOLATION otherwise. */
export function checkPostgres(text: string): PgRead {
  const stmts = parsePg(text);
  if (stmts.length === 0) throw readOnlyViolation('UNPARSEABLE', 'The statement is empty.');
  if (stmts.length !== 1)
    throw readOnlyViolation(
      'MULTIPLE_STATEMENTS',
      'Only one statement can run at a time; remove the extra statements.',
    );
  const stmt = stmts[0];
  const [node] = Object.keys(stmt);
  const body = stmt[node] as Record<string, unknown>;
  const found: PgCalls = { functions: [], operators: [], attributes: [], casts: [] };
  if (node === 'SelectStmt') {
    walk(body, found, 0, 'SelectStmt');
    return { kind: body.valuesLists ? 'values' : 'select', ...found };
  }
  if (node === 'VariableShowStmt') return { kind: 'show', ...found };
  if (node === 'ExplainStmt') {
    const query = (body.query ?? {}) as Record<string, unknown>;
    const [inner] = Object.keys(query);
    if (inner !== 'SelectStmt') {
      const kind = inner ? statementTypeOf(inner) : 'UNKNOWN';
      throw readOnlyViolation(
        `EXPLAIN ${kind}`,
        `Only EXPLAIN of a read can run here; this explains ${article(kind)} ${kind} statement.`,
      );
    }
    const options = (body.options ?? []) as { DefElem?: { defname?: string; arg?: unknown } }[];
    for (const o of options) {
      const name = String(o.DefElem?.defname ?? '').toLowerCase();
      const off = JSON.stringify(o.DefElem?.arg ?? null).match(/"(false|off|0)"|"ival":0|"boolval":false/i);
      if ((name === 'analyze' || name === 'analyse') && !off)
        throw readOnlyViolation(
          'EXPLAIN ANALYZE',
          'EXPLAIN ANALYZE runs the statement; use EXPLAIN without ANALYZE, or run the SELECT itself.',
        );
    }
    walk(query.SelectStmt, found, 0, 'SelectStmt');
    return { kind: 'explain', ...found };
  }
  throw notARead(statementTypeOf(node));
}

const nameOf = (n: unknown): string | undefined => {
  const s = (n as { String?: { sval?: unknown } })?.String?.sval;
  return typeof s === 'string' ? s : undefined;
};

function walk(node: unknown, found: PgCalls, depth: number, key: string): void {
  if (depth > MAX_PG_DEPTH)
    throw readOnlyViolation('TOO_DEEP', 'The statement is nested too deeply to be verified.');
  if (Array.isArray(node)) {
    for (const n of node) walk(n, found, depth + 1, key);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const o = node as Record<string, unknown>;
  if (key.endsWith('Stmt') && !READ_STATEMENTS.has(key)) {
    const kind = statementTypeOf(key);
    throw readOnlyViolation(
      kind,
      `The statement contains ${kind}, which writes or changes state; only reads can run here (this includes data-modifying WITH clauses).`,
    );
  }
  // On every node, not only SelectStmt: the arms of UNION are SelectStmt bodies without the wrapper.
  if (o.intoClause)
    throw readOnlyViolation(
      'SELECT_INTO',
      'SELECT … INTO (a new table) is not allowed in a read-only query.',
    );
  if (Array.isArray(o.lockingClause) && o.lockingClause.length > 0) throw lockingRead();
  if (key === 'FuncCall') {
    const parts = ((o.funcname ?? []) as unknown[]).map(nameOf);
    if (parts.some((p) => p === undefined))
      throw readOnlyViolation('FUNCTION', 'A function name could not be read.');
    const name = parts[parts.length - 1] as string;
    const schema = parts.length > 1 ? (parts[parts.length - 2] as string) : undefined;
    const denied = pgDenied(name);
    if (denied)
      throw readOnlyViolation(
        'FUNCTION',
        `The function ${name}() is not allowed in a read-only query (${denied}).`,
        {
          function: name,
        },
      );
    found.functions.push(schema ? { schema, name } : { name });
  }
  if (key === 'ColumnRef') {
    const fields = ((o.fields ?? []) as unknown[]).map(nameOf);
    const last = fields[fields.length - 1];
    if (fields.length >= 2 && last) found.attributes.push(last);
  }
  if (key === 'TypeCast') {
    const names = (((o.typeName as { names?: unknown[] } | undefined)?.names ?? []) as unknown[]).map(nameOf);
    const last = names[names.length - 1];
    if (last) found.casts.push(last);
  }
  if (key === 'A_Indirection')
    for (const i of (o.indirection ?? []) as unknown[]) {
      const name = nameOf(i);
      if (name) found.attributes.push(name);
    }
  if (key === 'A_Expr' || key === 'OpExpr') {
    const parts = ((o.name ?? []) as unknown[]).map(nameOf).filter((p): p is string => !!p);
    const op = parts[parts.length - 1];
    if (op) found.operators.push(op);
  }
  for (const [k, v] of Object.entries(o)) if (v && typeof v === 'object') walk(v, found, depth + 1, k);
}
