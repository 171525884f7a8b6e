import { config } from '../platform/config';
import { documentClient } from '../platform/db/client';
import { db, isConditionFailure } from '../platform/db/store';

/** Names compare without case and surrounding space: "Revenue" and " revenue " are the same name. */
export const nameKey = (name: string) => name.trim().normalize('NFC').toLowerCase();

/**
 * How long a fresh guard counts as held even though its owner item does not (yet) carry the name: a
 * create or rename writes the guard first and the owner item right after, well inside a request's
 * lifetime (Lambda stops at 30 s).
 */
const GRACE_MS = 120_000;

interface GuardItem {
  ownerId: string;
  claimedAt: number;
}

/**
 * A unique-name guard: one item `ORG#o / <kind>NAME#<normalized name>` per taken name, holding its
 * owner's id. Taking a name is one conditional put, so two concurrent creates or renames to the same
 * name cannot both succeed (dynalite has no transactions). The guard is written before the owner
 * item, and released after it; a guard left behind by an interrupted write (its owner gone or
 * carrying another name, and older than the grace period) is reclaimed by a conditional overwrite.
 */
export function nameGuard(
  kind: string,
  ownerName: (orgId: string, ownerId: string) => Promise<string | undefined>,
) {
  const pk = (orgId: string) => `ORG#${orgId}`;
  const sk = (name: string) => `${kind}NAME#${nameKey(name)}`;

  return {
    /** Takes `name` for `ownerId`; false when another owner holds it. */
    async claim(orgId: string, name: string, ownerId: string): Promise<boolean> {
      const item = { pk: pk(orgId), sk: sk(name), ownerId, name, claimedAt: Date.now() };
      for (let attempt = 0; attempt < 3; attempt++) {
        if (await db.put(item, { ifAbsent: true })) return true;
        const existing = await db.get<GuardItem>(pk(orgId), sk(name));
        if (!existing) continue;
        if (existing.ownerId === ownerId) return true;
        const current = await ownerName(orgId, existing.ownerId);
        const held =
          (current !== undefined && nameKey(current) === nameKey(name)) ||
          Date.now() - Number(existing.claimedAt ?? 0) < GRACE_MS;
        if (held) return false;
        if (await db.put(item, { condition: 'ownerId = :stale', values: { ':stale': existing.ownerId } }))
          return true;
      }
      return false;
    },

    /** Releases `name` if `ownerId` still holds it (safe to repeat). */
    async release(orgId: string, name: string, ownerId: string): Promise<void> {
      try {
        await documentClient().send('DeleteItem', {
          TableName: config().LOUPE_TABLE_NAME,
          Key: { pk: pk(orgId), sk: sk(name) },
          ConditionExpression: 'ownerId = :o',
          ExpressionAttributeValues: { ':o': ownerId },
        });
      } catch (e) {
        if (!isConditionFailure(e)) throw e;
      }
    },
  };
}
