/**
 * The PostgreSQL half of the function rule, decided by the target server's own catalog.
 *
 * A call `f(...)` may run when every overload of `f` it could resolve to (in the written schema, or
 * in the session's search path when unqualified) is one of:
 * - a built-in: in pg_catalog or information_schema (only a superuser can put a function there),
 *   IMMUTABLE or STABLE, or on the reviewed list of harmless volatile built-ins;
 * - a function of a reviewed extension (functions.ts `pgReviewedExtensions`, by extension and name),
 *   IMMUTABLE or STABLE, written in C or installed by a superuser (the extension's own script), so that
 *   a function the owner adds to an extension does not pass as the extension's;
 * - named in the connection's `allowedFunctions` by its admin (`name` or `schema.name`).
 * Any other function is refused, whatever its volatility, schema or language: a volatility label is
 * the owner's claim, not a guarantee (a STABLE plpgsql or SQL function may call volatile ones, such
 * as dblink_exec, pg_advisory_lock or set_config). Operators are held to the same rule through the
 * function behind them (`pg_operator.oprcode`), and so are names written as fields (`t.f`, `(t).f`),
 * which PostgreSQL resolves to `f(t)` when `t` has no such column (functional notation; one-argument
 * functions of a row or pseudo type), and explicit casts (`x::t`) to a type whose casts run a
 * function. What owner-defined objects run implicitly (views, row-level security policies, domain
 * checks, implicit casts) stays the owner's design; the read-only transaction and the session reset
 * still apply to it.
 *
 * The verdicts are per connection: names found safe are remembered for this warm instance
 * (CATALOG_TTL_MS, keyed by connection id, version and allowedFunctions), so a repeated statement
 * costs no catalog query; only names not yet known are looked up, in one query on the connection's
 * own read-only path. Refusals are not remembered.
 */
import { readOnlyViolation } from './errors';
import { pgReviewedExtensions, pgReviewedVolatile } from './functions';
import type { PgCalls, PgFunctionCall } from './postgres-grammar';

export const CATALOG_TTL_MS = 5 * 60_000;
const MAX_CONNECTIONS = 200;
const MAX_NAMES_PER_CONNECTION = 5000;

interface Known {
  expires: number;
  safe: Set<string>;
}
const known = new Map<string, Known>();

/** Runs one read on the connection (the driver's read-only path); injected by databases/run.ts. */
export type CatalogQuery = (
  text: string,
  opts: { params: unknown[]; maxRows: number; timeoutMs: number },
) => Promise<{ rows: unknown[] }>;

const fnKey = (c: PgFunctionCall) => `f\u0000${c.schema ?? ''}\u0000${c.name}`;
const opKey = (op: string) => `o\u0000${op}`;
const attrKey = (name: string) => `a\u0000${name}`;
const castKey = (name: string) => `c\u0000${name}`;

/** Forgets every remembered verdict (tests; a connection's catalog changed). */
export function forgetCatalogVerdicts(): void {
  known.clear();
}

/**
 * Functions and operators in the catalog query: for each name, every overload in the schemas it
 * could resolve to, with its volatility and schema. `current_schemas(true)` is the session's effective
 * search path (pg_catalog included); pg_temp is never searched for functions unless written.
 */
const PROC_FACTS = `p.provolatile AS volatility, l.lanname AS language, r.rolsuper AS owner_super,
       (SELECT x.extname FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_extension x ON x.oid = d.refobjid
         WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = p.oid AND d.deptype = 'e'
         LIMIT 1) AS extension`;
const PROC_JOINS = `JOIN pg_catalog.pg_language l ON l.oid = p.prolang
  JOIN pg_catalog.pg_roles r ON r.oid = p.proowner`;
