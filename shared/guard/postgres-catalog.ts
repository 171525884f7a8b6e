/**
 * The PostgreSQL half of the function rule, decided by the target server's own catalog: no code the
 * database owner wrote runs through a read unless the connection's admin allowed it by name.
 *
 * The grammar walk (postgres-grammar.ts) gives every name the statement shows: functions, operators
 * (written or implied: ANY/ALL, IN, CASE, NULLIF, BETWEEN, JOIN USING, ORDER BY USING…), field names,
 * types and relations. The catalog then gives every function a read of those names could run
 * (postgres-catalog-sql.ts REACH_SQL): the overloads the names resolve to, and what runs without a
 * call by name (views' definitions, recursively; row-level security policies; domain CHECK
 * constraints; casts between the types in play; type input/output functions; operator classes;
 * aggregates' support functions; expressions the planner folds: index expressions, CHECK
 * constraints, statistics, partition keys; foreign-data wrappers' handlers). Each must be:
 * - a built-in (created by initdb: oid below 16384, in pg_catalog or information_schema), IMMUTABLE or
 *   STABLE or on the reviewed list of harmless volatile built-ins; for type support (input/output,
 *   casts, operator classes, handlers) any initdb built-in;
 * - a function of a reviewed extension (functions.ts `pgReviewedExtensions`, by extension and name),
 *   IMMUTABLE or STABLE, written in C or installed by a superuser;
 * - for type support only: written in C (only a superuser can install C code; owners cannot);
 * - named in the connection's `allowedFunctions` by its admin (`name` or `schema.name`);
 * - for an expression the planner folds: anything but an IMMUTABLE or SQL-language function (only
 *   those can run at planning time);
 * and never one of the names functions.ts refuses whatever a catalog says. Names resolve as the
 * server resolves them under the read session's search_path, which starts with pg_catalog
 * (drivers/postgres.ts): an owner's function or operator with a built-in's signature can never be
 * chosen and is not held against the statement.
 *
 * Verdicts are remembered per connection (id, version, allowedFunctions) and statement names while
 * the catalog is unchanged (its digest, VERSION_SQL). A read (pgReadCheck) asks nothing more of the
 * server for a remembered verdict: its own transaction checks, just before the statement, that the
 * server's snapshot is the one last seen (catalogCheckSql), so no extra round trip and a few
 * microseconds on the server. When the snapshot moved (something was written), that check fails
 * without running the statement, and the read runs again with the check that also computes the
 * catalog's digest in line when the snapshot moved, and fails only when the digest changed; a
 * connection whose snapshot keeps moving (a server being written to) keeps that form until a read
 * finds the snapshot unchanged. A changed digest forgets the connection's verdicts; the read is judged
 * again and runs again. A statement not yet known costs one REACH_SQL query, a connection not yet known
 * one VERSION_SQL query. Other callers (assertPgCallsAllowed: classifying a statement, no read follows)
 * read the snapshot with one trivial query first. Refusals are not remembered.
 */
import { readOnlyViolation } from './errors';
import { pgDenied, pgDeniedPattern, pgReviewedExtensions, pgReviewedVolatile } from './functions';
import {
  CATALOG_CHANGED_MARK,
  catalogCheckSql,
  REACH_SQL,
  SNAPSHOT_MOVED_MARK,
  SNAPSHOT_SQL,
  VERSION_SQL,
} from './postgres-catalog-sql';
import { type PgCalls, pgStatements } from './postgres-grammar';

const MAX_CONNECTIONS = 200;
const MAX_STATEMENTS_PER_CONNECTION = 5000;

interface Known {
  snapshot: string;
  digest: string;
  /** The snapshot moved at the last read's check: the next one computes the digest in line. */
  busy?: boolean;
  /** Statement name lists found safe under `digest` (replaced, not cleared, when it changes). */
  safe: Set<string>;
}
const known = new Map<string, Known>();
/** Connections whose verdicts were forgotten while their snapshot kept moving: their next entry starts busy. */
const busy = new Set<string>();

/** Forgets every remembered verdict (tests; a connection's catalog changed). */
export function forgetCatalogVerdicts(): void {
  known.clear();
  busy.clear();
}

/** Runs one read on the connection (the driver's read-only path); injected by databases/run.ts. */
export type CatalogQuery = (
  text: string,
  opts: { params: unknown[]; maxRows: number; timeoutMs: number },
) => Promise<{ rows: unknown[] }>;

