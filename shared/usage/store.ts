import { config } from '../platform/config';
import { db, strip } from '../platform/db/store';
import { padSeq } from '../platform/ids';

/**
 * Items:
 *  ORG#o / BALANCE#u                 the user's balance: `remaining` (cents, fractional allowed) and
 *                                    `usageCount` (the sequence of that user's usage records)
 *  ORG#o#USAGE#u / SEQ#<seq>         one usage record per model call
 *
 * Deducting a call's cost and taking its sequence number is one conditional atomic write on the
 * balance item (`ADD remaining :-cost, usageCount :1`), so a page of records is one Query by range
 * and `total` is that counter.
 */
export type UsageFeature =
  | 'chat'
  | 'schema_summary'
  | 'auto_annotation'
  /** Embedding the tables of a schema for the optional embedding index (at introspection, after annotation). */
  | 'schema_embedding'
  /** Embedding a chat question to rank tables against that index. */
  | 'chat_embedding';

export interface UsageRecord {
  id: string;
  orgId: string;
  userId: string;
  model: string;
  promptTokens: number;
  completionTokens: number;
  costCents: number;
  feature: UsageFeature;
  createdAt: string;
}

interface BalanceItem {
  remaining?: number;
  usageCount?: number;
}

const orgPk = (orgId: string) => `ORG#${orgId}`;
const balanceSk = (userId: string) => `BALANCE#${userId}`;
const usagePk = (orgId: string, userId: string) => `ORG#${orgId}#USAGE#${userId}`;

export const usageStore = {
  async balance(
    orgId: string,
    userId: string,
  ): Promise<{ remaining: number; usageCount: number } | undefined> {
    const item = await db.get<BalanceItem>(orgPk(orgId), balanceSk(userId));
    if (!item) return undefined;
    return { remaining: Number(item.remaining ?? 0), usageCount: Number(item.usageCount ?? 0) };
  },

  /**
   * Adds `delta` cents (negative to deduct) and, with `countRecord`, takes the next usage sequence
   * number, in one conditional write. Returns undefined when the user has no balance item.
   */
  async adjust(
    orgId: string,
    userId: string,
    delta: number,
    countRecord: boolean,
  ): Promise<{ remaining: number; usageCount: number } | undefined> {
    const out = await db.update<BalanceItem>({
      pk: orgPk(orgId),
      sk: balanceSk(userId),
      update: countRecord ? 'ADD remaining :d, usageCount :one' : 'ADD remaining :d',
      condition: 'attribute_exists(pk)',
      values: countRecord ? { ':d': delta, ':one': 1 } : { ':d': delta },
    });
    if (!out) return undefined;
    return { remaining: Number(out.remaining ?? 0), usageCount: Number(out.usageCount ?? 0) };
  },

  /** Creates a missing balance item with the configured starting balance (no-op when it exists). */
  async ensureBalance(orgId: string, userId: string, startingCents = config().LOUPE_DEFAULT_BALANCE_CENTS) {
    await db.put(
      { pk: orgPk(orgId), sk: balanceSk(userId), userId, remaining: startingCents },
      { ifAbsent: true },
    );
  },

  async putRecord(seq: number, record: UsageRecord): Promise<void> {
    await db.put({
      pk: usagePk(record.orgId, record.userId),
      sk: `SEQ#${padSeq(seq)}`,
      type: 'usage',
      seq,
      ...record,
    });
  },

  /** Records with sequence numbers lo..hi, newest first. */
  async recordsBetween(orgId: string, userId: string, lo: number, hi: number): Promise<UsageRecord[]> {
    const items = await db.query({
      pk: usagePk(orgId, userId),
      between: [`SEQ#${padSeq(lo)}`, `SEQ#${padSeq(hi)}`],
      newestFirst: true,
    });
    return items.map((i) => {
      const { type: _t, seq: _s, ...rest } = strip(i) as Record<string, unknown>;
      return rest as unknown as UsageRecord;
    });
  },
};
