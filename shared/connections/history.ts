import type { AuthContext } from '../auth/context';
import { pagination } from '../http/envelope';
import type { PageQuery } from '../http/schemas';
import { db, type Item, strip } from '../platform/db/store';
import { newId, nowIso, padSeq } from '../platform/ids';
import { logger } from '../platform/logger';
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
 * about to run (after the request was validated and the connection found active) and its entry is
 * written before the answer: every number gets an entry, so the total is exact, and an execution still
 * running is already counted. The query path takes it in the same UpdateItem that reads the connection
 * (claimQueryNumber); other paths (approvals) take it on its own (startQueryRecord). One counter either way.
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
  userId: string;
  createdAt: string;
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

/** The recorder for a number taken with claimQueryNumber: its entry must be written. */
export const queryRecordAt = (orgId: string, connectionId: string, sequence: number) =>
  recorder(orgId, connectionId, Promise.resolve(sequence));

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

export async function listQueryHistory(ctx: AuthContext, connectionId: string, q: PageQuery) {
  const connection = await loadConnection(ctx, connectionId);
  const pk = connPk(ctx.orgId, connectionId);
  const total = Number(connection.querySeq ?? (await db.get<{ seq?: number }>(pk, LEGACY_COUNTER))?.seq ?? 0);
  const hi = total - (q.page - 1) * q.pageSize;
  const lo = Math.max(1, hi - q.pageSize + 1);
  const items =
    hi >= 1 ? await db.query({ pk, between: [entrySk(lo), entrySk(hi)], newestFirst: true }) : ([] as Item[]);
  return {
    data: items.map((i) => {
      const { kind: _k, ...rest } = strip(i);
      return rest as unknown as QueryHistoryEntry;
    }),
    pagination: pagination(total, q.page, q.pageSize),
  };
}
