import { type AuthContext, isAdmin } from '../auth/context';
import { pagination } from '../http/envelope';
import { afterAnswer, settled } from '../platform/after-answer';
import { config } from '../platform/config';
import { db, type Item, strip } from '../platform/db/store';
import { newId, nowIso, padSeq } from '../platform/ids';
import { logger } from '../platform/logger';
import type { QueryHistoryQuery } from './api';
import { loadConnection } from './connections';
import { type ConnectionRecord, connectionFromItem, connPk, connSk, orgPk } from './store';

/**
 * Query history of a connection:
 *  ORG#o / CONN#c              the connection item; `querySeq` is the number of entries ever recorded (the
 *                              list's total) and the last number taken
 *  ORG#o#CONN#c / QH#<seq>     one execution, zero-padded sequence so sort order is execution order
 *  ORG#o#CONN#c / QHSEQ        the former counter (`seq`): read once to seed `querySeq` on connections
 *                              created before it existed. An instance of the previous version still
 *                              running while a deployment switches over keeps numbering on QHSEQ: its
 *                              numbers after the seed repeat new ones (one entry replaces the other),
 *                              for the seconds the switch takes.
 * A page (newest first) is one Query over a sequence range. A number is taken when an execution is
 * about to run (after the request was validated and the connection found active): it counts in the
 * total from then on. Two ways to write its entry:
 *  - a read (executeReadOnly, openQueryRecord): the entry is written without its outcome while the
 *    statement runs, the answer waits until it is stored (so an answered execution is always recorded),
 *    and the outcome is written as the answer leaves, not waited for (after-answer.ts);
 *  - other paths (approvals, startQueryRecord/recordQuery) write the whole entry once the outcome is known.
 * An entry without its outcome is an execution under way: the list leaves it out (as it leaves out a
 * number whose entry is not written yet) until its outcome arrives, or until it can no longer be running
 * (OUTCOME_LOST_AFTER_MS): the process stopped between the answer and the outcome write, and the list
 * shows it FAILED with errorCode OUTCOME_NOT_RECORDED. docs/internals/read-path.md has each crash point.
 * The query path takes its number in the same UpdateItem that reads the connection (claimQueryNumber);
 * other paths take it on its own (startQueryRecord). One counter either way.
 */
export type QueryStatus = 'SUCCESS' | 'FAILED' | 'REJECTED' | 'TIMEOUT';
export type QuerySource =
  | 'query'
  | 'widget'
  | 'saved_query'
  | 'metric'
  | 'chat'
  | 'approval'
  | 'workflow'
  /** POST /connections/{id}/query reached through the MCP endpoint's run_query tool. */
  | 'mcp';

export interface QueryHistoryEntry {
  id: string;
  connectionId: string;
  sequence: number;
  source: QuerySource;
  question: string | null;
  sql: string;
  status: QueryStatus;
  rowCount: number | null;
  executionTime: number | null;
  truncated: boolean;
  error: string | null;
  errorCode: string | null;
  /** The key's user (an approval: the submitter); every write path has always set it. */
  userId: string;
  createdAt: string;
}

/** Who ran an entry, as the list shows it (never anything of the key). */
export interface QueryAuthor {
  id: string;
  name: string | null;
  email: string | null;
  removed: boolean;
}

const LEGACY_COUNTER = 'QHSEQ';
const entrySk = (seq: number) => `QH#${padSeq(seq)}`;
type Entry = Omit<QueryHistoryEntry, 'id' | 'sequence' | 'createdAt'>;

export type QueryClaim =
  | { connection: ConnectionRecord; sequence: number }
  /** No number was taken: the connection is missing (or being deleted), or inactive when `activeOnly`. */
  | { connection: ConnectionRecord | undefined; sequence?: undefined };

/**
 * Reads the connection and takes its next history number in ONE conditional UpdateItem of the connection
 * item (`ADD querySeq :1`, ALL_NEW): only when it exists, is not being deleted, and (with `activeOnly`) is
 * active. When the condition fails nothing is taken and the item is read to tell why; a connection created
 * before `querySeq` existed is seeded once from its former QHSEQ counter, then the update is retried.
 */
