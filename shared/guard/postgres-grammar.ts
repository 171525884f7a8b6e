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

/** A function call; `named` when it passes an argument by name (`f(a => 1)`). */
export interface PgFunctionCall extends PgName {
  /**
   * Named notation reaches an overload by its parameter names: one whose signature an earlier schema of
   * the path already has is still a candidate (the built-in may have no such parameter name).
   */
  named?: true;
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

/** A name as written: lower-case unless quoted (as the server folds it); schema only when written. */
export interface PgName {
  schema?: string;
  name: string;
}

/**
 * Every name in the statement the server resolves to code or to objects that carry code, for the
 * catalog rule (postgres-catalog.ts): the guard cannot know argument types, so each name stands for
 * every object it could resolve to.
 */
export interface PgCalls {
  /** Function calls (also aggregates, window functions, TABLESAMPLE methods, and the calls the grammar adds). */
  functions: PgFunctionCall[];
  /**
   * Operators, written or implied: `OPERATOR(schema.op)` keeps its schema; ANY/ALL/SOME, IN, CASE,
   * NULLIF, IS DISTINCT FROM, JOIN … USING / NATURAL (=), BETWEEN (>= and <=, NOT BETWEEN < and >),
   * LIKE (~~), ILIKE (~~*), SIMILAR TO (~), ORDER BY … USING.
   */
  operators: PgName[];
  /**
   * Names written as fields (`t.f`, `(t).f`): PostgreSQL calls a one-argument function `f(t)` when `t`
   * has no column `f` (functional notation), so each is checked as a possible call.
   */
  attributes: string[];
  /**
   * Type names written (casts, column definition lists, JSON_TABLE / XMLTABLE columns, RETURNING …),
   * and one-argument calls, which PostgreSQL reads as a cast when no function has the name.
   */
  types: PgName[];
  /** Relations read (FROM, JOIN, TABLE; a CTE's name too: the catalog finds no table for it, or one more to check). */
  relations: PgName[];
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
  const found: PgCalls = { functions: [], operators: [], attributes: [], types: [], relations: [] };
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

/** A written name list (`[schema,] name`): the last part and, when written, the one before it. */
function qualified(list: unknown, what: string): PgName {
  const parts = ((list ?? []) as unknown[]).map(nameOf);
  const name = parts[parts.length - 1];
  if (!name || parts.some((p) => p === undefined))
    throw readOnlyViolation('FUNCTION', `A ${what} name could not be read.`);
  const schema = parts.length > 1 ? parts[parts.length - 2] : undefined;
  return schema ? { schema, name } : { name };
}

/**
 * The operators PostgreSQL applies for an A_Expr: its written name (OPERATOR(schema.op) keeps the
 * schema) for operators, ANY/ALL, IS DISTINCT FROM, NULLIF, IN, LIKE, ILIKE and SIMILAR TO; BETWEEN
 * is `a >= b AND a <= c`, NOT BETWEEN `a < b OR a > c` (SYMMETRIC: the same operators both ways).
 */
function aExprOperators(o: Record<string, unknown>): PgName[] {
  switch (o.kind) {
    case 'AEXPR_BETWEEN':
    case 'AEXPR_BETWEEN_SYM':
      return [{ name: '>=' }, { name: '<=' }];
    case 'AEXPR_NOT_BETWEEN':
    case 'AEXPR_NOT_BETWEEN_SYM':
      return [{ name: '<' }, { name: '>' }];
    default:
      return [qualified(o.name, 'operator')];
  }
}

/**
 * Functions that convert a value of any type to json or jsonb (datum_to_json / datum_to_jsonb): for a
 * type created after initdb they apply its cast to json when it has one, which the catalog checks when
 * json and jsonb are in play. PostGIS's ST_AsGeoJSON(record) and ST_AsMVT do the same for a row.
 */
const JSON_FUNCTIONS = new Set([
  'to_json',
  'to_jsonb',
  'row_to_json',
  'array_to_json',
  'json_agg',
  'jsonb_agg',
  'json_agg_strict',
  'jsonb_agg_strict',
  'json_object_agg',
  'jsonb_object_agg',
  'json_object_agg_strict',
  'jsonb_object_agg_strict',
  'json_object_agg_unique',
  'jsonb_object_agg_unique',
  'json_object_agg_unique_strict',
  'jsonb_object_agg_unique_strict',
  'json_build_object',
  'jsonb_build_object',
  'json_build_array',
  'jsonb_build_array',
  'json_object',
  'jsonb_object',
  'json_array',
  'json_scalar',
  'json_serialize',
  'st_asgeojson',
  'st_asmvt',
  'st_asgeobuf',
  'st_asflatgeobuf',
]);
const JSON_TYPES: PgName[] = [
  { schema: 'pg_catalog', name: 'json' },
  { schema: 'pg_catalog', name: 'jsonb' },
];

/** The types PostgreSQL gives a literal (A_Const): int4, int8 or numeric, bool, bit, unknown (cast to text). */
function literalTypes(o: Record<string, unknown>): PgName[] {
  const t = (name: string): PgName => ({ schema: 'pg_catalog', name });
  if ('ival' in o) return [t('int4')];
  if ('fval' in o) return [t('int8'), t('numeric')];
  if ('boolval' in o) return [t('bool')];
  if ('bsval' in o) return [t('bit'), t('varbit')];
  if ('sval' in o) return [t('unknown'), t('text')];
  return [t('unknown')];
}

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
    const { schema, name } = qualified(o.funcname, 'function');
    const denied = pgDenied(name);
    if (denied)
      throw readOnlyViolation(
        'FUNCTION',
        `The function ${name}() is not allowed in a read-only query (${denied}).`,
        {
          function: name,
        },
      );
    const named = Array.isArray(o.args) && o.args.some((a) => (a as { NamedArgExpr?: unknown }).NamedArgExpr);
    found.functions.push({
      ...(schema ? { schema, name } : { name }),
      ...(named ? { named: true as const } : {}),
    });
    // Functions that turn any value into json call the value's type's cast to json (datum_to_json).
    if (JSON_FUNCTIONS.has(name.toLowerCase())) found.types.push(...JSON_TYPES);
    // f(x) is a cast to the type f when no function f takes x (a function-style cast).
    if (Array.isArray(o.args) && o.args.length === 1) found.types.push(schema ? { schema, name } : { name });
  }
  if (key === 'RangeVar') {
    const rel = o as { schemaname?: unknown; relname?: unknown };
    if (typeof rel.relname === 'string')
      found.relations.push(
        typeof rel.schemaname === 'string'
          ? { schema: rel.schemaname, name: rel.relname }
          : { name: rel.relname },
      );
  }
  // TABLESAMPLE method(…): the method is a handler function of that name.
  if (key === 'RangeTableSample') found.functions.push(qualified(o.method, 'function'));
  // Every name after the first may be a field, and so a call f(x) (`t.f`, `t.col.f`, `col.f`).
  if (key === 'ColumnRef') {
    const fields = ((o.fields ?? []) as unknown[]).map(nameOf);
    for (const f of fields.slice(1)) if (f) found.attributes.push(f);
  }
  // A literal's type is in play: an owner's implicit cast from it to an owner type runs unwritten.
  if (key === 'A_Const') for (const t of literalTypes(o)) found.types.push(t);
  // SQL/JSON constructors (JSON_OBJECT, JSON_ARRAY, JSON_ARRAYAGG, JSON_OBJECTAGG, JSON_SCALAR …) too.
  if (key.startsWith('Json') && key !== 'JsonFormat') found.types.push(...JSON_TYPES);
  // Every type name: TypeCast, column definition lists, JSON_TABLE / XMLTABLE columns, RETURNING, XMLSERIALIZE.
  if ((key === 'typeName' || key === 'TypeName') && Array.isArray(o.names))
    found.types.push(qualified(o.names, 'type'));
  if (key === 'A_Indirection')
    for (const i of (o.indirection ?? []) as unknown[]) {
      const name = nameOf(i);
      if (name) found.attributes.push(name);
    }
  if (key === 'A_Expr') for (const op of aExprOperators(o)) found.operators.push(op);
  // x op ANY/ALL (subquery), x IN (subquery) (=), (a, b) op (subquery).
  if (key === 'SubLink') {
    const t = o.subLinkType;
    if (t === 'ANY_SUBLINK' || t === 'ALL_SUBLINK' || t === 'ROWCOMPARE_SUBLINK')
      found.operators.push(
        Array.isArray(o.operName) && o.operName.length > 0
          ? qualified(o.operName, 'operator')
          : { name: '=' },
      );
  }
  // CASE x WHEN v …: x = v.
  if (key === 'CaseExpr' && o.arg) found.operators.push({ name: '=' });
  // JOIN … USING (c) and NATURAL JOIN compare the columns with =.
  if (key === 'JoinExpr' && ((Array.isArray(o.usingClause) && o.usingClause.length > 0) || o.isNatural))
    found.operators.push({ name: '=' });
  // ORDER BY x USING op.
  if (key === 'SortBy' && Array.isArray(o.useOp) && o.useOp.length > 0)
    found.operators.push(qualified(o.useOp, 'operator'));
  for (const [k, v] of Object.entries(o)) if (v && typeof v === 'object') walk(v, found, depth + 1, k);
}