const CATALOG_SQL = `
SELECT 'f' AS kind, p.proname AS name, p.proname AS fn, n.nspname AS schema, ${PROC_FACTS},
       n.nspname = ANY (pg_catalog.current_schemas(true)) AS in_path
  FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace ${PROC_JOINS}
 WHERE p.proname = ANY ($1::text[])
UNION ALL
SELECT 'o', o.oprname, p.proname, pn.nspname, ${PROC_FACTS},
       n.nspname = ANY (pg_catalog.current_schemas(true))
  FROM pg_catalog.pg_operator o JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace
  JOIN pg_catalog.pg_proc p ON p.oid = o.oprcode
  JOIN pg_catalog.pg_namespace pn ON pn.oid = p.pronamespace ${PROC_JOINS}
 WHERE o.oprname = ANY ($2::text[])
UNION ALL
SELECT 'a', p.proname, p.proname, n.nspname, ${PROC_FACTS},
       n.nspname = ANY (pg_catalog.current_schemas(true))
  FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
  JOIN pg_catalog.pg_type t ON t.oid = p.proargtypes[0] ${PROC_JOINS}
 WHERE p.proname = ANY ($3::text[]) AND p.pronargs = 1 AND t.typtype IN ('c', 'p', 'd') AND t.typname <> 'internal'
UNION ALL
SELECT 'c', t.typname, p.proname, pn.nspname, ${PROC_FACTS}, true
  FROM pg_catalog.pg_cast c JOIN pg_catalog.pg_type t ON t.oid = c.casttarget
  JOIN pg_catalog.pg_proc p ON p.oid = c.castfunc
  JOIN pg_catalog.pg_namespace pn ON pn.oid = p.pronamespace ${PROC_JOINS}
 WHERE t.typname = ANY ($4::text[])`;

/** Schemas only a superuser can create functions in: their functions are the server's built-ins. */
const BUILTIN_SCHEMAS = new Set(['pg_catalog', 'information_schema']);

interface Overload {
  kind: string;
  /** The function's name, or the operator's, or the cast's target type. */
  name: string;
  /** The function that runs (for an operator or cast, the function behind it). */
  fn: string;
  /** The function's schema (for an operator, the operator's own schema decides `in_path`). */
  schema: string;
  volatility: string;
  language: string;
  owner_super: boolean;
  extension: string | null;
  in_path: boolean;
}

const labelled = (v: string) => v === 'i' || v === 's';

/** A built-in or a reviewed extension's function: allowed on every connection. */
function reviewed(r: Overload): boolean {
  if (BUILTIN_SCHEMAS.has(r.schema))
    return (
      labelled(r.volatility) || (r.kind === 'f' && r.schema === 'pg_catalog' && pgReviewedVolatile.has(r.fn))
    );
  if (!r.extension || !pgReviewedExtensions[r.extension]?.has(r.fn)) return false;
  return labelled(r.volatility) && (r.language === 'c' || r.language === 'internal' || r.owner_super);
}

/** The connection's admin listed the function (`name` or `schema.name`, as the server folds them). */
const listed = (r: Overload, allowed: ReadonlySet<string>) =>
  allowed.has(r.fn.toLowerCase()) || allowed.has(`${r.schema}.${r.fn}`.toLowerCase());

/** Why an overload may not run (undefined: it may), for the refusal's text. */
function problem(r: Overload, allowed: ReadonlySet<string>): 'volatile' | 'unreviewed' | undefined {
  if (reviewed(r) || listed(r, allowed)) return undefined;
  return labelled(r.volatility) ? 'unreviewed' : 'volatile';
}

const HOW_TO_ALLOW =
  "An admin can allow it by listing it in the connection's allowedFunctions (PATCH /v1/connections/{id}).";
/** The text of an owner-written function's refusal. */
const unreviewedText = (what: string, qualified: string) =>
  `${what} is not allowed in a read-only query: it is not a reviewed built-in or extension function, and a function the database owner wrote may change data whatever its volatility label says. An admin can allow it by listing "${qualified}" in the connection's allowedFunctions (PATCH /v1/connections/{id}).`;

/**
 * Throws 400 READ_ONLY_VIOLATION naming the first function (or operator) the catalog of `target`
 * does not mark safe. `query` runs the catalog lookup on the connection.
 */