export async function claimQueryNumber(
  orgId: string,
  connectionId: string,
  opts: { activeOnly: boolean },
): Promise<QueryClaim> {
  const [pk, sk] = [orgPk(orgId), connSk(connectionId)];
  for (let attempt = 0; attempt < 5; attempt++) {
    const r = await db.tryUpdate({
      pk,
      sk,
      update: 'ADD #q :one',
      condition: `attribute_exists(#q) AND attribute_not_exists(deletingAt)${opts.activeOnly ? ' AND isActive = :true' : ''}`,
      names: { '#q': 'querySeq' },
      values: { ':one': 1, ...(opts.activeOnly ? { ':true': true } : {}) },
    });
    if (r.ok) {
      const connection = connectionFromItem(r.item);
      return { connection, sequence: Number(connection.querySeq) };
    }
    const item = await db.get(pk, sk);
    if (!item || item.deletingAt) return { connection: undefined };
    if (opts.activeOnly && !item.isActive) return { connection: connectionFromItem(item) };
    if (item.querySeq === undefined) await seedFromLegacyCounter(orgId, connectionId);
    // Otherwise the connection changed between the update and the read (reactivated): try again.
  }
  throw new Error('Could not take a query history number');
}

/** Starts `querySeq` at the former counter's value (once: the write is conditional on it being absent). */
async function seedFromLegacyCounter(orgId: string, connectionId: string): Promise<void> {
  const legacy = await db.get<{ seq?: number }>(connPk(orgId, connectionId), LEGACY_COUNTER);
  await db.update({
    pk: orgPk(orgId),
    sk: connSk(connectionId),
    update: 'SET #q = :n',
    condition: 'attribute_exists(pk) AND attribute_not_exists(#q)',
    names: { '#q': 'querySeq' },
    values: { ':n': Number(legacy?.seq ?? 0) },
  });
}

/** Writes the entry of a number already taken. Failures are logged, never thrown. */
function recorder(orgId: string, connectionId: string, seq: Promise<number>) {
  const pk = connPk(orgId, connectionId);
  return {
    async write(entry: Entry): Promise<void> {
      try {
        const sequence = await seq;
        const rec: QueryHistoryEntry = { id: newId(), sequence, createdAt: nowIso(), ...entry };
        await db.put({ pk, sk: entrySk(sequence), kind: 'query', ...rec });
      } catch (e) {
        logger().error('Recording query history failed', {
          connectionId: entry.connectionId,
          error: (e as Error).message,
        });
      }
    },
  };
}

/** What a read's entry says before its outcome is known. */
export type QueryStart = Pick<QueryHistoryEntry, 'connectionId' | 'source' | 'question' | 'sql' | 'userId'>;
/** How the execution ended. */
export type QueryOutcome = Pick<
  QueryHistoryEntry,
  'status' | 'rowCount' | 'executionTime' | 'truncated' | 'error' | 'errorCode'
>;

/** The after-answer topic of one connection's outcome writes: its history list waits for them. */
const outcomesOf = (orgId: string, connectionId: string) => `query-outcome#${orgId}#${connectionId}`;

/**
 * After this long without an outcome an entry's execution cannot be running any more (the statement's
 * own limit, connect included, plus a minute for the outcome write): its outcome was lost.
 */
export const outcomeLostAfterMs = () => config().LOUPE_DB_STATEMENT_TIMEOUT_MS + 60_000;

/**
 * How long a read waits for its statement before writing its entry without the outcome
 * (LOUPE_HISTORY_OPEN_AFTER_MS; unset: 0 in AWS, 250 ms locally).
 */
function openAfterMs(): number {
  const cfg = config();
  return cfg.LOUPE_HISTORY_OPEN_AFTER_MS ?? (cfg.runtime === 'aws' ? 0 : 250);
}

/**
 * Starts the entry of a number taken with claimQueryNumber. Its PutItem (everything but the outcome) is
 * sent to run alongside the statement: at once in AWS, and locally once the statement has run for
 * `openAfterMs()` (a local store call costs CPU on this thread, not a round trip). `close` takes the
 * outcome:
 *  - the entry was stored (usually long done): the outcome is sent as one UpdateItem that the answer does
 *    not wait for;
 *  - the entry was not sent yet (the statement ended first) or could not be stored: the entry is written
 *    whole, outcome included, before the answer (one store call instead of two).
 * Either way an answered execution is recorded before its answer leaves. Failures are logged, never
 * thrown (the query's answer does not depend on its history).
 */
