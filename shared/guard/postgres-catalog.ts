/**
 * The PostgreSQL half of the function rule, decided by the target server's own catalog.
 *
 * A call `f(...)` may run when every overload of `f` it could resolve to (in the written schema, or
 * in the session's search path when unqualified) is IMMUTABLE or STABLE (`pg_proc.provolatile` in
 * 'i', 's'), or lives in pg_catalog and is on the reviewed list of harmless volatile built-ins. One
 * safe overload is not enough (`ts_rewrite` has an immutable one and a volatile one that runs SQL
 * text). Operators are held to the same rule through the function behind them (`pg_operator.oprcode`),
 * and so are names written as fields (`t.f`, `(t).f`), which PostgreSQL resolves to `f(t)` when `t`
 * has no such column (functional notation; one-argument functions of a row or pseudo type), and
 * explicit casts (`x::t`) to a type whose casts run a function. What owner-defined objects run
 * implicitly (views, row-level security policies, domain checks, implicit casts) stays the owner's
 * design; the read-only transaction and the session reset still apply to it.
 *
 * The verdicts are per connection: names found safe are remembered for this warm instance
 * (CATALOG_TTL_MS, keyed by connection id and version), so a repeated statement costs no catalog
 * query; only names not yet known are looked up, in one query on the connection's own read-only
 * path. Refusals are not remembered (a function the owner makes STABLE later is allowed then).
 */
import { readOnlyViolation } from './errors';
import { pgReviewedVolatile } from './functions';
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
const CATALOG_SQL = `
SELECT 'f' AS kind, p.proname AS name, n.nspname AS schema, p.provolatile AS volatility,
       n.nspname = ANY (pg_catalog.current_schemas(true)) AS in_path
  FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
 WHERE p.proname = ANY ($1::text[])
UNION ALL
SELECT 'o', o.oprname, n.nspname, p.provolatile, n.nspname = ANY (pg_catalog.current_schemas(true))
  FROM pg_catalog.pg_operator o JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace
  JOIN pg_catalog.pg_proc p ON p.oid = o.oprcode
 WHERE o.oprname = ANY ($2::text[])
UNION ALL
SELECT 'a', p.proname, n.nspname, p.provolatile, n.nspname = ANY (pg_catalog.current_schemas(true))
  FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
  JOIN pg_catalog.pg_type t ON t.oid = p.proargtypes[0]
 WHERE p.proname = ANY ($3::text[]) AND p.pronargs = 1 AND t.typtype IN ('c', 'p', 'd') AND t.typname <> 'internal'
UNION ALL
SELECT 'c', t.typname, n.nspname, p.provolatile, true
  FROM pg_catalog.pg_cast c JOIN pg_catalog.pg_type t ON t.oid = c.casttarget
  JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
  JOIN pg_catalog.pg_proc p ON p.oid = c.castfunc
 WHERE t.typname = ANY ($4::text[])`;

/**
 * Throws 400 READ_ONLY_VIOLATION naming the first function (or operator) the catalog of `target`
 * does not mark safe. `query` runs the catalog lookup on the connection.
 */
export async function assertPgCallsAllowed(
  target: { id: string; version: string },
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
  const cacheKey = `${target.id}\u0000${target.version}`;
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
  const rows = result.rows as {
    kind: string;
    name: string;
    schema: string;
    volatility: string;
    in_path: boolean;
  }[];
  const overloadOk = (r: (typeof rows)[number]) =>
    r.volatility === 'i' ||
    r.volatility === 's' ||
    (r.kind === 'f' && r.schema === 'pg_catalog' && pgReviewedVolatile.has(r.name));
  for (const f of fns) {
    const overloads = rows.filter(
      (r) =>
        r.kind === 'f' &&
        r.name === f.name &&
        (f.schema !== undefined ? r.schema === f.schema : r.in_path && !r.schema.startsWith('pg_temp')),
    );
    const bad = overloads.find((r) => !overloadOk(r));
    const label = f.schema ? `${f.schema}.${f.name}` : f.name;
    if (bad)
      throw readOnlyViolation(
        'FUNCTION',
        `The function ${label}() is not allowed in a read-only query: the database marks it VOLATILE (it may change data or state). Only functions the database marks IMMUTABLE or STABLE, and a few reviewed built-ins, can run here.`,
        { function: label },
      );
    // A name with no overload is left to the server, which answers "function does not exist".
    if (overloads.length > 0 && safe.size < MAX_NAMES_PER_CONNECTION) safe.add(fnKey(f));
  }
  for (const op of ops) {
    const overloads = rows.filter((r) => r.kind === 'o' && r.name === op && r.in_path);
    if (overloads.some((r) => !overloadOk(r)))
      throw readOnlyViolation(
        'FUNCTION',
        `The operator ${op} is not allowed in a read-only query: the function behind it is VOLATILE.`,
        { function: op },
      );
    if (safe.size < MAX_NAMES_PER_CONNECTION) safe.add(opKey(op));
  }
  // t.f / (t).f: a one-argument function of a row (or any) type that the notation would call.
  for (const name of attrs) {
    const overloads = rows.filter((r) => r.kind === 'a' && r.name === name && r.in_path);
    if (overloads.some((r) => !overloadOk(r)))
      throw readOnlyViolation(
        'FUNCTION',
        `The function ${name}() is not allowed in a read-only query: written as a field (x.${name}), PostgreSQL calls it, and the database marks it VOLATILE.`,
        { function: name },
      );
    if (safe.size < MAX_NAMES_PER_CONNECTION) safe.add(attrKey(name));
  }
  // x::t runs the cast's function, if the cast has one.
  for (const name of casts) {
    const overloads = rows.filter((r) => r.kind === 'c' && r.name === name);
    const bad = overloads.find((r) => !overloadOk(r));
    if (bad)
      throw readOnlyViolation(
        'FUNCTION',
        `The cast to ${name} is not allowed in a read-only query: it runs a function the database marks VOLATILE.`,
        { function: `cast to ${name}` },
      );
    if (safe.size < MAX_NAMES_PER_CONNECTION) safe.add(castKey(name));
  }
}
