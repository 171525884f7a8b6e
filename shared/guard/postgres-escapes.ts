/**
 * PostgreSQL's read mode, decided by what the connection's role can reach (issue 43).
 *
 * Inside `BEGIN READ ONLY … ROLLBACK` PostgreSQL itself refuses every write, sequence change, DDL and
 * COPY, drops notifications and undoes settings; the driver resets the session after the read (advisory
 * locks, prepared statements, cursors). Code, owner-written or not, can then change something only
 * through an escape: another session, the network, files or programs, a superuser, an unreviewed C
 * extension, an untrusted language, or a SECURITY DEFINER function whose owner reaches one of these.
 * The escape inventory (postgres-escapes-sql.ts INVENTORY_SQL) lists them for the connection's role:
 * - **open mode**, when it finds none: reads run on PostgreSQL's guarantees alone; there is no
 *   per-statement catalog analysis (nothing to JIT-compile, nothing to refuse), and owner functions and
 *   views run because they can change nothing;
 * - **strict mode**, when it finds any: the per-statement function rule applies (postgres-catalog.ts).
 *
 * The inventory is found once per connection (id and version) and instance, with JIT off (the caller's
 * query function runs it as one of Loupe's own reads), and is shared by concurrent reads (single
 * flight). It stands while the escape digest (ESCAPE_DIGEST) is unchanged: every open-mode read checks
 * that in its own transaction just before its statement, as strict mode's catalog check does
 * (escapeCheckSql; no extra round trip): the quiet form fails when the server's snapshot moved, the
 * form for a server being written to computes the digest in line and fails when it changed; either
 * failure aborts the transaction before the statement runs, and the read is judged again. A strict
 * verdict is found again after STRICT_RECHECK_MS (a REVOKE that closes the last escape turns the
 * connection open without a restart), and at once by `pgReadSafety(…, { fresh: true })` (the API).
 * An inventory that timed out is remembered for FAILURE_MEMORY_MS: retries answer the same error instead
 * of running it again.
 */
import { AppError } from '../platform/errors';
import type { CatalogCheck, CatalogQuery } from './postgres-catalog';
import { checkFailure } from './postgres-catalog-sql';
import { ESCAPE_MARKS, ESCAPE_VERSION_SQL, escapeCheckSql, INVENTORY_SQL } from './postgres-escapes-sql';

/** One way the role can change something a read-only transaction does not contain. */
export interface PgEscape {
  /** superuser, replication, server-role, privileged-function, extension, c-function, untrusted-language, foreign-server, foreign-table, security-definer */
  kind: string;
  /** The role, function, extension, server or table. */
  object: string;
  /** Why it is an escape, in plain words. */
  detail: string;
  /** Statements an administrator can run (as the object's owner or a superuser) to close it. */
  revoke: string[];
  /** security-definer only: the escapes its owner reaches (`kind object`). */
  reaches?: string[];
}

/** What the API shows on a PostgreSQL connection. */
export interface PgReadSafety {
  mode: 'open' | 'strict';
  escapes: PgEscape[];
  checkedAt: string;
}

interface Entry {
  snapshot: string;
  digest: string;
  safety: PgReadSafety;
  foundAt: number;
  /** The snapshot moved at the last read's check: the next one computes the digest in line. */
  busy?: boolean;
}

const MAX_CONNECTIONS = 200;
/** How long a strict verdict stands without a check of its own (a REVOKE is then seen by reads). */
export const STRICT_RECHECK_MS = 30_000;
/** How long an inventory that timed out is remembered (its retries answer the same error). */
export const FAILURE_MEMORY_MS = 30_000;
const LOOKUP = { maxRows: 10_000, timeoutMs: 10_000 };

const known = new Map<string, Entry>();
const inFlight = new Map<string, Promise<Entry>>();
const failed = new Map<string, { error: unknown; until: number }>();
/** Connections whose inventory was forgotten while their snapshot kept moving: their next entry starts busy. */
const busyKeys = new Set<string>();

/** Forgets every inventory (tests). */
export function forgetEscapeInventories(): void {
  known.clear();
  inFlight.clear();
  failed.clear();
  busyKeys.clear();
}

type Target = { id: string; version: string };
const keyOf = (t: Target) => `${t.id}\u0000${t.version}`;