export async function assertPgCallsAllowed(
  target: { id: string; version: string; allowedFunctions?: readonly string[] },
  calls: PgCalls,
  query: CatalogQuery,
): Promise<void> {
  if (
    calls.functions.length === 0 &&
    calls.operators.length === 0 &&
    calls.attributes.length === 0 &&
    calls.casts.length === 0
  )
    return;
  const allowed = new Set((target.allowedFunctions ?? []).map((a) => a.toLowerCase()));
  // allowedFunctions is part of the key: an admin's edit of the list needs no new version.
  const cacheKey = `${target.id}\u0000${target.version}\u0000${[...allowed].sort().join(',')}`;
  const now = Date.now();
  let entry = known.get(cacheKey);
  if (!entry || entry.expires <= now) {
    if (entry) known.delete(cacheKey);
    if (known.size >= MAX_CONNECTIONS) known.delete(known.keys().next().value as string);
    entry = { expires: now + CATALOG_TTL_MS, safe: new Set() };
    known.set(cacheKey, entry);
  }
  const safe = entry.safe;
  const fns = calls.functions.filter((c) => !safe.has(fnKey(c)));
  const ops = [...new Set(calls.operators)].filter((o) => !safe.has(opKey(o)));
  const attrs = [...new Set(calls.attributes)].filter((a) => !safe.has(attrKey(a)));
  const casts = [...new Set(calls.casts)].filter((c) => !safe.has(castKey(c)));
  if (fns.length === 0 && ops.length === 0 && attrs.length === 0 && casts.length === 0) return;
  const result = await query(CATALOG_SQL, {
    params: [[...new Set(fns.map((f) => f.name))], ops, attrs, casts],
    maxRows: 10_000,
    timeoutMs: 10_000,
  });
  const rows = result.rows as Overload[];
  for (const f of fns) {
    const overloads = rows.filter(
      (r) =>
        r.kind === 'f' &&
        r.name === f.name &&
        (f.schema !== undefined ? r.schema === f.schema : r.in_path && !r.schema.startsWith('pg_temp')),
    );
    const label = f.schema ? `${f.schema}.${f.name}` : f.name;
    const bad = overloads.find((r) => problem(r, allowed));
    if (bad && problem(bad, allowed) === 'volatile')
      throw readOnlyViolation(
        'FUNCTION',
        `The function ${label}() is not allowed in a read-only query: the database marks it VOLATILE (it may change data or state). Only functions the database marks IMMUTABLE or STABLE, and a few reviewed built-ins, can run here. ${HOW_TO_ALLOW}`,
        { function: label },
      );
    if (bad)
      throw readOnlyViolation(
        'FUNCTION',
        unreviewedText(`The function ${label}()`, `${bad.schema}.${bad.fn}`),
        {
          function: label,
        },
      );
    // A name with no overload is left to the server, which answers "function does not exist".
    if (overloads.length > 0 && safe.size < MAX_NAMES_PER_CONNECTION) safe.add(fnKey(f));
  }
  for (const op of ops) {
    const overloads = rows.filter((r) => r.kind === 'o' && r.name === op && r.in_path);
    const bad = overloads.find((r) => problem(r, allowed));
    if (bad && problem(bad, allowed) === 'volatile')
      throw readOnlyViolation(
        'FUNCTION',
        `The operator ${op} is not allowed in a read-only query: the function behind it is VOLATILE.`,
        { function: op },
      );
    if (bad)
      throw readOnlyViolation(
        'FUNCTION',
        unreviewedText(`The operator ${op} (function ${bad.schema}.${bad.fn})`, `${bad.schema}.${bad.fn}`),
        { function: op },
      );
    if (safe.size < MAX_NAMES_PER_CONNECTION) safe.add(opKey(op));
  }
  // t.f / (t).f: a one-argument function of a row (or any) type that the notation would call.
  for (const name of attrs) {
    const overloads = rows.filter((r) => r.kind === 'a' && r.name === name && r.in_path);
    const bad = overloads.find((r) => problem(r, allowed));
    if (bad && problem(bad, allowed) === 'volatile')
      throw readOnlyViolation(
        'FUNCTION',
        `The function ${name}() is not allowed in a read-only query: written as a field (x.${name}), PostgreSQL calls it, and the database marks it VOLATILE.`,
        { function: name },
      );
    if (bad)
      throw readOnlyViolation(
        'FUNCTION',
        unreviewedText(`The function ${name}(), written as a field (x.${name}),`, `${bad.schema}.${bad.fn}`),
        { function: name },
      );
    if (safe.size < MAX_NAMES_PER_CONNECTION) safe.add(attrKey(name));
  }
  // x::t runs the cast's function, if the cast has one.
  for (const name of casts) {
    const overloads = rows.filter((r) => r.kind === 'c' && r.name === name);
    const bad = overloads.find((r) => problem(r, allowed));
    if (bad && problem(bad, allowed) === 'volatile')
      throw readOnlyViolation(
        'FUNCTION',
        `The cast to ${name} is not allowed in a read-only query: it runs a function the database marks VOLATILE.`,
        { function: `cast to ${name}` },
      );
    if (bad)
      throw readOnlyViolation(
        'FUNCTION',
        unreviewedText(`The cast to ${name} (function ${bad.schema}.${bad.fn})`, `${bad.schema}.${bad.fn}`),
        { function: `cast to ${name}` },
      );
    if (safe.size < MAX_NAMES_PER_CONNECTION) safe.add(castKey(name));
  }
}
