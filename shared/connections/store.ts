import type { DbType } from '../databases/drivers/types';
import { config } from '../platform/config';
import { documentClient } from '../platform/db/client';
import { db, type Item, strip } from '../platform/db/store';

/**
 * Connection records. Items:
 *  ORG#o / CONN#c                     the connection (secrets only as ciphertext); never in an index (each
 *                                     read updates it: querySeq), so a read writes no index entry
 *  ORG#o#CONN#c / HEALTH              its health-check entry: gsi1pk ACTIVECONN, gsi1sk ORG#o#CONN#c (read
 *                                     by health-fanout), written before the connection is first checked
 *                                     and kept until the connection is deleted (see healthEntry)
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

/** Whether health checks check a connection: when active, or deactivated by health checks (so that a
 * later success can recover it); not when a user or a failed manual test deactivated it. */
export const healthChecked = (isActive: boolean, deactivatedBy: DeactivatedBy | null) =>
  isActive || deactivatedBy === 'health';

export const HEALTH_SK = 'HEALTH';

/**
 * The connection's entry in the health-check index: a small item of its own (orgId and id), not the
 * connection item. The connection item is updated by every read (its query number); in the index with
 * the index's ALL projection, each read also rewrote its index entry (in DynamoDB, one more write per
 * read, all of them under the one partition key ACTIVECONN).
 *
 * The entry is written (idempotently) before any write that makes or keeps a connection checked, and is
 * removed only with the connection's partition (deleteConnection): an entry may outlive the connection's
 * eligibility (a user deactivated it), never the other way round. The fan-out queues a check for every
 * entry; the check itself reads the connection and answers `not-checked` (nothing pinged, nothing written)
 * for one that is not checked, or `gone`. An entry is never removed on those answers: a concurrent
 * reactivation writes its entry first and its connection after, and a removal between the two would lose it.
 */
export const healthEntry = (orgId: string, id: string) => ({
  pk: connPk(orgId, id),
  sk: HEALTH_SK,
  kind: 'connection-health',
  orgId,
  id,
  gsi1pk: ACTIVE_INDEX,
  gsi1sk: `ORG#${orgId}#CONN#${id}`,
});

/**
 * Index keys a connection item no longer carries: every write that decides health checking removes them
 * (connections stored before the health entry had them; see listHealthChecked).
 */
export const NO_INDEX_KEYS = { gsi1pk: undefined, gsi1sk: undefined };

/** Connections moved to their health entry at once by a listing (listHealthChecked). */
const MOVE_AT_ONCE = 25;

export const connectionFromItem = (item: Item): ConnectionRecord =>
  strip(item, 'kind') as unknown as ConnectionRecord;

export const connectionStore = {
  async create(rec: ConnectionRecord): Promise<void> {
    if (healthChecked(rec.isActive, rec.deactivatedBy))
      await connectionStore.ensureHealthEntry(rec.orgId, rec.id);
    const ok = await db.put(
      { pk: orgPk(rec.orgId), sk: connSk(rec.id), kind: 'connection', querySeq: 0, ...rec },
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

  /** Writes the connection's health-check entry (healthEntry); idempotent. Call before the connection's write. */
  async ensureHealthEntry(orgId: string, id: string): Promise<void> {
    await db.put(healthEntry(orgId, id));
  },

  /**
   * Connections in the health-check index, across organizations (background use only: one GSI partition):
   * their health entries, and connection items stored before health entries existed, which still carry
   * the index keys. Each of those gets its entry, then loses its keys (only while it still has them), so
   * that one fan-out after an upgrade moves them all; it is listed either way.
   */
  async listHealthChecked(): Promise<Array<{ orgId: string; id: string }>> {
    const items = await db.query({ pk: ACTIVE_INDEX, index: 'gsi1' });
    const found = new Map<string, { orgId: string; id: string }>();
    for (const i of items) found.set(`${i.orgId}/${i.id}`, { orgId: String(i.orgId), id: String(i.id) });
    // Moved MOVE_AT_ONCE at a time (each: its entry, then the keys removed), so that a first fan-out over
    // many stored connections stays well inside the worker's 60 s; an interrupted move resumes next time.
    const stored = items.filter((i) => i.kind === 'connection');
    for (let k = 0; k < stored.length; k += MOVE_AT_ONCE)
      await Promise.all(
        stored.slice(k, k + MOVE_AT_ONCE).map(async (i) => {
          await connectionStore.ensureHealthEntry(String(i.orgId), String(i.id));
          await db.update({
            pk: i.pk,
            sk: i.sk,
            update: 'REMOVE gsi1pk, gsi1sk',
            condition: 'gsi1pk = :index',
            values: { ':index': ACTIVE_INDEX },
          });
        }),
      );
    return [...found.values()];
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