interface Row {
  kind: string;
  object: string;
  detail: string;
  revoke: (string | null)[] | null;
  reaches: string[] | null;
}

function escapeOf(r: Row): PgEscape {
  const revoke = (r.revoke ?? []).filter((s): s is string => typeof s === 'string').map((s) => `${s};`);
  if (r.kind !== 'security-definer') return { kind: r.kind, object: r.object, detail: r.detail, revoke };
  const reaches = (r.reaches ?? []).slice().sort();
  const superuser = reaches.find((x) => x.startsWith('superuser '));
  const shown = superuser ? [superuser] : reaches.slice(0, 5);
  const more = superuser ? '' : reaches.length > 5 ? ` and ${reaches.length - 5} more` : '';
  return {
    kind: r.kind,
    object: r.object,
    detail: `${r.detail}, which reaches ${shown.join(', ')}${more}`,
    revoke,
    reaches,
  };
}

async function find(key: string, query: CatalogQuery): Promise<Entry> {
  // The digest first: a change committed between the two reads leaves an older digest, so the next
  // read's check fails and the inventory is found again (never the other way round).
  const v = (await query(ESCAPE_VERSION_SQL, { ...LOOKUP, params: [] })).rows[0] as {
    snapshot: string;
    hash: string;
  };
  const { rows } = await query(INVENTORY_SQL, { ...LOOKUP, params: [] });
  const escapes = (rows as Row[]).map(escapeOf);
  const entry: Entry = {
    snapshot: v.snapshot,
    digest: v.hash,
    foundAt: Date.now(),
    busy: busyKeys.delete(key) || known.get(key)?.busy,
    safety: { mode: escapes.length ? 'strict' : 'open', escapes, checkedAt: new Date().toISOString() },
  };
  if (!known.has(key) && known.size >= MAX_CONNECTIONS) known.delete(known.keys().next().value as string);
  known.set(key, entry);
  return entry;
}

/** The connection's inventory: remembered, shared with reads already finding it, or found now. */
async function entryFor(target: Target, query: CatalogQuery, fresh = false): Promise<Entry> {
  const key = keyOf(target);
  const seen = known.get(key);
  if (!fresh && seen && (seen.safety.mode === 'open' || Date.now() - seen.foundAt < STRICT_RECHECK_MS))
    return seen;
  const flying = inFlight.get(key);
  if (flying) return flying;
  const remembered = failed.get(key);
  if (remembered && remembered.until > Date.now()) throw remembered.error;
  failed.delete(key);
  const p = find(key, query).finally(() => inFlight.delete(key));
  inFlight.set(key, p);
  try {
    return await p;
  } catch (e) {
    if (e instanceof AppError && e.code === 'QUERY_TIMEOUT')
      failed.set(key, { error: e, until: Date.now() + FAILURE_MEMORY_MS });
    throw e;
  }
}

/** The connection's read safety (the API's view; `fresh`: found again now). */
export async function pgReadSafety(
  target: Target,
  query: CatalogQuery,
  opts: { fresh?: boolean } = {},
): Promise<PgReadSafety> {
  return (await entryFor(target, query, opts.fresh)).safety;
}

/** The read's mode, and in open mode the check its transaction runs before the statement. */
export type PgReadMode = { mode: 'open'; check: CatalogCheck } | { mode: 'strict'; safety: PgReadSafety };

export async function pgReadMode(target: Target, query: CatalogQuery): Promise<PgReadMode> {
  const key = keyOf(target);
  const seen = await entryFor(target, query);
  if (seen.safety.mode === 'strict') return { mode: 'strict', safety: seen.safety };
  const { snapshot, digest } = seen;
  const inLine = seen.busy === true;
  return {
    mode: 'open',
    check: {
      sql: escapeCheckSql(snapshot, inLine ? digest : undefined),
      onRow(row) {
        if (typeof row.snapshot !== 'string' || known.get(key) !== seen) return;
        seen.snapshot = row.snapshot;
        seen.busy = row.quiet !== true;
      },
      changed(error) {
        const failure = checkFailure(error, ESCAPE_MARKS, inLine);
        if (failure === 'moved') seen.busy = true;
        // The escapes may have changed: the inventory is found again by the next attempt.
        if (failure === 'changed' && known.get(key) === seen) {
          known.delete(key);
          busyKeys.add(key);
        }
        return failure !== undefined;
      },
    },
  };
}