/** One REACH_SQL row: a function a read of the statement could run, and why. */
interface Reached {
  via: string;
  what: string;
  level: 'call' | 'type' | 'fold';
  /** 'fold' only: the statement (CREATE INDEX, SELECT of the expression…) that shows the expression. */
  expr: string | null;
  schema: string;
  fn: string;
  volatility: string;
  language: string;
  owner_super: boolean;
  initdb: boolean;
  extension: string | null;
}

type Written = [kind: 'f' | 'a' | 'o' | 't' | 'r', schema: string | null, name: string];

/** The statement's names as REACH_SQL takes them, sorted and without repeats (also the verdict's key). */
export function writtenNames(calls: PgCalls): Written[] {
  const out = new Map<string, Written>();
  const add = (kind: Written[0], schema: string | undefined, name: string) => {
    const w: Written = [kind, schema ?? null, name];
    out.set(JSON.stringify(w), w);
  };
  for (const f of calls.functions) add('f', f.schema, f.name);
  for (const a of calls.attributes) add('a', undefined, a);
  for (const o of calls.operators) add('o', o.schema, o.name);
  for (const t of calls.types) add('t', t.schema, t.name);
  for (const r of calls.relations) add('r', r.schema, r.name);
  return [...out.keys()].sort().map((k) => out.get(k) as Written);
}

const BUILTIN_SCHEMAS = new Set(['pg_catalog', 'information_schema']);
const labelled = (v: string) => v === 'i' || v === 's';
const compiled = (language: string) => language === 'c' || language === 'internal';

/** Why a reached function may not run (undefined: it may). */
function problem(r: Reached, allowed: ReadonlySet<string>): 'denied' | 'volatile' | 'unreviewed' | undefined {
  // The planner folds only IMMUTABLE calls with constant arguments (and inlines SQL functions).
  if (r.level === 'fold' && r.language !== 'sql' && (r.volatility !== 'i' || !foldable(r))) return undefined;
  if (pgDenied(r.fn)) return 'denied';
  if (allowed.has(r.fn.toLowerCase()) || allowed.has(`${r.schema}.${r.fn}`.toLowerCase())) return undefined;
  if (r.initdb && BUILTIN_SCHEMAS.has(r.schema)) {
    if (r.level === 'type' || labelled(r.volatility) || pgReviewedVolatile.has(r.fn)) return undefined;
    return 'volatile';
  }
  if (
    r.extension &&
    pgReviewedExtensions[r.extension]?.has(r.fn) &&
    labelled(r.volatility) &&
    (compiled(r.language) || r.owner_super)
  )
    return undefined;
  if (r.level === 'type' && compiled(r.language)) return undefined;
  return labelled(r.volatility) ? 'unreviewed' : 'volatile';
}

const hasColumn = (node: unknown): boolean => JSON.stringify(node ?? null).includes('"ColumnRef"');

/**
 * Whether the planner could fold a call of `r.fn` in the expression `r.expr` (an index, CHECK
 * constraint, statistics or partition key): it evaluates an IMMUTABLE call whose arguments are all
 * constants. Every call written with a column among its arguments cannot be folded; a function that
 * does not appear by name (reached through an operator or an implicit cast), an expression that does
 * not parse, or a call with constant arguments can.
 */
function foldable(r: Reached): boolean {
  if (!r.expr) return true;
  let stmts: Record<string, unknown>[];
  try {
    stmts = pgStatements(r.expr);
  } catch {
    return true;
  }
  let calls = 0;
  let constant = false;
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const n of node) visit(n);
      return;
    }
    if (!node || typeof node !== 'object') return;
    const o = node as Record<string, unknown>;
    const call = o.FuncCall as { funcname?: { String?: { sval?: string } }[]; args?: unknown } | undefined;
    if (call && call.funcname?.[call.funcname.length - 1]?.String?.sval === r.fn) {
      calls++;
      if (!hasColumn(call.args)) constant = true;
    }
    for (const v of Object.values(o)) visit(v);
  };
  visit(stmts);
  return calls === 0 || constant;
}

/** The reasons a statement names itself come first in a refusal, then what its objects run. */
const viaOrder = ['function', 'field', 'operator', 'aggregate', 'support'];
const rank = (via: string) => {
  const i = viaOrder.indexOf(via);
  return i === -1 ? viaOrder.length : i;
};