export function openQueryRecord(orgId: string, connectionId: string, sequence: number, start: QueryStart) {
  const pk = connPk(orgId, connectionId);
  const sk = entrySk(sequence);
  const opened = { id: newId(), sequence, createdAt: nowIso(), ...start };
  let stored: Promise<boolean> | undefined;
  const open = () => {
    stored ??= db.put({ pk, sk, kind: 'query', ...opened }).then(
      () => true,
      (e: unknown) => {
        logger().error('Recording query history failed', { connectionId, error: (e as Error).message });
        return false;
      },
    );
  };
  const wait = openAfterMs();
  let timer: NodeJS.Timeout | undefined;
  if (wait <= 0) open();
  else timer = setTimeout(open, wait);
  return {
    async close(outcome: QueryOutcome): Promise<void> {
      clearTimeout(timer);
      if (stored && (await stored)) {
        afterAnswer(
          outcomesOf(orgId, connectionId),
          'Recording a query outcome',
          db.update({
            pk,
            sk,
            update:
              'SET #s = :s, rowCount = :r, executionTime = :t, truncated = :tr, #e = :e, errorCode = :c',
            condition: 'attribute_exists(pk)',
            names: { '#s': 'status', '#e': 'error' },
            values: {
              ':s': outcome.status,
              ':r': outcome.rowCount,
              ':t': outcome.executionTime,
              ':tr': outcome.truncated,
              ':e': outcome.error,
              ':c': outcome.errorCode,
            },
          }),
        );
        return;
      }
      try {
        await db.put({ pk, sk, kind: 'query', ...opened, ...outcome });
      } catch (e) {
        logger().error('Recording query history failed', { connectionId, error: (e as Error).message });
      }
    },
  };
}

/** An entry whose outcome never arrived (docs/internals/read-path.md): the process stopped first. */
const outcomeLost = (e: QueryHistoryEntry): QueryHistoryEntry => ({
  ...e,
  status: 'FAILED',
  rowCount: null,
  executionTime: null,
  truncated: false,
  error:
    'Loupe stopped before recording how this execution ended: the statement may have run and its answer may have been sent.',
  errorCode: 'OUTCOME_NOT_RECORDED',
});

/** Records one execution. Failure to record never fails the query itself (it is logged). */
export async function recordQuery(orgId: string, entry: Entry): Promise<void> {
  await startQueryRecord(orgId, entry.connectionId).write(entry);
}

/**
 * Starts recording one execution on a path that has already read its connection: the number is taken now
 * (its own UpdateItem of the connection item, the same counter), concurrently with whatever the caller
 * does next; `write` stores the entry under it once the outcome is known. Every started record must be
 * written (a number without an entry would count in the total). Failures are logged, never thrown.
 */
export function startQueryRecord(orgId: string, connectionId: string) {
  const seq = claimQueryNumber(orgId, connectionId, { activeOnly: false }).then((c) => {
    if (c.sequence === undefined) throw new Error('The connection no longer exists');
    return c.sequence;
  });
  seq.catch(() => {}); // reported by write
  return recorder(orgId, connectionId, seq);
}

/**
 * One page of a connection's history, newest first, each entry with its author.
 *
 * Who sees what (issue 45): an admin sees every entry; anyone else only the entries they ran (`userId` is
 * theirs). An entry that names no user (none is written so: every path has recorded the key's user since
 * history began, but the reader does not assume it) is shown to admins only, with `author: null`.
 * `source` (one or more sources) keeps only those entries, e.g. `query` for ad-hoc statements apart from
 * widget loads.
 *
 * Store calls: an admin's unfiltered page is, as before, the connection's GetItem (its counter is the
 * total) and one Query over the page's sequence range. A filtered page (a member's, or any with `source`)
 * reads the numbers of the matching entries (one Query of the connection's entries with a filter, keys
 * only: its cost grows with the connection's history, as the approval history's does), then the page's
 * entries (one Query over the page's range, same filter). Authors come from this instance's copy of the
 * organization's users (`authorsOf`); no call is added to the read path.
 */
