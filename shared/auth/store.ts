import { config } from '../platform/config';
import { db, type Item, strip } from '../platform/db/store';
import { newId, nowIso } from '../platform/ids';
import type { Role } from './context';
import { generateKey, hashKey, keyPrefix } from './key-material';

/**
 * Items:
 *  ORG#o / ORG                 organization
 *  ORG#o / USER#u              user (member or admin)
 *  ORG#o / USEREMAIL#email     uniqueness guard for emails
 *  ORG#o / KEY#k               key metadata (listing)
 *  KEYHASH#sha256 / KEY        lookup record used by authentication (source of truth for revocation),
 *                              carrying a copy of what authentication needs from the user (userAuth)
 *  ORG#o / BALANCE#u           balance in cents (ADD under a condition)
 *
 * The user item is the source of truth for role, assigned connections and deletion. Every change to
 * them adds 1 to the user's `authVersion` in the same write, then copies them (with that version) onto
 * each of the user's key lookup items before the change is answered (syncUserKeys); a copy is written
 * only over an older version, so concurrent changes end with the newest everywhere. A new key gets its
 * copy after both of its items exist. Authentication then needs one read: the key lookup item; a lookup
 * item without a copy (older data, or a key not yet synced) falls back to reading the user item.
 */
export interface Org {
  id: string;
  name: string;
  createdAt: string;
}
export interface User {
  id: string;
  orgId: string;
  email: string;
  name: string;
  role: Role;
  connectionIds: string[];
  createdAt: string;
  updatedAt: string;
  deletedAt?: string;
}
export interface KeyRecord {
  id: string;
  orgId: string;
  userId: string;
  name: string;
  keyPrefix: string;
  keyHash: string;
  scopes: string[];
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  revokedAt?: string | null;
}

/** The copy of the user's authentication facts on a key lookup item. */
export interface UserAuth {
  role: Role;
  connectionIds: string[];
  deleted: boolean;
}

/** A key lookup record as authentication reads it. */
export interface KeyLookup extends KeyRecord {
  userAuth?: UserAuth;
  userVersion?: number;
}

const orgPk = (orgId: string) => `ORG#${orgId}`;
const hashPk = (keyHash: string) => `KEYHASH#${keyHash}`;

/**
 * The key lookup records this instance read for authentication, reused for LOUPE_KEY_CACHE_MS (at most
 * 10 s) after the read. What the cache changes, and what it does not:
 *  - every use still checks revokedAt, expiresAt (against the clock), the user's deletion, role and
 *    connections, on the record as read;
 *  - a revocation or member change made on this instance forgets the records it touches once its writes
 *    are done, before it answers: it takes effect here at once; another instance (another Lambda
 *    environment) sees it when its copy is older than the bound;
 *  - a read that started before such a change never caches what it read (`generation`), so a
 *    revocation cannot be undone by a lookup that was already in flight;
 *  - unknown keys are not cached (a key just issued elsewhere works at once), and concurrent lookups of
 *    one key share one read.
 */
interface CachedKey {
  record: KeyLookup;
  readAt: number;
}
const MAX_CACHED_KEYS = 10_000;
const cachedKeys = new Map<string, CachedKey>();
const loadingKeys = new Map<string, Promise<KeyLookup | undefined>>();
let generation = 0;

function forgetCached(match: (r: KeyLookup) => boolean): void {
  generation += 1;
  loadingKeys.clear();
  for (const [hash, c] of cachedKeys) if (match(c.record)) cachedKeys.delete(hash);
}

async function readKey(hash: string): Promise<KeyLookup | undefined> {
  const item = await db.get(hashPk(hash), 'KEY');
  return item ? (strip(item) as unknown as KeyLookup) : undefined;
}

/** Copies the user's authentication facts (at `version`) onto one key lookup item, unless it holds newer. */
async function copyUserAuth(keyHash: string, auth: UserAuth, version: number): Promise<void> {
  await db.patch(
    hashPk(keyHash),
    'KEY',
    { userAuth: auth, userVersion: version },
    { condition: 'attribute_not_exists(userVersion) OR userVersion < :v', values: { ':v': version } },
  );
}

const authOf = (item: Record<string, unknown>): UserAuth => ({
  role: item.role as Role,
  connectionIds: (item.connectionIds as string[] | undefined) ?? [],
  deleted: !!item.deletedAt,
});

