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
 * - a function of a reviewed data-only extension (functions.ts `pgReviewedExtensions`, judged whole by
 *   membership), written in C or internal, or in SQL owned by a superuser, and not among the
 *   extension's listed exceptions (SQL-text runners, session setters);
 * - for type support only: written in C (only a superuser can install C code; owners cannot);
 * - named in the connection's `allowedFunctions` by its admin (`name` or `schema.name`, read as SQL
 *   identifiers: exact identity, `"Mark"` is not `mark`);
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
 * read the snapshot with one trivial query first. Refusals are not remembered. Identical judgements
 * in flight are shared (single flight), and one that timed out answers its 504 for TIMED_OUT_MS.
 *
 * This applies in strict mode only (issue 43: the connection's role reaches an escape such as dblink);
 * in open mode (postgres-escapes.ts) databases/run.ts skips it.
 */
import { readOnlyViolation } from './errors';
import {
  pgAllowedIdentity,
  pgDenied,
  pgDeniedPattern,
  pgExtensionVerdict,
  pgReviewedVolatile,
} from './functions';
import {
  CATALOG_MARKS,
  catalogCheckSql,
  checkFailure,
  REACH_SQL,
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
  /**
   * Judgements (REACH_SQL) in flight under this entry, by statement key: a read of the same statement
   * waits for the same query (single flight). Only judgements started under this entry are shared: one
   * started before the catalog's digest was read could have seen an older catalog.
   */
  flights?: Map<string, Promise<Problemed | undefined>>;
}
/** A refusal found by a judgement: the reached function and why. */
type Problemed = { r: Reached; kind: Problem };

/** How long a judgement that timed out is answered from memory (per connection and statement). */
export const TIMED_OUT_MS = 30_000;
/** Judgements that timed out: `cacheKey \u0001 statementKey` → until when, and the error (504). */
const timedOut = new Map<string, { until: number; error: unknown }>();
const MAX_TIMED_OUT = 1000;
const known = new Map<string, Known>();
/** Connections whose verdicts were forgotten while their snapshot kept moving: their next entry starts busy. */
const busy = new Set<string>();

/** Forgets every remembered verdict (tests; a connection's catalog changed). */
export function forgetCatalogVerdicts(): void {
  known.clear();
  busy.clear();
  timedOut.clear();
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
  /** The argument types, as oidvectortypes writes them (`text, integer`). */
  args: string;
  /** A schema the owner can write comes before the function's own on the session's path. */
  shadowable: boolean;
  extension: string | null;
}

/** 'f' a function call, 'n' one with named arguments, 'a' a field name, 'o' an operator, 't' a type, 'r' a relation. */
type Written = [kind: 'f' | 'n' | 'a' | 'o' | 't' | 'r', schema: string | null, name: string];

/** The statement's names as REACH_SQL takes them, sorted and without repeats (also the verdict's key). */
export function writtenNames(calls: PgCalls): Written[] {
  const out = new Map<string, Written>();
  const add = (kind: Written[0], schema: string | undefined, name: string) => {
    const w: Written = [kind, schema ?? null, name];
    out.set(JSON.stringify(w), w);
  };
  for (const f of calls.functions) add(f.named ? 'n' : 'f', f.schema, f.name);
  for (const a of calls.attributes) add('a', undefined, a);
  for (const o of calls.operators) add('o', o.schema, o.name);
  for (const t of calls.types) add('t', t.schema, t.name);
  for (const r of calls.relations) add('r', r.schema, r.name);
  return [...out.keys()].sort().map((k) => out.get(k) as Written);
}

const BUILTIN_SCHEMAS = new Set(['pg_catalog', 'information_schema']);
const labelled = (v: string) => v === 'i' || v === 's';
const compiled = (language: string) => language === 'c' || language === 'internal';

/**
 * The connection's allowedFunctions as identities: each entry read as SQL identifiers (unquoted folded
 * to lower case, double-quoted kept), as `name` (any schema) or `schema.name`, in one set of keys
 * (`\u0000name` or `schema\u0000name`). An entry that does not read as a name allows nothing.
 */
export function allowedIdentities(entries: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const e of entries) {
    const id = pgAllowedIdentity(e);
    if (id) out.add(`${id.schema ?? ''}\u0000${id.name}`);
  }
  return out;
}

/** Whether the function `schema.fn` (exactly as the catalog names it) is listed. */
const listed = (allowed: ReadonlySet<string>, schema: string, fn: string) =>
  allowed.has(`\u0000${fn}`) || allowed.has(`${schema}\u0000${fn}`);

type Problem = 'denied' | 'volatile' | 'unreviewed' | { extension: string; reason: string };