export async function listQueryHistory(ctx: AuthContext, connectionId: string, q: QueryHistoryQuery) {
  // This instance's outcome writes still under way land first (for up to a second): a caller sees its
  // last query's outcome.
  await settled(outcomesOf(ctx.orgId, connectionId), 1000);
  const connection = await loadConnection(ctx, connectionId);
  const pk = connPk(ctx.orgId, connectionId);
  let total: number;
  let items: Item[];
  if (isAdmin(ctx) && !q.source) {
    total = Number(connection.querySeq ?? (await db.get<{ seq?: number }>(pk, LEGACY_COUNTER))?.seq ?? 0);
    const hi = total - (q.page - 1) * q.pageSize;
    const lo = Math.max(1, hi - q.pageSize + 1);
    items = hi >= 1 ? await db.query({ pk, between: [entrySk(lo), entrySk(hi)], newestFirst: true }) : [];
  } else {
    const filter: string[] = [];
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = {};
    if (!isAdmin(ctx)) {
      filter.push('#author = :author');
      names['#author'] = 'userId';
      values[':author'] = ctx.userId;
    }
    if (q.source) {
      filter.push(`#source IN (${q.source.map((_, i) => `:source${i}`).join(', ')})`);
      names['#source'] = 'source';
      q.source.forEach((source, i) => {
        values[`:source${i}`] = source;
      });
    }
    const where = { filter: filter.join(' AND '), names, values };
    const matching = await db.query({ pk, prefix: 'QH#', newestFirst: true, fields: [], ...where });
    total = matching.length;
    const page = matching.slice((q.page - 1) * q.pageSize, q.page * q.pageSize);
    items = page.length
      ? await db.query({ pk, between: [page[page.length - 1].sk, page[0].sk], newestFirst: true, ...where })
      : [];
  }
  const lostBefore = Date.now() - outcomeLostAfterMs();
  const entries: QueryHistoryEntry[] = [];
  for (const i of items) {
    const { kind: _k, ...rest } = strip(i);
    const entry = rest as unknown as QueryHistoryEntry;
    if (entry.status !== undefined) entries.push(entry);
    else if (Date.parse(entry.createdAt) < lostBefore) entries.push(outcomeLost(entry));
    // else: still running (its outcome is on its way), left out like a number without its entry yet.
  }
  const authors = await authorsOf(ctx.orgId, new Set(entries.flatMap((e) => (e.userId ? [e.userId] : []))));
  const data = entries.map((e) => ({
    ...e,
    userId: e.userId ?? null,
    author: e.userId
      ? (authors.get(e.userId) ?? { id: e.userId, name: null, email: null, removed: false })
      : null,
  }));
  return { data, pagination: pagination(total, q.page, q.pageSize) };
}

/**
 * This instance's copy of an organization's users (names and emails, removed users included: a removed
 * user's entries keep their author), read with one Query of the organization's USER# items and kept for
 * LOUPE_KEY_CACHE_MS (10 s at most), the bound a key's copy of its user has too: a renamed user shows the
 * new name on another instance at most that much later. A user the copy lacks (added since) makes one new
 * read; an id still unknown after it is not read again until the copy expires.
 */
interface Directory {
  at: number;
  users: Promise<Map<string, QueryAuthor>>;
  /** Ids a read made after they were asked for did not find. */
  absent: Set<string>;
}
const directories = new Map<string, Directory>();

function readDirectory(orgId: string): Directory {
  const users = db
    .query({ pk: orgPk(orgId), prefix: 'USER#', fields: ['id', 'name', 'email', 'deletedAt'] })
    .then(
      (items) =>
        new Map(
          items.map((i) => [
            String(i.id),
            {
              id: String(i.id),
              name: typeof i.name === 'string' ? i.name : null,
              email: typeof i.email === 'string' ? i.email : null,
              removed: !!i.deletedAt,
            },
          ]),
        ),
    );
  const dir: Directory = { at: Date.now(), users, absent: new Set() };
  users.catch(() => {
    if (directories.get(orgId) === dir) directories.delete(orgId);
  });
  if (directories.size >= 1000) directories.delete(directories.keys().next().value!);
  directories.set(orgId, dir);
  return dir;
}

async function authorsOf(orgId: string, ids: Set<string>): Promise<Map<string, QueryAuthor>> {
  if (ids.size === 0) return new Map();
  let dir = directories.get(orgId);
  if (!dir || Date.now() - dir.at >= config().LOUPE_KEY_CACHE_MS) dir = readDirectory(orgId);
  let users = await dir.users;
  const missing = [...ids].filter((id) => !users.has(id) && !dir!.absent.has(id));
  if (missing.length) {
    const fresh = directories.get(orgId) === dir ? readDirectory(orgId) : directories.get(orgId)!;
    users = await fresh.users;
    for (const id of missing) if (!users.has(id)) fresh.absent.add(id);
  }
  return users;
}