/** What runs the function, for the refusal's first sentence. */
function subject(r: Reached, q: string): string {
  const [head, ...rest] = r.what.split(' ');
  const tail = rest.join(' ');
  switch (r.via) {
    case 'function':
      return `The function ${r.what}()`;
    case 'field':
      return `The function ${r.what}(), written as a field (x.${r.what}),`;
    case 'operator':
      return `The operator ${r.what} (function ${q}())`;
    case 'aggregate':
      return `The aggregate ${r.what}() runs the function ${q}(), which`;
    case 'support':
      return `The function ${r.what}() has the planner support function ${q}(), which`;
    case 'view':
      return `Reading the view ${head}${tail ? ` (${tail})` : ''} runs the function ${q}() of its definition, which`;
    case 'policy':
      return `Reading the table ${head} runs the function ${q}() of its row-level security policy ${tail}, which`;
    case 'index':
    case 'check':
    case 'statistics':
    case 'partition': {
      const object =
        r.via === 'index'
          ? `the expression of its index ${tail}`
          : r.via === 'check'
            ? `its CHECK constraint ${tail}`
            : r.via === 'statistics'
              ? `its extended statistics ${tail}`
              : 'its partition key';
      return `Reading the table ${head} may run the function ${q}() (the planner evaluates ${object}), which`;
    }
    case 'foreign':
      return `Reading the foreign table ${head} runs the handler ${q}() of the foreign-data wrapper ${tail}, which`;
    case 'access method':
      return `Reading the table ${head} runs the handler ${q}() of its access method ${tail}, which`;
    case 'domain':
      return `The statement uses the domain ${head}, whose constraint ${tail} runs the function ${q}(), which`;
    case 'type':
      return `The statement uses the type ${r.what}, whose input, output or type-modifier functions include ${q}(), which`;
    case 'cast':
      return `The statement may apply the cast from ${r.what} (an implicit cast runs without being written), whose function ${q}()`;
    case 'operator class':
      return `Comparing, sorting or grouping values of ${tail} uses the operator class ${head}, whose function ${q}()`;
    default:
      return `The statement reaches the function ${q}() (${r.via} ${r.what}), which`;
  }
}

function refusal(r: Reached, kind: 'denied' | 'volatile' | 'unreviewed') {
  const q = `${r.schema}.${r.fn}`;
  const label = r.via === 'function' || r.via === 'field' ? r.what : q;
  const details = {
    function: label,
    ...(r.via === 'function' || r.via === 'field' ? {} : { via: r.via, object: r.what }),
  };
  const start = subject(r, q);
  const verb = ' is not allowed in a read-only query';
  if (kind === 'denied')
    return readOnlyViolation(
      'FUNCTION',
      `${start}${verb} (${pgDenied(r.fn)}); no setting allows it.`,
      details,
    );
  const why =
    kind === 'volatile'
      ? 'the database marks it VOLATILE (it may change data or state). Only functions the database marks IMMUTABLE or STABLE, and a few reviewed built-ins, can run here'
      : 'it is not a reviewed built-in or extension function, and a function the database owner wrote may change data whatever its volatility label says';
  return readOnlyViolation(
    'FUNCTION',
    `${start}${verb}: ${why}. An admin can allow it by listing "${q}" in the connection's allowedFunctions (PATCH /v1/connections/{id}).`,
    details,
  );
}

/** The statement's names, the verdict's key, and the connection's cache key. */
function keysOf(
  target: { id: string; version: string; allowedFunctions?: readonly string[] },
  calls: PgCalls,
) {
  const names = writtenNames(calls);
  const allowed = new Set((target.allowedFunctions ?? []).map((a) => a.toLowerCase()));
  // allowedFunctions is part of the key: an admin's edit of the list needs no new version.
  const cacheKey = `${target.id}\u0000${target.version}\u0000${[...allowed].sort().join(',')}`;
  return { names, allowed, cacheKey, statementKey: JSON.stringify(names) };
}

const LOOKUP = { maxRows: 10_000, timeoutMs: 10_000 };

/** The connection's entry under the catalog as VERSION_SQL reads it now (a changed digest: a new entry). */
async function refreshed(cacheKey: string, query: CatalogQuery): Promise<Known> {
  const v = (await query(VERSION_SQL, { ...LOOKUP, params: [] })).rows[0] as {
    snapshot: string;
    hash: string;
  };
  let entry = known.get(cacheKey);
  if (!entry || entry.digest !== v.hash) {
    if (!entry && known.size >= MAX_CONNECTIONS) known.delete(known.keys().next().value as string);
    entry = { snapshot: v.snapshot, digest: v.hash, safe: new Set(), busy: busy.delete(cacheKey) };
    known.set(cacheKey, entry);
  } else entry.snapshot = v.snapshot;
  return entry;
}

