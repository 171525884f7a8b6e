import type { AuthContext } from '../auth/context';
import { pagination } from '../http/envelope';
import type { PageQuery } from '../http/schemas';
import { db, type Item, strip } from '../platform/db/store';
import { newId, nowIso, padSeq } from '../platform/ids';
import { logger } from '../platform/logger';
import { loadConnection } from './connections';
import { connPk } from './store';

/**
 * Query history of a connection, in the connection's partition:
 *  ORG#o#CONN#c / QHSEQ        counter: `seq`, the number of entries ever recorded (the list's total)
 *  ORG#o#CONN#c / QH#<seq>     one execution, zero-padded sequence so sort order is execution order
 * A page (newest first) is one Query over a sequence range.
 * executeReadOnly takes the sequence number when the statement starts (the counter update runs alongside
 * the statement) and writes the entry before it answers: entries are numbered in the order executions
 * started, and an execution still running is already counted in the total.
 */
export type QueryStatus = 'SUCCESS' | 'FAILED' | 'REJECTED' | 'TIMEOUT';
export type QuerySource = 'query' | 'widget' | 'saved_query' | 'metric' | 'chat' | 'approval' | 'workflow';

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

const COUNTER = 'QHSEQ';
const entrySk = (seq: number) => `QH#${padSeq(seq)}`;

/** Records one execution. Failure to record never fails the query itself (it is logged). */
export async function recordQuery(
  orgId: string,
  entry: Omit<QueryHistoryEntry, 'id' | 'sequence' | 'createdAt'>,
): Promise<void> {
  await startQueryRecord(orgId, entry.connectionId).write(entry);
}

/**
 * Starts recording one execution: the sequence number is taken now, concurrently with whatever the
 * caller does next; `write` stores the entry under it once the outcome is known. Every started record
 * must be written (a number without an entry would count in the total). Failures are logged, never thrown.
 */
export function startQueryRecord(orgId: string, connectionId: string) {
  const pk = connPk(orgId, connectionId);
  const seq = db.increment(pk, COUNTER, 'seq');
  seq.catch(() => {}); // reported by write
  return {
    async write(entry: Omit<QueryHistoryEntry, 'id' | 'sequence' | 'createdAt'>): Promise<void> {
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

export async function listQueryHistory(ctx: AuthContext, connectionId: string, q: PageQuery) {
  await loadConnection(ctx, connectionId);
  const pk = connPk(ctx.orgId, connectionId);
  const counter = await db.get<{ seq?: number }>(pk, COUNTER);
  const total = Number(counter?.seq ?? 0);
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
