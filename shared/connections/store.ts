import type { DbType } from '../databases/drivers/types';
import { config } from '../platform/config';
import { documentClient } from '../platform/db/client';
import { db, type Item, strip } from '../platform/db/store';

/**
 * Connection records. Items:
 *  ORG#o / CONN#c                     the connection (secrets only as ciphertext); while it is health-checked
 *                                     it carries gsi1pk ACTIVECONN, gsi1sk ORG#o#CONN#c (read by health-fanout)
 *  ORG#o / CONNSCHEMA#c[#gen#n]       the cached schema and its chunks (schema-store.ts)
 *  ORG#o#CONN#c / ANN#…, ANNID#…      annotations (annotations.ts)
 *  ORG#o#CONN#c / QH#seq, QHSEQ       query history and its former counter (history.ts)
 */
export interface StoredDiagnosis {
  stage: string;
  fault: string;
  title: string;
  explanation: string;
  fixSteps: string[];
  retryable: boolean;
}

/** Why a connection is inactive: decides who may reactivate it (see health.ts and connections.ts). */
export type DeactivatedBy = 'health' | 'test' | 'user';

export interface ConnectionRecord {
  id: string;
  orgId: string;
  name: string;
  type: DbType;
  host: string;
  port: number | null;
  database: string;
  username: string;
  /** Ciphertext from encryption() with context {orgId, connectionId, purpose: 'connection-password'}. */
  passwordCipher: string | null;
  sslEnabled: boolean;
  readOnly: boolean;
  /** Stored functions the read-only guard lets reads call (MySQL/MariaDB, SQL Server); absent = none. */
  allowedFunctions?: string[];
  isActive: boolean;
  deactivatedBy: DeactivatedBy | null;
  lastTestedAt: string | null;
  lastError: string | null;
  lastErrorDiagnosis: StoredDiagnosis | null;
  schemaUpdatedAt: string | null;
  /** Consecutive failed health checks. */
  healthFailures: number;
  /** The last health-check slot applied (makes a repeated health-check message a no-op). */
  lastHealthSlot: string | null;
  /** Bumped on every change that affects connecting; the driver pool is keyed by id + version. */
  version: number;
  createdAt: string;
  updatedAt: string;
  /** Set while a delete cascade runs; the connection is gone for every reader. */
  deletingAt?: string;
  /**
   * The query history's counter (history.ts): changed only by its own ADD, never by the writes above
   * (they all set named attributes with UpdateItem; only create puts the whole item). Absent on
   * connections created before it, until their first execution seeds it from the former QHSEQ item.
   */
  querySeq?: number;
}

export const orgPk = (orgId: string) => `ORG#${orgId}`;
export const connSk = (id: string) => `CONN#${id}`;
/** Partition holding a connection's annotations and query history. */
export const connPk = (orgId: string, id: string) => `ORG#${orgId}#CONN#${id}`;
export const ACTIVE_INDEX = 'ACTIVECONN';

/**
 * The health-check index entry. Connections that are active, or that health checks deactivated (so that a
 * later success can recover them), are checked; connections deactivated by a user or a failed manual test
 * are not.
 */
export function healthIndex(
  orgId: string,
  id: string,
  isActive: boolean,
  deactivatedBy: DeactivatedBy | null,
) {
  const checked = isActive || deactivatedBy === 'health';
  return checked
    ? { gsi1pk: ACTIVE_INDEX, gsi1sk: `ORG#${orgId}#CONN#${id}` }
    : { gsi1pk: undefined, gsi1sk: undefined };
}

export const connectionFromItem = (item: Item): ConnectionRecord =>
  strip(item, 'kind') as unknown as ConnectionRecord;

export const connectionStore = {
  async create(rec: ConnectionRecord): Promise<void> {
    const ok = await db.put(
      {
        pk: orgPk(rec.orgId),
        sk: connSk(rec.id),
        kind: 'connection',
        querySeq: 0,
        ...rec,
        ...healthIndex(rec.orgId, rec.id, rec.isActive, rec.deactivatedBy),
      },
      { ifAbsent: true },
    );
    if (!ok) throw new Error('Connection id collision');
  },

  /** The connection, unless missing or being deleted (`includeDeleting` to resume a cascade). */
  async get(orgId: string, id: string, opts: { includeDeleting?: boolean } = {}) {
    const item = await db.get(orgPk(orgId), connSk(id));
    if (!item || (item.deletingAt && !opts.includeDeleting)) return undefined;
    return connectionFromItem(item);
  },

  async list(orgId: string): Promise<ConnectionRecord[]> {
    const items = await db.query({ pk: orgPk(orgId), prefix: 'CONN#' });
    return items
      .filter((i) => !i.deletingAt)
      .map(connectionFromItem)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  },

  /**
   * Sets attributes on a live connection. `expectVersion` makes it conditional on the connecting settings
   * not having changed meanwhile. Returns undefined when the connection is gone or the condition failed.
   */
  async patch(
    orgId: string,
    id: string,
    changes: Partial<ConnectionRecord> & Record<string, unknown>,
    opts: { expectVersion?: number; condition?: string; values?: Record<string, unknown> } = {},
  ): Promise<ConnectionRecord | undefined> {
    const conds = ['attribute_not_exists(deletingAt)'];
    const values: Record<string, unknown> = { ...(opts.values ?? {}) };
    if (opts.expectVersion !== undefined) {
      conds.push('version = :expectVersion');
      values[':expectVersion'] = opts.expectVersion;
    }
    if (opts.condition) conds.push(`(${opts.condition})`);
    const item = await db.patch(orgPk(orgId), connSk(id), changes, {
      condition: conds.join(' AND '),
      values,
    });
    return item ? connectionFromItem(item) : undefined;
  },

  /** Hides the connection from every reader before its cascade runs. */
  async markDeleting(orgId: string, id: string, at: string): Promise<void> {
    await db.patch(orgPk(orgId), connSk(id), {
      deletingAt: at,
      gsi1pk: undefined,
      gsi1sk: undefined,
    });
  },

  async remove(orgId: string, id: string): Promise<void> {
    await db.delete(orgPk(orgId), connSk(id));
  },

  /** Connections checked by health checks, across organizations (background use only: one GSI partition). */
  async listHealthChecked(): Promise<Array<{ orgId: string; id: string }>> {
    const items = await db.query({ pk: ACTIVE_INDEX, index: 'gsi1' });
    return items.map((i) => ({ orgId: String(i.orgId), id: String(i.id) }));
  },
};

/** Deletes many keys with BatchWriteItem (25 per request), retrying unprocessed ones. Idempotent. */
export async function deleteKeys(keys: Array<{ pk: string; sk: string }>): Promise<void> {
  const table = config().LOUPE_TABLE_NAME;
  for (let i = 0; i < keys.length; i += 25) {
    let requests = keys.slice(i, i + 25).map((k) => ({ DeleteRequest: { Key: { pk: k.pk, sk: k.sk } } }));
    for (let attempt = 0; requests.length > 0; attempt++) {
      const out = await documentClient().send('BatchWriteItem', { RequestItems: { [table]: requests } });
      requests = (out.UnprocessedItems?.[table] ?? []) as typeof requests;
      if (requests.length && attempt >= 8) throw new Error('Batch delete left unprocessed items');
      if (requests.length) await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
    }
  }
}

/** Every item of a partition, optionally under a sort-key prefix (keys only). */
export async function keysOf(pk: string, prefix?: string): Promise<Array<{ pk: string; sk: string }>> {
  const items = await db.query({ pk, prefix });
  return items.map((i) => ({ pk: i.pk, sk: i.sk }));
}
