import type { DbType } from '../databases/drivers/types';
import { db, strip } from '../platform/db/store';

export type PendingStatus = 'PENDING' | 'APPROVED' | 'REJECTED' | 'EXPIRED';
export type RuleScope = 'all' | 'write';

export interface ApprovalRuleRecord {
  id: string;
  orgId: string;
  connectionId: string | null;
  scope: RuleScope;
  approvers: string[];
  isActive: boolean;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

export interface PendingQueryRecord {
  id: string;
  orgId: string;
  connectionId: string;
  connectionName: string | null;
  connectionType: DbType | null;
  apiKeyId: string | null;
  query: string;
  context: string | null;
  /** What the classifier found at submission. */
  kind: 'read' | 'write';
  statementType: string;
  status: PendingStatus;
  submittedBy: string;
  reviewedBy: string | null;
  reviewNote: string | null;
  reviewedAt: string | null;
  /** Set with APPROVED: RUNNING until the statement finished, then SUCCEEDED or FAILED. */
  execution: 'RUNNING' | 'SUCCEEDED' | 'FAILED' | null;
  /** The stored result (JSON text, bounded), present only after a successful approval. */
  resultJson: string | null;
  error: { code: string; message: string; details?: unknown } | null;
  expiresAt: string;
  expiredAt: string | null;
  createdAt: string;
  updatedAt: string;
}

/**
 * Keys (every tenant key starts with the organization):
 * - rule `ORG#o / APPRULE#<id>`; the rules of an organization are one Query.
 * - pending query `ORG#o / PQUERY#<id>`; while PENDING it carries gsi1 `ORG#o#QPENDING /
 *   <createdAt>#<id>` (a sparse index entry removed by the same conditional write that leaves PENDING),
 *   so the organization's pending list, oldest first, is one Query on gsi1.
 *   Every query of the organization, any status, is one Query on the base table (`begins_with(sk,
 *   'PQUERY#')`, the stored result left out): the history list reads them all once per request.
 * - expiry marker `ORG#o / PQEXP#<id>` with gsi1 `QEXPIRY / <expiresAt>#<orgId>#<id>`: the sweep's one
 *   Query across organizations (like the health-check index); removed once the sweep has handled it.
 */
const pk = (orgId: string) => `ORG#${orgId}`;
const ruleSk = (id: string) => `APPRULE#${id}`;
const querySk = (id: string) => `PQUERY#${id}`;
const markerSk = (id: string) => `PQEXP#${id}`;
const pendingIndex = (orgId: string) => `ORG#${orgId}#QPENDING`;
export const EXPIRY_INDEX = 'QEXPIRY';

const toRule = (item: Record<string, unknown>) => strip(item) as unknown as ApprovalRuleRecord;
const toQuery = (item: Record<string, unknown>) => {
  const { itemType: _t, statementKind, ...rest } = strip(item) as Record<string, unknown>;
  return { ...rest, kind: statementKind } as unknown as PendingQueryRecord;
};

export const ruleStore = {
  async get(orgId: string, id: string): Promise<ApprovalRuleRecord | undefined> {
    const item = await db.get(pk(orgId), ruleSk(id));
    return item ? toRule(item) : undefined;
  },
  async list(orgId: string): Promise<ApprovalRuleRecord[]> {
    const items = await db.query({ pk: pk(orgId), prefix: 'APPRULE#' });
    return items
      .map(toRule)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  },
  async put(r: ApprovalRuleRecord): Promise<void> {
    const ok = await db.put(
      { pk: pk(r.orgId), sk: ruleSk(r.id), itemType: 'approvalRule', ...r },
      { ifAbsent: true },
    );
    if (!ok) throw new Error('Approval rule id collision');
  },
  async update(
    orgId: string,
    id: string,
    changes: Partial<
      Pick<ApprovalRuleRecord, 'connectionId' | 'scope' | 'approvers' | 'isActive' | 'updatedAt'>
    >,
  ): Promise<ApprovalRuleRecord | undefined> {
    const set = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined));
    const item = await db.patch(pk(orgId), ruleSk(id), set);
    return item ? toRule(item) : undefined;
  },
  async delete(orgId: string, id: string): Promise<boolean> {
    return db.delete(pk(orgId), ruleSk(id), { ifExists: true });
  },
};

const queryItem = (r: PendingQueryRecord) => {
  const { kind, ...rest } = r;
  return {
    pk: pk(r.orgId),
    sk: querySk(r.id),
    itemType: 'pendingQuery',
    ...rest,
    statementKind: kind,
    ...(r.status === 'PENDING' ? { gsi1pk: pendingIndex(r.orgId), gsi1sk: `${r.createdAt}#${r.id}` } : {}),
  };
};