export const authStore = {
  async createOrg(name: string): Promise<Org> {
    const org = { id: newId(), name, createdAt: nowIso() };
    await db.put({ pk: orgPk(org.id), sk: 'ORG', type: 'org', ...org }, { ifAbsent: true });
    return org;
  },

  async getOrg(orgId: string): Promise<Org | undefined> {
    const item = await db.get(orgPk(orgId), 'ORG');
    return item ? (strip(item) as unknown as Org) : undefined;
  },

  async createUser(
    orgId: string,
    input: { email: string; name: string; role: Role; connectionIds?: string[] },
    startingBalanceCents: number,
  ): Promise<User | undefined> {
    const now = nowIso();
    const user: User = {
      id: newId(),
      orgId,
      email: input.email.toLowerCase(),
      name: input.name,
      role: input.role,
      connectionIds: input.connectionIds ?? [],
      createdAt: now,
      updatedAt: now,
    };
    const claimed = await db.put(
      { pk: orgPk(orgId), sk: `USEREMAIL#${user.email}`, userId: user.id },
      { ifAbsent: true },
    );
    if (!claimed) return undefined;
    await db.put({
      pk: orgPk(orgId),
      sk: `USER#${user.id}`,
      gsi1pk: `USER#${user.id}`,
      gsi1sk: 'USER',
      type: 'user',
      ...user,
    });
    await db.put(
      { pk: orgPk(orgId), sk: `BALANCE#${user.id}`, userId: user.id, remaining: startingBalanceCents },
      { ifAbsent: true },
    );
    return user;
  },

  async getUser(orgId: string, userId: string): Promise<User | undefined> {
    const item = await db.get(orgPk(orgId), `USER#${userId}`);
    if (!item || item.deletedAt) return undefined;
    return strip(item) as unknown as User;
  },

  /** Finds a user by id alone (operator tool), through the GSI. */
  async findUserAnywhere(userId: string): Promise<User | undefined> {
    const [item] = await db.query({ pk: `USER#${userId}`, index: 'gsi1', limit: 1 });
    if (!item || item.deletedAt) return undefined;
    return strip(item) as unknown as User;
  },

  async listUsers(orgId: string): Promise<User[]> {
    const items = await db.query({ pk: orgPk(orgId), prefix: 'USER#' });
    return items.filter((i) => !i.deletedAt).map((i) => strip(i) as unknown as User);
  },

  async updateUser(
    orgId: string,
    userId: string,
    changes: Partial<Pick<User, 'name' | 'role' | 'connectionIds'>>,
  ): Promise<User | undefined> {
    const item = await bumpAuth(orgId, userId, { ...changes, updatedAt: nowIso() });
    if (!item) return undefined;
    await authStore.syncUserKeys(orgId, userId, item);
    return strip(item) as unknown as User;
  },

  /**
   * Copies the user item's authentication facts onto each of the user's live key lookup items (idempotent;
   * an older version never overwrites a newer one). `item` is the user item as just written, if known.
   */
  async syncUserKeys(orgId: string, userId: string, item?: Item): Promise<void> {
    const user = item ?? (await db.get(orgPk(orgId), `USER#${userId}`));
    if (!user) return;
    const version = Number(user.authVersion ?? 0);
    const keys = await authStore.listKeys(orgId, userId);
    await Promise.all(keys.map((k) => copyUserAuth(k.keyHash, authOf(user), version)));
    forgetCached((r) => r.orgId === orgId && r.userId === userId);
  },

  /** Soft-deletes the user (its id stays resolvable for history) and frees the email. */
  async deleteUser(orgId: string, user: User): Promise<boolean> {
    const done = await bumpAuth(orgId, user.id, { deletedAt: nowIso() });
    if (!done) return false;
    // A key issued while the user was being removed gets the deletion too.
    await authStore.syncUserKeys(orgId, user.id, done);
    await db.delete(orgPk(orgId), `USEREMAIL#${user.email}`);
    return true;
  },

  /** Issues a key; the full key is returned only here. A given `key` (bootstrap) is used verbatim. */
  async createKey(
    orgId: string,
    userId: string,
    input: { name: string; scopes: string[]; expiresAt?: string | null },
    givenKey?: string,
  ): Promise<{ record: KeyRecord; key: string }> {
    const key = givenKey ?? generateKey();
    const record: KeyRecord = {
      id: newId(),
      orgId,
      userId,
      name: input.name,
      keyPrefix: keyPrefix(key),
      keyHash: hashKey(key),
      scopes: input.scopes,
      createdAt: nowIso(),
      expiresAt: input.expiresAt ?? null,
      lastUsedAt: null,
    };
    const ok = await db.put({ pk: hashPk(record.keyHash), sk: 'KEY', ...record }, { ifAbsent: true });
    if (!ok) throw new Error('Key collision');
    await db.put({ pk: orgPk(orgId), sk: `KEY#${record.id}`, type: 'key', ...record });
    // Read after both items exist: a concurrent member change either lists this key or is seen here.
    const user = await db.get(orgPk(orgId), `USER#${userId}`);
    if (user) await copyUserAuth(record.keyHash, authOf(user), Number(user.authVersion ?? 0));
    return { record, key };
  },

  /** The key lookup record as the store has it now. */
  findKeyByHash: readKey,

  /**
   * The key lookup record for authentication: this instance's copy when it was read less than
   * LOUPE_KEY_CACHE_MS ago, otherwise read now (see CachedKey above). The record is shared by the
   * requests that use the key: treat it as read-only (lastUsedAt excepted, see touchKey).
   */
  async keyForAuthentication(hash: string, now = Date.now()): Promise<KeyLookup | undefined> {
    const ttl = config().LOUPE_KEY_CACHE_MS;
    const hit = cachedKeys.get(hash);
    if (hit && now - hit.readAt < ttl && now >= hit.readAt) return hit.record;
    if (ttl === 0) return readKey(hash);
    const loading = loadingKeys.get(hash);
    if (loading) return loading;
    const started = generation;
    const readAt = Date.now();
    const read = readKey(hash).then((record) => {
      if (loadingKeys.get(hash) === read) loadingKeys.delete(hash);
      if (record && generation === started) {
        cachedKeys.delete(hash);
        if (cachedKeys.size >= MAX_CACHED_KEYS) {
          for (const [h, c] of cachedKeys) if (readAt - c.readAt >= ttl) cachedKeys.delete(h);
          if (cachedKeys.size >= MAX_CACHED_KEYS) cachedKeys.delete(cachedKeys.keys().next().value as string);
        }
        cachedKeys.set(hash, { record, readAt });
      }
      return record;
    });
    loadingKeys.set(hash, read);
    read.catch(() => {
      if (loadingKeys.get(hash) === read) loadingKeys.delete(hash);
    });
    return read;
  },

  /**
   * Forgets this instance's copies of the given user's key records (every user's when omitted): what a
   * revocation or member change does once written; tests that write the store directly use it as the
   * bound's passing.
   */
  forgetCachedKeys(userId?: string): void {
    forgetCached((r) => userId === undefined || r.userId === userId);
  },

  async getKey(orgId: string, keyId: string): Promise<KeyRecord | undefined> {
    const item = await db.get(orgPk(orgId), `KEY#${keyId}`);
    if (!item || item.revokedAt) return undefined;
    return strip(item) as unknown as KeyRecord;
  },

  async listKeys(orgId: string, userId?: string): Promise<KeyRecord[]> {
    const items = await db.query({ pk: orgPk(orgId), prefix: 'KEY#' });
    return items
      .filter((i) => !i.revokedAt && (!userId || i.userId === userId))
      .map((i) => strip(i) as unknown as KeyRecord);
  },

  /** Revokes: the lookup record first (authentication stops at once), then the listing record. */
  async revokeKey(record: KeyRecord): Promise<void> {
    const at = nowIso();
    await db.patch(hashPk(record.keyHash), 'KEY', { revokedAt: at });
    forgetCached((r) => r.keyHash === record.keyHash);
    await db.patch(orgPk(record.orgId), `KEY#${record.id}`, { revokedAt: at });
  },

  /** Records use at most once a minute per key (a conditional write that usually does nothing). */
  async touchKey(record: KeyRecord, now: Date): Promise<void> {
    const cutoff = new Date(now.getTime() - 60_000).toISOString();
    const at = now.toISOString();
    const cond = 'attribute_not_exists(lastUsedAt) OR lastUsedAt = :null OR lastUsedAt < :cutoff';
    const values = { ':cutoff': cutoff, ':null': null };
    const updated = await db.patch(
      hashPk(record.keyHash),
      'KEY',
      { lastUsedAt: at },
      {
        condition: cond,
        values,
      },
    );
    if (updated) await db.patch(orgPk(record.orgId), `KEY#${record.id}`, { lastUsedAt: at });
  },
};

/**
 * Applies `changes` to a live user item and adds 1 to its authVersion in the same conditional write.
 * Returns the new item, or undefined when the user is missing or deleted.
 */
async function bumpAuth(
  orgId: string,
  userId: string,
  changes: Record<string, unknown>,
): Promise<Item | undefined> {
  const names: Record<string, string> = { '#v': 'authVersion' };
  const values: Record<string, unknown> = { ':one': 1 };
  const sets = Object.entries(changes)
    .filter(([, v]) => v !== undefined)
    .map(([k, v], i) => {
      names[`#c${i}`] = k;
      values[`:c${i}`] = v;
      return `#c${i} = :c${i}`;
    });
  return db.update({
    pk: orgPk(orgId),
    sk: `USER#${userId}`,
    update: `ADD #v :one${sets.length ? ` SET ${sets.join(', ')}` : ''}`,
    condition: 'attribute_exists(pk) AND attribute_not_exists(deletedAt)',
    names,
    values,
  });
}