/** Why a reached function may not run (undefined: it may). */
function problem(r: Reached, allowed: ReadonlySet<string>): Problem | undefined {
  // The planner folds only IMMUTABLE calls with constant arguments (and inlines SQL functions).
  if (r.level === 'fold' && r.language !== 'sql' && (r.volatility !== 'i' || !foldable(r))) return undefined;
  if (pgDenied(r.fn)) return 'denied';
  if (listed(allowed, r.schema, r.fn)) return undefined;
  if (r.initdb && BUILTIN_SCHEMAS.has(r.schema)) {
    if (r.level === 'type' || labelled(r.volatility) || pgReviewedVolatile.has(r.fn)) return undefined;
    return 'volatile';
  }
  if (r.extension) {
    if (
      r.shadowable &&
      r.owner_super &&
      !compiled(r.language) &&
      pgExtensionVerdict(r.extension, r.fn, r.args ?? '', 'c', true)
    )
      return {
        extension: r.extension,
        reason: `it is written in ${r.language}, and a schema the database owner can create objects in comes before ${r.schema} on the search_path, where the names its body leaves unqualified could find the owner's functions; put ${r.schema} before the owner's schemas in the role's search_path`,
      };
    const verdict = pgExtensionVerdict(
      r.extension,
      r.fn,
      r.args ?? '',
      r.language,
      r.owner_super && r.shadowable !== true,
    );
    if (verdict && 'covered' in verdict) return undefined;
    if (verdict) return { extension: r.extension, reason: verdict.refused };
  }
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

function refusal(r: Reached, kind: Problem) {
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
  if (typeof kind === 'object')
    return readOnlyViolation(
      'FUNCTION',
      `${start}${verb}: the extension ${kind.extension} is reviewed, but not this function of it (${kind.reason}). An admin can allow it by listing "${q}" in the connection's allowedFunctions (PATCH /v1/connections/{id}).`,
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
  const allowed = allowedIdentities(target.allowedFunctions ?? []);
  // allowedFunctions is part of the key: an admin's edit of the list needs no new version.
  const cacheKey = `${target.id}\u0000${target.version}\u0000${JSON.stringify([...allowed].sort())}`;
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

/** VERSION_SQL readings in flight per connection key: reads of a connection not yet known share one. */
const refreshing = new Map<string, Promise<Known>>();

/** refreshed(), shared by the reads that wait for it at once (single flight). */
function refreshedOnce(cacheKey: string, query: CatalogQuery): Promise<Known> {
  let flight = refreshing.get(cacheKey);
  if (!flight) {
    flight = refreshed(cacheKey, query).finally(() => refreshing.delete(cacheKey));
    refreshing.set(cacheKey, flight);
  }
  return flight;
}

/** A catalog query that ran out of time (the driver's 504 QUERY_TIMEOUT, or its own timeout error). */
const isTimeout = (e: unknown) => {
  const o = e as { status?: unknown; code?: unknown } | null;
  return o?.code === 'QUERY_TIMEOUT' || o?.code === 'LOUPE_QUERY_TIMEOUT' || o?.status === 504;
};

/**
 * Judges the statement's names under the catalog as it is (REACH_SQL); throws the refusal, else
 * remembers it in `entry.safe`. Identical judgements in flight under the same entry share one query;
 * one that timed out answers the same error for TIMED_OUT_MS to every read of the statement on the
 * connection without asking the server again (a check that took too long once would take too long
 * again, and every retry would add a backend doing it).
 */
async function judge(
  cacheKey: string,
  statementKey: string,
  allowed: ReadonlySet<string>,
  entry: Known,
  query: CatalogQuery,
): Promise<void> {
  const memoryKey = `${cacheKey}\u0001${statementKey}`;
  const remembered = timedOut.get(memoryKey);
  if (remembered && remembered.until > Date.now()) throw remembered.error;
  if (remembered) timedOut.delete(memoryKey);
  entry.flights ??= new Map();
  let flight = entry.flights.get(statementKey);
  if (!flight) {
    flight = (async () => {
      try {
        const { rows } = await query(REACH_SQL, { ...LOOKUP, params: [statementKey, pgDeniedPattern()] });
        const reached = (rows as Reached[]).slice().sort((a, b) => rank(a.via) - rank(b.via));
        for (const r of reached) {
          const kind = problem(r, allowed);
          if (kind) return { r, kind };
        }
        return undefined;
      } catch (e) {
        if (isTimeout(e)) {
          if (timedOut.size >= MAX_TIMED_OUT) timedOut.delete(timedOut.keys().next().value as string);
          timedOut.set(memoryKey, { until: Date.now() + TIMED_OUT_MS, error: e });
        }
        throw e;
      } finally {
        entry.flights?.delete(statementKey);
      }
    })();
    entry.flights.set(statementKey, flight);
  }
  const found = await flight;
  // Each waiter gets its own error object (the HTTP layer may decorate it).
  if (found) throw refusal(found.r, found.kind);
  if (entry.safe.size < MAX_STATEMENTS_PER_CONNECTION) entry.safe.add(statementKey);
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
  const seen = known.get(cacheKey) ?? (await refreshedOnce(cacheKey, query));
  // Judged under the catalog as it is now and remembered under `seen.digest`: if the two differ, the
  // read's check (against `seen`) fails, and the statement is judged again under the new digest. If the
  // check passes, the catalog was `seen.digest` from `seen`'s reading through the check, the judgement
  // included (a digest never comes back: every change writes rows of a new transaction).
  if (!seen.safe.has(statementKey)) await judge(cacheKey, statementKey, allowed, seen, query);
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
      const failure = checkFailure(error, CATALOG_MARKS, inLine);
      // Written to since: the next check computes the digest (the verdicts may still stand).
      if (failure === 'moved') seen.busy = true;
      if (failure === 'changed' && known.get(cacheKey) === seen) {
        known.delete(cacheKey);
        busy.add(cacheKey);
      }
      return failure !== undefined;
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
  await judge(cacheKey, statementKey, allowed, entry, query);
}
