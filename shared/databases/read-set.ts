/**
 * Judging many reads of one connection at once: the value index (connections/value-index.ts) reads
 * one statement per table, and on PostgreSQL each distinct statement would cost the function rule one
 * catalog lookup (guard/postgres-catalog.ts REACH_SQL) before it runs. judgeReads asks the catalog
 * about the union of their names instead, and runReadOnly then checks each read against that union.
 *
 * Why a union verdict is sound (the monotone subset rule): the catalog's verdict on a statement is a
 * function of its written names only (writtenNames: functions, field names, operators, types,
 * relations), and what REACH_SQL finds reachable from a set of names grows with the set: every part of
 * it joins, unions or recurses over the names, and its only negations (an overload shadowed by one
 * earlier in the search_path) compare candidates of one and the same name. A read whose names are a
 * subset of an allowed union reaches a subset of what the union reaches, all of which was allowed;
 * so it would be allowed on its own. runReadOnly applies a union verdict only to a statement whose
 * names it finds inside it, and asks the catalog again (through the same remembered-verdict check as
 * any read: a changed catalog is judged afresh) before each read. A refused union says nothing about
 * its parts: it is split in halves and each half judged, down to single statements, so one refused
 * table does not hide the others and k refused tables among n cost at most about 2·k·log2(n) lookups.
 */
import { writtenNames } from '../guard/postgres-catalog';
import type { PgCalls } from '../guard/postgres-grammar';
import { verifyRead } from '../guard/read';
import { AppError } from '../platform/errors';
import type { ConnectionTarget } from './drivers/types';

/** The names a set of reads was judged on together: a read whose names are all in it shares the verdict. */
export interface ReadCover {
  pg: PgCalls;
  names: ReadonlySet<string>;
}

/** What judgeReads found of one statement. */
export type ReadJudgement =
  /** Allowed as part of `cover` (undefined: not judged ahead; runReadOnly judges it as any read). */
  | { ok: true; cover?: ReadCover }
  /** Refused by the guard or by the catalog: running it would fail with this error. */
  | { ok: false; error: AppError };

/** Statements judged in one catalog lookup at most (the lookup's parameter and work grow with them). */
export const READS_PER_VERDICT = 250;

const key = (w: unknown) => JSON.stringify(w);

/** The union of several statements' names, as one statement's calls. */
export function unionOf(calls: PgCalls[]): ReadCover {
  const pg: PgCalls = { functions: [], operators: [], attributes: [], types: [], relations: [] };
  for (const c of calls) {
    pg.functions.push(...c.functions);
    pg.operators.push(...c.operators);
    pg.attributes.push(...c.attributes);
    pg.types.push(...c.types);
    pg.relations.push(...c.relations);
  }
  return { pg, names: new Set(writtenNames(pg).map(key)) };
}

/** The calls the catalog judges for a read: `cover`'s when it holds every name of `calls`, else its own. */
export function judgedCalls(calls: PgCalls, cover: ReadCover | undefined): PgCalls {
  if (!cover) return calls;
  return writtenNames(calls).every((w) => cover.names.has(key(w))) ? cover.pg : calls;
}

/** The catalog check of runReadOnly (assertPgCallsAllowed on the connection), injected by run.ts. */
export type CatalogCheck = (calls: PgCalls) => Promise<void>;

/** The guard's refusal of a read (400 READ_ONLY_VIOLATION), as opposed to a failure to run it. */
export const refusedByGuard = (e: unknown): e is AppError =>
  e instanceof AppError && e.code === 'READ_ONLY_VIOLATION';

/**
 * Judges `texts` as reads of `target` with as few catalog lookups as the verdicts allow: one per
 * READS_PER_VERDICT statements when all are allowed. A statement the guard refuses by its text is
 * refused alone; a lookup that fails for another reason (time, connection) leaves its statements
 * unjudged, to be judged one by one when they run.
 */
export async function judgeReads(
  target: ConnectionTarget,
  texts: string[],
  check: CatalogCheck,
): Promise<ReadJudgement[]> {
  const out: ReadJudgement[] = texts.map(() => ({ ok: true }));
  const pg: Array<{ at: number; calls: PgCalls }> = [];
  for (const [at, text] of texts.entries()) {
    try {
      const statement = await verifyRead(target.type, text, { allowedFunctions: target.allowedFunctions });
      if (statement.pg) pg.push({ at, calls: statement.pg });
    } catch (e) {
      if (!refusedByGuard(e)) throw e;
      out[at] = { ok: false, error: e };
    }
  }
  const judge = async (group: typeof pg): Promise<void> => {
    const cover = unionOf(group.map((g) => g.calls));
    try {
      await check(cover.pg);
    } catch (e) {
      if (!refusedByGuard(e)) return; // unjudged: each read asks the catalog itself
      if (group.length === 1) {
        out[group[0].at] = { ok: false, error: e };
        return;
      }
      const half = Math.ceil(group.length / 2);
      await judge(group.slice(0, half));
      await judge(group.slice(half));
      return;
    }
    for (const g of group) out[g.at] = { ok: true, cover };
  };
  for (let i = 0; i < pg.length; i += READS_PER_VERDICT) await judge(pg.slice(i, i + READS_PER_VERDICT));
  return out;
}