/** Judges the statement's names under the catalog as it is (REACH_SQL); throws the refusal, else remembers it in `safe`. */
async function judge(
  statementKey: string,
  allowed: ReadonlySet<string>,
  safe: Set<string>,
  query: CatalogQuery,
): Promise<void> {
  const { rows } = await query(REACH_SQL, { ...LOOKUP, params: [statementKey, pgDeniedPattern()] });
  const reached = (rows as Reached[]).slice().sort((a, b) => rank(a.via) - rank(b.via));
  for (const r of reached) {
    const kind = problem(r, allowed);
    if (kind) throw refusal(r, kind);
  }
  if (safe.size < MAX_STATEMENTS_PER_CONNECTION) safe.add(statementKey);
}

/** What a read runs in its own transaction before its statement (drivers/postgres.ts `preCheck`). */
export interface CatalogCheck {
  /** One SELECT of our own text: one row when the verdict stands, an error when the catalog changed. */
  sql: string;
  /** Its row: the server's snapshot, kept so that the next read's check is the cheap one. */
  onRow(row: Record<string, unknown>): void;
  /**
   * True when `error` (the read's failure in that first message, marked `inPreCheck` by the driver) is
   * this check's failure: the snapshot moved (the next check computes the digest), or the catalog
   * changed (the connection's verdicts are forgotten). Either way the statement did not run: the caller
   * asks pgReadCheck again (which judges the statement again when needed) and runs the read again.
   */
  changed(error: unknown): boolean;
}

/**
 * The function rule for a read that follows at once: throws 400 READ_ONLY_VIOLATION as
 * assertPgCallsAllowed does, else answers the check the read must run before its statement (undefined
 * when the statement names nothing the catalog could resolve). A remembered verdict costs no query here;
 * a statement not yet judged one REACH_SQL query (and one VERSION_SQL for a connection not yet seen).
 */
export async function pgReadCheck(
  target: { id: string; version: string; allowedFunctions?: readonly string[] },
  calls: PgCalls,
  query: CatalogQuery,
): Promise<CatalogCheck | undefined> {
  const { names, allowed, cacheKey, statementKey } = keysOf(target, calls);
  if (names.length === 0) return undefined;
  const seen = known.get(cacheKey) ?? (await refreshed(cacheKey, query));
  // Judged under the catalog as it is now and remembered under `seen.digest`: if the two differ, the
  // read's check (against `seen`) fails, and the statement is judged again under the new digest. If the
  // check passes, the catalog was `seen.digest` from `seen`'s reading through the check, the judgement
  // included (a digest never comes back: every change writes rows of a new transaction).
  if (!seen.safe.has(statementKey)) await judge(statementKey, allowed, seen.safe, query);
  const { snapshot, digest } = seen;
  const inLine = seen.busy === true;
  return {
    sql: catalogCheckSql(snapshot, inLine ? digest : undefined),
    onRow(row) {
      // The check passed: the catalog is still `digest` at this snapshot.
      if (typeof row.snapshot !== 'string' || known.get(cacheKey) !== seen || seen.digest !== digest) return;
      seen.snapshot = row.snapshot;
      seen.busy = row.quiet !== true;
    },
    changed(error) {
      const e = error as { inPreCheck?: unknown; code?: unknown; message?: unknown } | null;
      if (e?.inPreCheck !== true || e.code !== '22P02') return false;
      const message = String(e.message);
      if (message.includes(SNAPSHOT_MOVED_MARK) && !inLine) {
        // Written to since: the next check computes the digest (the verdicts may still stand).
        seen.busy = true;
        return true;
      }
      if (message.includes(CATALOG_CHANGED_MARK) && inLine) {
        if (known.get(cacheKey) === seen) {
          known.delete(cacheKey);
          busy.add(cacheKey);
        }
        return true;
      }
      return false;
    },
  };
}

/**
 * Throws 400 READ_ONLY_VIOLATION naming the first function a read of `calls` could run that the
 * catalog of `target` does not mark safe, and what runs it. `query` runs the lookups on the connection.
 */
export async function assertPgCallsAllowed(
  target: { id: string; version: string; allowedFunctions?: readonly string[] },
  calls: PgCalls,
  query: CatalogQuery,
): Promise<void> {
  const { names, allowed, cacheKey, statementKey } = keysOf(target, calls);
  if (names.length === 0) return;
  let entry = known.get(cacheKey);
  const snapshot = entry
    ? String(
        ((await query(SNAPSHOT_SQL, { ...LOOKUP, params: [] })).rows[0] as { snapshot: string }).snapshot,
      )
    : undefined;
  if (!entry || snapshot !== entry.snapshot) entry = await refreshed(cacheKey, query);
  if (entry.safe.has(statementKey)) return;
  // The set of this catalog version: a verdict found while the catalog changed lands in the old set.
  await judge(statementKey, allowed, entry.safe, query);
}