/** The stored attributes the history list reads (all but `resultJson`). */
const LIST_FIELDS = [
  'id',
  'orgId',
  'connectionId',
  'connectionName',
  'connectionType',
  'apiKeyId',
  'query',
  'context',
  'statementKind',
  'statementType',
  'status',
  'submittedBy',
  'reviewedBy',
  'reviewNote',
  'reviewedAt',
  'execution',
  'error',
  'expiresAt',
  'expiredAt',
  'createdAt',
  'updatedAt',
] as const satisfies ReadonlyArray<keyof PendingQueryRecord | 'statementKind'>;
/** A field added to the record without adding it above fails the type check here. */
type Unlisted = Exclude<keyof PendingQueryRecord, (typeof LIST_FIELDS)[number] | 'kind' | 'resultJson'>;
const listsEveryField: [Unlisted] extends [never] ? true : Unlisted = true;
void listsEveryField;

export const pendingStore = {
  async get(orgId: string, id: string): Promise<PendingQueryRecord | undefined> {
    const item = await db.get(pk(orgId), querySk(id));
    return item ? toQuery(item) : undefined;
  },

  /** Writes a new query (and, while PENDING, its expiry marker first). */
  async create(r: PendingQueryRecord): Promise<void> {
    if (r.status === 'PENDING')
      await db.put(
        {
          pk: pk(r.orgId),
          sk: markerSk(r.id),
          itemType: 'pendingQueryExpiry',
          orgId: r.orgId,
          id: r.id,
          expiresAt: r.expiresAt,
          gsi1pk: EXPIRY_INDEX,
          gsi1sk: `${r.expiresAt}#${r.orgId}#${r.id}`,
        },
        { ifAbsent: true },
      );
    const ok = await db.put(queryItem(r), { ifAbsent: true });
    if (!ok) throw new Error('Pending query id collision');
  },

  /** The organization's PENDING queries, oldest first (one Query on the sparse index). */
  async listPending(orgId: string): Promise<PendingQueryRecord[]> {
    const items = await db.query({ pk: pendingIndex(orgId), index: 'gsi1' });
    return items.map(toQuery);
  },

  /**
   * Every query of the organization, any status, in no particular order, without the stored result
   * (`resultJson` is left out by the projection: up to 256 KiB each, and the list never shows it).
   */
  async listAll(orgId: string): Promise<PendingQueryRecord[]> {
    const items = await db.query({ pk: pk(orgId), prefix: 'PQUERY#', fields: LIST_FIELDS });
    return items.map((i) => ({ ...toQuery(i), resultJson: null }));
  },

  /**
   * The one conditional write that leaves PENDING: succeeds only while the query is PENDING and not
   * past `expiresAt` (for EXPIRED: only once past it). Removes the pending index entry in the same write.
   * Returns the new record, or undefined when the condition failed (someone else moved it first).
   */
  async leavePending(
    orgId: string,
    id: string,
    to: PendingStatus,
    now: string,
    changes: Partial<PendingQueryRecord>,
  ): Promise<PendingQueryRecord | undefined> {
    const item = await db.patch(
      pk(orgId),
      querySk(id),
      { ...changes, status: to, updatedAt: now, gsi1pk: undefined, gsi1sk: undefined },
      {
        condition: `#status = :pending AND ${to === 'EXPIRED' ? '#exp <= :now' : '#exp > :now'}`,
        names: { '#status': 'status', '#exp': 'expiresAt' },
        values: { ':pending': 'PENDING', ':now': now },
      },
    );
    return item ? toQuery(item) : undefined;
  },

  /** Records the outcome of the statement on an APPROVED query whose execution is RUNNING. */
  async finishExecution(
    orgId: string,
    id: string,
    changes: Pick<PendingQueryRecord, 'execution' | 'resultJson' | 'error' | 'updatedAt'>,
  ): Promise<PendingQueryRecord | undefined> {
    const item = await db.patch(pk(orgId), querySk(id), changes, {
      condition: '#status = :approved AND #execution = :running',
      names: { '#status': 'status', '#execution': 'execution' },
      values: { ':approved': 'APPROVED', ':running': 'RUNNING' },
    });
    return item ? toQuery(item) : undefined;
  },

  /** Expiry markers due at `now` across organizations (background use only: one GSI partition). */
  async dueMarkers(now: string, limit: number): Promise<Array<{ orgId: string; id: string }>> {
    const items = await db.query({
      pk: EXPIRY_INDEX,
      index: 'gsi1',
      between: ['0', `${now}\uffff`],
      limit,
    });
    return items
      .filter((i) => String(i.expiresAt) <= now)
      .map((i) => ({ orgId: String(i.orgId), id: String(i.id) }));
  },

  async deleteMarker(orgId: string, id: string): Promise<void> {
    await db.delete(pk(orgId), markerSk(id));
  },
};
